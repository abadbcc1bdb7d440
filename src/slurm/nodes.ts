import { execFile } from 'node:child_process';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { BerthError, EXIT } from '../errors.js';
import { compressHostlist } from './hostlist.js';
import { slurmProgramMissing } from './programs.js';

/*
 * Addresses other nodes reach a node at. A node's Slurm name is normally its host name; when
 * it does not resolve (emulated nodes, clusters whose node names live only in slurm.conf),
 * the address Slurm itself uses, NodeAddr of `scontrol show node`, does.
 */

/** NodeName → NodeAddr from `scontrol show node -o` output (one node per line). */
export function parseNodeAddrs(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    let name: string | undefined;
    let addr: string | undefined;
    for (const field of line.split(/\s+/)) {
      if (field.startsWith('NodeName=')) name = field.slice(9);
      else if (field.startsWith('NodeAddr=')) addr = field.slice(9);
    }
    if (name && addr && addr !== '(null)') out.set(name, addr);
  }
  return out;
}

export interface NodeAddressOptions {
  /** Resolves a host name; undefined when it does not. Default: the system resolver. */
  resolve?: (name: string) => Promise<string | undefined>;
  /** `scontrol show node -o LIST` output. Default: runs scontrol. */
  scontrol?: (hostlist: string) => Promise<string>;
}

async function systemResolve(name: string): Promise<string | undefined> {
  try {
    return (await lookup(name)).address;
  } catch {
    return undefined;
  }
}

function runScontrol(hostlist: string): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    execFile('scontrol', ['show', 'node', '-o', hostlist], { timeout: 30_000, encoding: 'utf8' }, (err, stdout, stderr) => {
      if ((err as NodeJS.ErrnoException | null)?.code === 'ENOENT')
        reject(slurmProgramMissing('scontrol', `to look up the address of ${hostlist}, whose name does not resolve`));
      else if (err) reject(new BerthError(EXIT.UNAVAILABLE, `scontrol show node ${hostlist} failed: ${(stderr || err.message).trim()}`));
      else resolvePromise(stdout);
    });
  });
}

/**
 * For each node: its name when that resolves (URLs then carry the name), else its NodeAddr.
 * Throws BerthError(69) naming the nodes that have neither.
 */
export async function nodeAddresses(nodes: readonly string[], opts: NodeAddressOptions = {}): Promise<Map<string, string>> {
  const resolveName = opts.resolve ?? systemResolve;
  const out = new Map<string, string>();
  const unresolved: string[] = [];
  for (const n of nodes) {
    if (isIP(n) !== 0 || (await resolveName(n)) !== undefined) out.set(n, n);
    else unresolved.push(n);
  }
  if (unresolved.length === 0) return out;
  const list = compressHostlist(unresolved);
  const addrs = parseNodeAddrs(await (opts.scontrol ?? runScontrol)(list));
  const missing: string[] = [];
  for (const n of unresolved) {
    const a = addrs.get(n);
    // NodeAddr defaults to the node name: then it resolves no better.
    if (a !== undefined && (a !== n || isIP(a) !== 0)) out.set(n, a);
    else missing.push(n);
  }
  if (missing.length > 0) {
    throw new BerthError(
      EXIT.UNAVAILABLE,
      `node(s) ${compressHostlist(missing)}: the name does not resolve and 'scontrol show node' gives no other NodeAddr, so other nodes cannot reach their ` +
        `services; fix name resolution (DNS or /etc/hosts) or set NodeAddr in slurm.conf`,
      { nodes: missing },
    );
  }
  return out;
}
