/**
 * Benchmark 3: reading and parsing /proc/net/tcp{,6} with 20,000+ sockets open, against
 * `cat` of the same files and a bare readFileSync, in a namespace filled for the purpose.
 */
import type { BenchContext } from './lib/context.js';
import { table, type Section } from './lib/markdown.js';
import { runChildInNetns } from './lib/netns.js';
import { fmt, median, verdict } from './lib/stats.js';

interface Result {
  times: Record<'readHostMap' | 'readFile' | 'parse' | 'cat' | 'spawnFloor', number[]>;
  parsed: { v4: number; v6: number; skipped: number; total: number };
  connections: number;
  tableBytes: number;
}

export async function benchSocketTable(ctx: BenchContext): Promise<Section> {
  const title = '3. Socket-table read and parse';
  const { path: lib, from } = await ctx.berthLib(['readHostMap', 'parseTcpTable']);
  const scripts = await ctx.childScripts();
  const connections = ctx.quick ? 2_000 : 10_250;
  const reps = ctx.quick ? 5 : 15;
  ctx.log(`socket table: ${connections} loopback connections in a namespace, ${reps} repetitions`);
  const res = await runChildInNetns<Result>(scripts['socket-table-child'], { lib, holder: scripts['socket-holder-child'], connections, reps }, { maxFiles: true });
  const m = Object.fromEntries(Object.entries(res.times).map(([k, v]) => [k, median(v)])) as Record<keyof Result['times'], number>;
  const r = m.readHostMap / m.cat;
  const rows = [
    ['`cat /proc/net/tcp /proc/net/tcp6 > /dev/null` (spawned, wall)', fmt(m.cat, 2), '1.00×', ''],
    ['berth `readHostMap()` (read + parse tcp and tcp6, sysctls, netns)', fmt(m.readHostMap, 2), `${fmt(r, 2)}×`, `< 1.2×: ${verdict(r < 1.2)}`],
    ['`readFileSync` of both files alone (kernel generation + copy)', fmt(m.readFile, 2), `${fmt(m.readFile / m.cat, 2)}×`, ''],
    ['`parseTcpTable` alone on the read text', fmt(m.parse, 2), `${fmt(m.parse / m.cat, 2)}×`, ''],
    ['spawn floor: `cat /dev/null` (spawned, wall)', fmt(m.spawnFloor, 2), `${fmt(m.spawnFloor / m.cat, 2)}×`, ''],
  ];
  const body = [
    table(['operation', 'median ms', 'vs cat', 'target'], rows),
    '',
    `${res.connections.toLocaleString('en-US')} loopback TCP connections (half to 127.0.0.1, half to [::1]) held open in a fresh network namespace by two helper processes, ` +
      `so the table holds both ends of each: berth parsed ${res.parsed.total.toLocaleString('en-US')} rows (${res.parsed.v4.toLocaleString('en-US')} in tcp, ${res.parsed.v6.toLocaleString('en-US')} in tcp6, ${res.parsed.skipped} lines skipped), ` +
      `${(res.tableBytes / 1e6).toFixed(1)} MB of text. Median of ${reps} interleaved repetitions after 2 warm-up rounds; in-process operations timed in the measuring process, spawned ones from spawn() to exit. Library: ${from}.`,
    '',
    `The kernel's generation of the file text dominates: a bare readFileSync takes ${fmt(m.readFile, 2)} ms of the ${fmt(m.readHostMap, 2)} ms, parsing ${fmt(m.parse, 2)} ms. ` +
      `\`cat\` pays the same generation plus a process spawn (${fmt(m.spawnFloor, 2)} ms for \`cat /dev/null\`), so the ratio to \`cat\` flatters an in-process reader slightly; against the bare read, parsing adds ${fmt((m.parse / m.readFile) * 100, 0)}%.`,
  ].join('\n');
  return {
    title,
    body,
    summary: [{ what: `socket table read+parse (${res.parsed.total.toLocaleString('en-US')} rows) / \`cat\``, measured: `${fmt(r, 2)}× (${fmt(m.readHostMap, 1)} vs ${fmt(m.cat, 1)} ms)`, target: '< 1.2×', verdict: verdict(r < 1.2) }],
  };
}
