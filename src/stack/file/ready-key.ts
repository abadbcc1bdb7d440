import type { ReadySpec } from '../../launch/launch-api.js';
import type { Draft } from './draft.js';
import { describeTemplateError, parseTemplate, templateParts, type TemplatePart } from './placeholders.js';
import type { YamlReader } from './ports-key.js';

/*
 * A service's `ready:` (http://HOST:{port}/PATH, tcp, or cmd:COMMAND), read once `handoff:`
 * is known: a tcp probe cannot tell an inherited socket from the service.
 */

/** The readiness spec, or undefined when it is refused (reported at `line`). */
export function readReadyKey(written: string, line: number, label: string, draft: Draft, reader: YamlReader): ReadySpec | undefined {
  const text = written.trim();
  const fail = (problem: string) => reader.fail(line, `${label}: ${problem}`);
  if (text === 'tcp') {
    if (draft.spec.handoff === 'fd') {
      const why = 'the inherited socket already listens, so a connect succeeds before the service runs';
      return fail(`"ready: tcp" cannot work with "handoff: fd": ${why}; use ready: http://127.0.0.1:{port}/PATH or cmd:COMMAND`);
    }
    return { kind: 'tcp' };
  }
  if (text.startsWith('cmd:')) {
    const command = text.slice(4).trim();
    if (command === '') return fail('"ready: cmd:" needs a command, e.g. cmd:curl -sf http://127.0.0.1:{port}/health');
    draft.templates.push({ where: 'ready', line, parts: templateParts(command, 'ready', line, label, reader) });
    return { kind: 'cmd', command };
  }
  if (/^https?:\/\//i.test(text)) {
    if (/^https:/i.test(text)) {
      return fail(`https readiness probes are not supported; probe the plain-http health endpoint, or use "ready: cmd:curl -sfk ${text}"`);
    }
    const { parts, errors } = parseTemplate(text);
    for (const e of errors) reader.add(line, `${label}: ready ${describeTemplateError(e)}`);
    draft.templates.push({ where: 'ready', line, parts });
    if (errors.length > 0) return undefined;
    const sample = sampleUrl(parts);
    const valid = URL.canParse(sample) && new URL(sample).hostname !== '';
    if (!valid) return fail(`ready ${JSON.stringify(text)} is not a valid URL; expected http://HOST:{port}/PATH`);
    return { kind: 'http', url: text };
  }
  return fail(`ready must be http://HOST:{port}/PATH, tcp, or cmd:COMMAND, found ${JSON.stringify(text)}`);
}

/** The URL with stand-ins for its placeholders: its shape is checked before any port is leased. */
function sampleUrl(parts: readonly TemplatePart[]): string {
  const standIn = (p: Exclude<TemplatePart, string>): string => {
    if (p.kind === 'own') return '1';
    if (p.kind === 'template') return '/t';
    if (p.field === 'host') return '127.0.0.1';
    if (p.field === 'name') return 'svc';
    return p.field.startsWith('url') ? 'h' : '1';
  };
  return parts.map((p) => (typeof p === 'string' ? p : standIn(p))).join('');
}
