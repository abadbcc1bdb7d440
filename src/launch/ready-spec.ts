import { BerthError, EXIT } from '../errors.js';
import { standInPorts } from './port-vars.js';
import type { Handoff, ReadySpec } from './launch-api.js';

/**
 * `--ready` text → spec. `http://HOST:{port}/PATH` (2xx is ready), `tcp`, `cmd:COMMAND`.
 * The URL is checked with `{port}` (and `{ports.NAME}`) stood in by a number, so a typo fails before any port
 * is leased.
 */
export function parseReadySpec(text: string): ReadySpec {
  const t = text.trim();
  if (t === 'tcp') return { kind: 'tcp' };
  if (t.startsWith('cmd:')) {
    const command = t.slice(4).trim();
    if (command === '') throw new BerthError(EXIT.USAGE, '--ready cmd: needs a command, e.g. --ready "cmd:curl -sf http://127.0.0.1:{port}/health"');
    return { kind: 'cmd', command };
  }
  if (/^https?:\/\//i.test(t)) {
    if (/^https:/i.test(t))
      throw new BerthError(
        EXIT.USAGE,
        `--ready ${t}: https probes are not supported; probe the plain-http health endpoint, or use --ready "cmd:curl -sfk ${t}"`,
      );
    let url: URL;
    try {
      url = new URL(standInPorts(substitutePort(t, 1)));
    } catch {
      throw new BerthError(EXIT.USAGE, `--ready ${JSON.stringify(t)}: not a valid URL (expected http://HOST:{port}/PATH)`);
    }
    if (url.hostname === '') throw new BerthError(EXIT.USAGE, `--ready ${t}: the URL needs a host, e.g. http://127.0.0.1:{port}/health`);
    return { kind: 'http', url: t };
  }
  throw new BerthError(EXIT.USAGE, `--ready ${JSON.stringify(t)}: expected http://HOST:{port}/PATH, tcp, or cmd:COMMAND`);
}

/** Specs that make no sense with a handoff mode are refused before anything is leased. */
export function checkReadyWithHandoff(spec: ReadySpec | undefined, handoff: Handoff): void {
  if (spec?.kind === 'tcp' && handoff === 'fd') {
    throw new BerthError(
      EXIT.USAGE,
      '--ready tcp cannot work with --handoff fd: the inherited socket is already listening, so the kernel ' +
        'completes every TCP handshake into its backlog before the service calls accept() — a connect ' +
        'succeeds even if the service never starts. Use --ready http://127.0.0.1:{port}/PATH or --ready cmd:COMMAND.',
    );
  }
}

export function substitutePort(text: string, port: number): string {
  return text.split('{port}').join(String(port));
}

export function formatReadySpec(spec: ReadySpec): string {
  if (spec.kind === 'tcp') return 'tcp';
  if (spec.kind === 'cmd') return `cmd:${spec.command}`;
  return spec.url;
}
