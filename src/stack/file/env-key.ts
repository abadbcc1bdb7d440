import { isMap } from 'yaml';
import type { Node } from 'yaml';
import { isNullish, kindOf, scalarTextOrBool } from '../../util/yaml-values.js';
import type { Draft } from './draft.js';
import type { YamlReader } from './ports-key.js';
import { templateParts } from './placeholders.js';

/* A service's `env:`: variable names to text, each value a template. */

const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The variables into the draft's spec (and their placeholders into its templates). */
export function readEnvKey(value: Node | null | undefined, line: number, label: string, draft: Draft, reader: YamlReader): void {
  if (!value || !isMap(value)) {
    if (!isNullish(value)) reader.add(line, `${label}: env must be a mapping of variable names to text, e.g. { MODEL: tiny }, found ${kindOf(value)}`);
    return;
  }
  const envLines = new Map<string, number>();
  for (const e of value.items) {
    const nameLine = reader.lineOf(e.key as Node, line);
    const name = reader.keyName(e);
    if (name === undefined || !ENV_NAME_RE.test(name)) {
      const shown = name === undefined ? kindOf(e.key as Node) : JSON.stringify(name);
      reader.add(nameLine, `${label}: env name ${shown} is not a variable name (letters, digits and "_", not starting with a digit)`);
      continue;
    }
    const first = envLines.get(name);
    if (first !== undefined) {
      reader.add(nameLine, `${label}: env ${name} is given twice (first at line ${first}); keep one`);
      continue;
    }
    envLines.set(name, nameLine);
    const valueNode = reader.deref(e.value as Node | null, nameLine, label);
    const text = scalarTextOrBool(valueNode);
    const valueLine = reader.lineOf(valueNode, nameLine);
    if (text === undefined) {
      reader.add(valueLine, `${label}: env ${name} must be text, found ${kindOf(valueNode)}${isNullish(valueNode) ? ' (write "" for an empty value)' : ''}`);
      continue;
    }
    draft.spec.env[name] = text;
    draft.templates.push({ where: `env ${name}`, line: valueLine, parts: templateParts(text, `env ${name}`, valueLine, label, reader) });
  }
}
