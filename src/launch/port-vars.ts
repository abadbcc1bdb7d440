import { PORT_FIELDS, portValue, type AssignedPorts, type PortField } from '../allocate/port-set.js';

/*
 * `{ports.NAME}` and `{ports.NAME.first|last|range|count}` in a launch's command and ready
 * probe, pure: the values of an assigned set, and the check (before anything is leased) that
 * every such placeholder names a port of the set and a field that exists.
 */

const PLACEHOLDER_RE = /\{ports\.([^{}]*)\}/g;

/** Placeholder → value, for spawn-plan's substitute(): "ports.http" → "20000", "ports.dist.last" → "20032". */
export function portVars(set: readonly AssignedPorts[]): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const a of set) {
    vars[`ports.${a.name}`] = portValue(a);
    for (const f of PORT_FIELDS) vars[`ports.${a.name}.${f}`] = portValue(a, f);
  }
  return vars;
}

/** The first `{ports.…}` in `text` that names no port of `names` or no field, as a message; undefined when all are fine. */
export function portPlaceholderProblem(text: string, names: readonly string[]): string | undefined {
  for (const m of text.matchAll(PLACEHOLDER_RE)) {
    const [name = '', field, ...rest] = m[1]!.split('.');
    if (!names.includes(name)) {
      return `${m[0]} names no port of the set (its ports: ${names.join(', ')}${names.length === 1 && names[0] === 'port' ? '; declare more with ' +
        '--ports' : ''})`;
    }
    if (rest.length > 0 || (field !== undefined && !PORT_FIELDS.includes(field as PortField))) {
      return `${m[0]}: after the port's name only .${PORT_FIELDS.join(', .')} may follow`;
    }
  }
  return undefined;
}

/** `{ports.…}` stood in by a port number, so a URL can be checked before ports are known. */
export function standInPorts(text: string): string {
  return text.replace(PLACEHOLDER_RE, '1');
}
