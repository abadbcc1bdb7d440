import { closeSync, existsSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import { endpointHostPort } from '../file/endpoint.js';
import { replicaDirPath } from '../file/replica-dir-path.js';
import { shownPath } from '../file/shown-path.js';
import { cleanText } from '../../util/clean-text.js';
import type { StackResult } from './result.js';
import type { EndpointRecord, EndpointsDocument } from './endpoints.js';

/*
 * What `berth up` says when the stack is ready (where every replica is) and when it failed
 * (which replica, why, where to look, and the last lines it wrote, which usually say why).
 */

/** The last `n` non-empty lines of a file (reads at most its last `maxBytes`); [] when unreadable. */
export function tailLines(file: string, n: number, maxBytes = 16_384): string[] {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const size = fstatSync(fd).size;
    const len = Math.min(size, maxBytes);
    const buf = Buffer.alloc(len);
    let got = 0;
    while (got < len) {
      const r = readSync(fd, buf, got, len - got, size - len + got);
      if (r === 0) break;
      got += r;
    }
    const lines = buf.subarray(0, got).toString('utf8').split('\n');
    if (len < size) lines.shift(); // a cut first line
    return lines.map((l) => l.replace(/\r$/, '')).filter((l) => l.trim() !== '').slice(-n);
  } catch {
    return [];
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * The last lines of each of a replica's logs that has any, labelled: a server may log its
 * fatal error on stdout (coturn's "CONFIG ERROR"). The stream written last comes last,
 * next to the end of the report, where the eye lands.
 */
function streamTails(logs: { out: string; err: string }, n: number): { stream: 'stdout' | 'stderr'; tail: string[] }[] {
  const modified = (file: string) => {
    try {
      return statSync(file, { bigint: true }).mtimeNs;
    } catch {
      return 0n;
    }
  };
  const both = [
    { stream: 'stdout' as const, tail: tailLines(logs.out, n), at: modified(logs.out) },
    { stream: 'stderr' as const, tail: tailLines(logs.err, n), at: modified(logs.err) },
  ].filter((s) => s.tail.length > 0);
  return both.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
}

const cut = (s: string, max = 300) => (s.length > max ? s.slice(0, max - 1) + '…' : s);

/**
 * "stack ready after 1.52s (endpoints: …/endpoints.json)" and one line per replica with its
 * url, pid and other named ports. Replicas of `skip` services (the job) are left out.
 */
export function formatStackReady(doc: EndpointsDocument, opts: { readyMs?: number; skip?: ReadonlySet<string>; cwd?: string } = {}): string {
  const reps = doc.replicas.filter((r) => !opts.skip?.has(r.service));
  const after = opts.readyMs === undefined ? '' : ` after ${(opts.readyMs / 1000).toFixed(2)}s`;
  // A multi-node stack counts every node's replicas (service/replica@node) and says of how many services.
  const services = new Set(reps.map((r) => r.service)).size;
  const spread = reps.some((r) => r.node !== undefined) ? ` of ${services} service${services === 1 ? '' : 's'}` : '';
  const where = `(endpoints: ${shownPath(`${doc.runDir}/endpoints.json`, opts.cwd)})`;
  // Only a job: nothing had to be ready before it starts.
  const head =
    reps.length === 0 && (opts.skip?.size ?? 0) > 0
      ? `stack ready${after}: nothing to wait for, the job starts ${where}`
      : `stack ready${after}: ${reps.length} replica${reps.length === 1 ? '' : 's'}${spread} ${where}`;
  const names = reps.map((r) => (r.node === undefined ? `${r.service}/${r.replica}` : `${r.service}/${r.replica}@${r.node}`));
  const width = Math.max(0, ...names.map((x) => x.length));
  // A service with `scheme: none` has no URL: where it is reached, HOST:PORT.
  const urls = reps.map(
    (r) =>
      r.url ?? (r.state === 'exited' ? '(completed)' : r.port !== null && r.host !== null ? endpointHostPort({ host: r.host, port: r.port }) : '(no port)'),
  );
  const uwidth = Math.max(0, ...urls.map((x) => x.length));
  const lines = reps.map((r, i) => `  ${names[i]!.padEnd(width)}  ${urls[i]!.padEnd(uwidth)}${r.pid === null ? '' : `  pid ${r.pid}`}${otherPorts(r)}`);
  // Shared ports (a torch MASTER_PORT) are the service's, not a replica's: one line each.
  const shared = Object.entries(doc.shared ?? {}).flatMap(([svc, sp]) =>
    Object.entries(sp.ports).map(([name, v]) => `  ${svc} shared ${name} ${typeof v === 'number' ? v : `${v.first}-${v.last}`} at ${sp.host}`),
  );
  return [head, ...lines, ...shared].join('\n');
}

/** "  grpc 20001  dist 20002-20033": a replica's named ports beyond the primary (in its url). */
function otherPorts(r: EndpointRecord): string {
  const named = Object.entries(r.ports ?? {}).slice(1);
  return named.map(([name, v]) => `  ${name} ${typeof v === 'number' ? v : `${v.first}-${v.last}`}`).join('');
}

/**
 * The failure message (the CLI prefixes "berth: "): which replica failed and why, its
 * diagnostics bundle, its logs, and the last lines of its stdout and stderr.
 */
export function formatFailure(result: StackResult, opts: { cwd?: string; tail?: number } = {}): string {
  const f = result.failure;
  if (!f) return `stack failed (exit ${result.exitCode})`;
  const who = f.service === '(berth)' ? 'berth' : `${f.service}/${f.replica}`;
  const lines = [`${who} failed: ${f.reason}`];
  if (f.diagnostics) lines.push(`  diagnostics: ${shownPath(f.diagnostics, opts.cwd)}/ (diagnostics.json, stdout.log, stderr.log)`);
  // A replica that never started (no port for it) has no logs to point at.
  if (f.service !== '(berth)' && existsSync(f.logs.out)) {
    lines.push(`  logs:        ${shownPath(f.logs.out, opts.cwd)}, ${basename(f.logs.err)}`);
    // Its own directory ({dir}): what the server left there (a database's log, a pid file).
    const dir = replicaDirPath(result.runDir, f.service, f.replica);
    if (existsSync(dir)) lines.push(`  directory:   ${shownPath(dir, opts.cwd)}/`);
    for (const { stream, tail } of streamTails(f.logs, opts.tail ?? 5)) {
      lines.push(`  last lines of ${who}'s ${stream}:`);
      // The service's own bytes, bound for a terminal: controls (ESC, BEL, CSI, bidi overrides) shown escaped.
      for (const l of tail) lines.push(`    ${cleanText(cut(l))}`);
    }
  }
  lines.push(`  the stack was stopped; run directory: ${shownPath(result.runDir, opts.cwd)} (events.jsonl, endpoints.json, logs/)`);
  return lines.join('\n');
}
