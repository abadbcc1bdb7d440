import { isIP } from 'node:net';

/**
 * Why `text` (`--bind`, a stack's `host:`) is not an IP literal, or undefined ("[::1]" too). A name would be
 * resolved differently by the binder and the prober ("localhost" is 127.0.0.1 or ::1), so none is accepted.
 */
export function listenAddressProblem(text: string): string | undefined {
  const t = text.trim();
  const bare = t.startsWith('[') && t.endsWith(']') ? t.slice(1, -1) : t;
  if (isIP(bare) !== 0) return undefined;
  if (bare === '') return 'is empty; expected an address such as 127.0.0.1 or ::1';
  if (bare.toLowerCase() === 'localhost') {
    return 'may resolve to 127.0.0.1 or ::1, and a service bound to one is not reachable on the other; write 127.0.0.1 or ::1';
  }
  if (/^[\d.]+$/.test(bare)) return 'is not an IPv4 address (four numbers 0-255, e.g. 127.0.0.1)';
  if (bare.includes(':')) return 'is not an IPv6 address (e.g. ::1)';
  return "is not an IP address; berth does not resolve names: write 127.0.0.1, ::1, 0.0.0.0, :: or the interface's address";
}
