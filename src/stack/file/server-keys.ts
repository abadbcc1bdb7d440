/*
 * Two keys for real servers: `scheme:` (what their URLs start with) and `dir_owner:` (who
 * owns their replica directories, {dir}). Pure checks of the values as written; the owner
 * is looked up on the host when the stack is loaded (load.ts) and when the directory is made
 * (run/replica-dir.ts).
 */

import type { ServiceSpec } from './spec.js';

export const DEFAULT_SCHEME = 'http';

/** `scheme:` or `dir_owner:` of a service, into its spec, or its problem reported. */
export function readServerKey(key: 'scheme' | 'dir_owner', text: string | undefined, spec: ServiceSpec, fail: (msg: string) => void): void {
  if (key === 'scheme') {
    const sc = readScheme(text);
    if ('problem' in sc) fail(`scheme ${sc.problem}`);
    else spec.scheme = sc.scheme;
    return;
  }
  const o = readDirOwner(text);
  if ('problem' in o) fail(`dir_owner ${o.problem}`);
  else spec.dirOwner = o.owner;
}

/** RFC 3986: a letter, then letters, digits, "+", "-", "."; berth takes it in lower case. */
const SCHEME_RE = /^[a-z][a-z0-9+.-]*$/;

/** A user or group: a name as useradd allows it, or a number. */
const ID_RE = /^(?:[a-z_][a-z0-9_-]*\$?|[0-9]+)$/;

/** `scheme:` → the scheme, null for "none", or the problem (after "scheme "). */
export function readScheme(text: string | undefined): { scheme: string | null } | { problem: string } {
  const t = text?.trim();
  if (t === undefined || t === '') return { problem: 'must be a URL scheme such as http, https, postgresql, redis, grpc, or none (no URL: only HOST:PORT)' };
  if (t === 'none') return { scheme: null };
  const bare = t.replace(/:(\/\/)?$/, '');
  if (bare !== t && SCHEME_RE.test(bare.toLowerCase()))
    return { problem: `${JSON.stringify(t)}: write the scheme alone, without "${t.slice(bare.length)}" (scheme: ${bare.toLowerCase()})` };
  if (!SCHEME_RE.test(t.toLowerCase()))
    return { problem: `${JSON.stringify(t)} is not a URL scheme (a letter, then letters, digits, "+", "-" or "."), e.g. http, postgresql, redis; or none` };
  return { scheme: t.toLowerCase() };
}

/** `dir_owner:` → "user" or "user:group", or the problem (after "dir_owner "). */
export function readDirOwner(text: string | undefined): { owner: string } | { problem: string } {
  const t = text?.trim();
  const [user, group, ...rest] = (t ?? '').split(':');
  if (t === undefined || t === '' || rest.length > 0 || !ID_RE.test(user!) || (group !== undefined && !ID_RE.test(group))) {
    return { problem: `must be a user, or USER:GROUP (names or numbers), e.g. postgres; found ${t === undefined ? 'nothing' : JSON.stringify(t)}` };
  }
  return { owner: t };
}

/** The URL of HOST:PORT under a scheme; none: no URL. */
export function schemeUrl(scheme: string | null | undefined, hostport: string): string | null {
  if (scheme === null) return null;
  return `${scheme ?? DEFAULT_SCHEME}://${hostport}`;
}
