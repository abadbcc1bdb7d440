/**
 * Child of bench/socket-table.ts, run in a fresh network namespace with the open-file
 * limit raised: fills the namespace's socket table with loopback connections (held by two
 * helper processes), then times berth's read-and-parse against cat and a bare read.
 * argv[2]: JSON config. Prints one JSON line of timings.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { loadBerth } from './lib/berth-api.js';
import { nowMs } from './lib/stats.js';

interface Config {
  lib: string;
  holder: string;
  connections: number;
  reps: number;
}

const cfg = JSON.parse(process.argv[2] ?? '{}') as Config;
const berth = await loadBerth(cfg.lib);
const log = (m: string) => process.stderr.write(`[socket-table] ${m}\n`);

/** Start a holder and wait for its one-line JSON report. */
function startHolder(arg: unknown): Promise<{ child: ChildProcess; report: Record<string, number> }> {
  const child = spawn(process.execPath, [cfg.holder, JSON.stringify(arg)], { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.once('line', (line) => resolve({ child, report: JSON.parse(line) as Record<string, number> }));
    child.once('exit', (code) => reject(new Error(`socket holder ${JSON.stringify(arg)} exited ${code} before reporting`)));
  });
}

function rowsNow(): number {
  let n = 0;
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    try {
      const t = readFileSync(f, 'latin1');
      for (let i = t.indexOf('\n'); i >= 0 && i < t.length - 1; i = t.indexOf('\n', i + 1)) n++;
    } catch { /* no tcp6 */ }
  }
  return n;
}

function timeSpawn(cmd: string, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = nowMs();
    // stdout 'ignore' is /dev/null: the same as `cat … > /dev/null`.
    const c = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'inherit'] });
    c.on('error', reject);
    c.on('exit', (code) => (code === 0 ? resolve(nowMs() - t0) : reject(new Error(`${cmd} exited ${code}`))));
  });
}

const server = await startHolder({ role: 'server' });
log(`opening ${cfg.connections} loopback connections (v4${server.report.v6Port ? ' and v6' : ''})`);
const t0 = nowMs();
const clients = await startHolder({ role: 'clients', count: cfg.connections, ...server.report });
const expected = 2 * cfg.connections;
let rows = rowsNow();
// The server side may still be accepting: wait until the table shows both ends.
for (let i = 0; i < 100 && rows < expected; i++) {
  await new Promise((r) => setTimeout(r, 100));
  rows = rowsNow();
}
log(`${clients.report.opened} connections open in ${((nowMs() - t0) / 1000).toFixed(1)} s; ${rows} rows in the table`);

const times = { readHostMap: [] as number[], readFile: [] as number[], parse: [] as number[], cat: [] as number[], spawnFloor: [] as number[] };
let parsed = { v4: 0, v6: 0, skipped: 0, total: 0 };
let tableBytes = 0;
for (let rep = -2; rep < cfg.reps; rep++) {
  // Interleaved; the first two rounds warm up and are dropped.
  let t = nowMs();
  const map = berth.readHostMap();
  const tHost = nowMs() - t;
  t = nowMs();
  const v4Text = readFileSync('/proc/net/tcp', 'latin1');
  let v6Text = '';
  try {
    v6Text = readFileSync('/proc/net/tcp6', 'latin1');
  } catch { /* no IPv6 */ }
  const tRead = nowMs() - t;
  t = nowMs();
  const a = berth.parseTcpTable(v4Text, 4);
  const b = berth.parseTcpTable(v6Text, 6);
  const tParse = nowMs() - t;
  const tCat = await timeSpawn('cat', ['/proc/net/tcp', '/proc/net/tcp6']);
  const tFloor = await timeSpawn('cat', ['/dev/null']);
  if (rep >= 0) {
    times.readHostMap.push(tHost);
    times.readFile.push(tRead);
    times.parse.push(tParse);
    times.cat.push(tCat);
    times.spawnFloor.push(tFloor);
  }
  parsed = { v4: a.rows.length, v6: b.rows.length, skipped: map.skippedLines, total: map.sockets.length };
  tableBytes = v4Text.length + v6Text.length;
}
log('timings done');
server.child.stdin!.end();
clients.child.stdin!.end();
process.stdout.write(JSON.stringify({ times, parsed, connections: clients.report.opened, tableBytes }) + '\n');
process.exit(0);
