/**
 * Issue 23, a busy host: socket reads filtered in the kernel (sock_diag through `ss`) against
 * /proc/net/tcp{,6}, at 500, 5,000 and 50,000 sockets; `berth port` on the busiest namespace
 * against the quietest, paired; finding a listener's owner among 2,000 extra processes.
 * Everything runs in namespaces made for it (bench/busy-host-child.ts).
 * Knobs: BERTH_BENCH_BUSY_SIZES=500,5000,50000, BERTH_BENCH_BUSY_PAIRS=25.
 */
import { join } from 'node:path';
import type { ReadTimes, Result } from './busy-host-child.js';
import type { BenchContext } from './lib/context.js';
import { table, type Section } from './lib/markdown.js';
import { runChildInNetns } from './lib/netns.js';
import { fmt, verdict } from './lib/stats.js';

const env = process.env;
const PORT_TARGET = 1.3;
const READ_TARGET = 2;

export async function benchBusyHost(ctx: BenchContext): Promise<Section> {
  const title = '14. A busy host: filtered socket reads and `berth port`';
  const scripts = await ctx.childScripts();
  const sizes = env.BERTH_BENCH_BUSY_SIZES?.split(',').map(Number) ?? (ctx.quick ? [500, 5_000, 10_000] : [500, 5_000, 50_000]);
  const pairs = Number(env.BERTH_BENCH_BUSY_PAIRS ?? (ctx.quick ? 11 : 25));
  const cfg = {
    holder: scripts['socket-holder-child'],
    self: scripts['busy-host-child'],
    berth: join(ctx.repoRoot, 'dist', 'berth.cjs'),
    stateDir: ctx.privateDir('busy-host-state'),
    sizes,
    reps: ctx.quick ? 5 : 15,
    pairs,
    processes: ctx.quick ? 500 : 2_000,
  };
  ctx.log(`busy host: namespaces of ${sizes.join(', ')} sockets, ${pairs} pairs of berth port, owners among ${cfg.processes} processes`);
  const res = await runChildInNetns<Result>(scripts['busy-host-child'], cfg, { maxFiles: true, timeoutMs: 1_800_000 });
  const first = res.sizes[0]!;
  const last = res.sizes.at(-1)!;
  const readRatio = last.reads.ports.auto / first.reads.ports.auto;
  const ms = (x: number) => fmt(x, x < 10 ? 2 : 1);
  const readRows = (label: string, r: ReadTimes) => [
    [`${label}: 100 ports (20000-20099)`, ms(r.ports.proc), ms(r.ports.ss), `${ms(r.ports.auto)} (${r.autoVia.ports})`],
    [`${label}: LISTEN only (ownership, audit)`, ms(r.listen.proc), ms(r.listen.ss), `${ms(r.listen.auto)} (${r.autoVia.listen})`],
  ];
  const rows = [
    ...res.sizes.flatMap((s) => readRows(`${s.rows.toLocaleString('en-US')} sockets`, s.reads)),
    ...readRows(`${first.rows.toLocaleString('en-US')} sockets, while another namespace holds ${last.rows.toLocaleString('en-US')}`, res.quietBesideBusy),
  ];
  const ssFlat = last.reads.ports.ss / first.reads.ports.ss;
  const p = res.port;
  const portRatio = res.portBusy.wallMs / res.portIdle.wallMs;
  const o = res.owners;
  const body = [
    table(['one read (median ms, in-process, readSockets)', '/proc/net/tcp{,6}', '`ss` (sock_diag, filtered in the kernel)', 'berth\'s choice (auto)'], rows),
    '',
    `Median of ${cfg.reps} reads each, interleaved, measured by bench/busy-host-child.ts inside each namespace (nsenter). Each namespace holds loopback connections (both ends in the table: "sockets" is TCP in use + TIME_WAIT from /proc/net/sockstat{,6}, what berth's choice looks at), on ephemeral ports; the read asks for 20000-20099, where nothing is, as an allocator's read does; the LISTEN-only read is the ownership poller's (for the port it waits on) and the audit's. ` +
      `Each size is read while no other big namespace exists (the one of ${first.rows.toLocaleString('en-US')} sockets stays; the middle ones are removed once read): the kernel keeps one connection hash for the whole host, and every read of connections, /proc or sock_diag, filtered or not, walks all of it, every namespace's sockets included. The last rows show that walk: the quiet namespace read again while the busiest exists. ` +
      `The \`ss\` read of 100 ports at ${last.rows.toLocaleString('en-US')} / at ${first.rows.toLocaleString('en-US')} sockets: ${fmt(ssFlat, 2)}×. ` +
      `berth uses \`ss\` from ${res.ssMinRows.toLocaleString('en-US')} sockets on (src/host/socket-reader.ts SS_MIN_ROWS): below it the spawn of \`ss\` costs more than the kernel's formatting of the whole table. The 'auto' column includes reading /proc/net/sockstat{,6} to choose.`,
    '',
    table(
      ['`berth port --range 20000-20999 --ttl 1m`', 'median ms, wall', 'median ms, CPU'],
      [
        [`idle host: namespace of ${first.rows.toLocaleString('en-US')} sockets, no other`, fmt(res.portIdle.wallMs, 1), fmt(res.portIdle.cpuMs, 1)],
        [`busy host: namespace of ${last.rows.toLocaleString('en-US')} sockets`, fmt(res.portBusy.wallMs, 1), fmt(res.portBusy.cpuMs, 1)],
        ['busy / idle', `${fmt(portRatio, 2)}×`, `${fmt(res.portBusy.cpuMs / res.portIdle.cpuMs, 2)}×`],
        [`paired, both namespaces present: ${first.rows.toLocaleString('en-US')} sockets`, fmt(p.aWallMs, 1), fmt(p.aCpuMs, 1)],
        [`paired, both namespaces present: ${last.rows.toLocaleString('en-US')} sockets`, fmt(p.bWallMs, 1), fmt(p.bCpuMs, 1)],
        ['paired: median of per-pair ratios', `${fmt(p.wallRatio, 2)}×`, `${fmt(p.cpuRatio, 2)}×`],
      ],
    ),
    '',
    `Idle and busy: ${p.pairs} runs each after 3 warm-up runs, one after the other (the idle series before the busy namespace was made, so they cannot be paired: this figure needs a quiet machine). Paired: ${p.pairs} pairs after 3 warm-up pairs, the two alternating (bench/lib/paired.ts), while both namespaces exist, so the kernel's walk of the host's connections costs both sides alike and the ratio is what berth's own work adds. Each run is \`nsenter -t ANCHOR -n node dist/berth.cjs port …\` into its namespace, with one shared fresh BERTH_STATE_DIR.`,
    '',
    table(
      [`who holds a listener, ${o.processes.toLocaleString('en-US')} extra processes on the host`, 'median ms'],
      [
        ['the service\'s tree only (what launch reads: its members\' /proc/PID/fd)', ms(o.treeMs)],
        ['every process\'s fds (berth\'s search, only to name a stranger)', ms(o.hostMs)],
        ['`ss -tlnHOp sport = :P` (ss walks every /proc/PID/fd itself)', ms(o.ssMs)],
      ],
    ),
    '',
    '`ss -p` names owners by reading every process\'s fd directory, as berth\'s host-wide search does, plus a process spawn: it is no cheaper, so owners are found by reading the service\'s tree (a one-process tree here) and the whole host is walked only for a stranger.',
  ].join('\n');
  return {
    title,
    body,
    summary: [
      { what: `one filtered read of 100 ports, ${last.rows.toLocaleString('en-US')} sockets / ${first.rows.toLocaleString('en-US')} sockets`, measured: `${fmt(readRatio, 2)}× (${ms(last.reads.ports.auto)} vs ${ms(first.reads.ports.auto)} ms; \`ss\` at both ${fmt(ssFlat, 2)}×)`, target: `≤ ${READ_TARGET}×`, verdict: verdict(readRatio <= READ_TARGET), goal: 'read' },
      { what: `\`berth port\`, ${last.rows.toLocaleString('en-US')} sockets / ${first.rows.toLocaleString('en-US')} (wall)`, measured: `${fmt(portRatio, 2)}× (${fmt(res.portBusy.wallMs, 1)} vs ${fmt(res.portIdle.wallMs, 1)} ms; paired with both present ${fmt(p.wallRatio, 2)}×)`, target: `≤ ${PORT_TARGET}×`, verdict: verdict(portRatio <= PORT_TARGET), goal: 'port-busy' },
    ],
  };
}
