import { isIP } from 'node:net';
import type { AssignedPorts } from '../../allocate/port-set.js';
import { schemeUrl } from './server-keys.js';

/* Where a started replica is reached: its address, HOST:PORT and URL, as placeholders, templates and endpoints.json give them. */

export interface Endpoint {
  host: string;
  /** The primary port. */
  port: number;
  /** Every named port of the replica (its `ports:` set), when known. */
  ports?: readonly AssignedPorts[];
  /** The node it runs on and that node's index among its service's nodes (templates' replica entries). */
  node?: string;
  nodeRank?: number;
  /** Its service's `scheme:` (default http; null: none, no URL). */
  scheme?: string | null;
}

/** The address to reach a host at: a wildcard bind is reached on loopback of its family. */
export function reachableHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '::1';
  return host;
}

/** HOST:PORT of the reachable host, with IPv6 literals bracketed. */
export function endpointHostPort(e: Endpoint): string {
  const h = reachableHost(e.host);
  return `${isIP(h) === 6 ? `[${h}]` : h}:${e.port}`;
}

/** SCHEME://HOST:PORT (http by default), IPv6 literals bracketed; null for `scheme: none`. */
export function endpointUrl(e: Endpoint): string | null {
  return schemeUrl(e.scheme, endpointHostPort(e));
}
