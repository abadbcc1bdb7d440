/**
 * berth's library: the same operations the CLI performs, typed.
 *
 * - Host port map: readHostMap() reads the ephemeral/reserved ranges, the unprivileged start
 *   and every TCP socket (any state, v4 and v6), with owners when asked.
 * - Layouts: loadLayout()/parseLayout() read band files; checkLayout() audits them against a
 *   host and says what to fix; defaultLayout() is the built-in one.
 * - Allocation: reserve() leases and holds ports race-free across processes and returns a
 *   Reservation that owns the listening sockets until unhold()/release(). Without a source,
 *   the default band, like `berth port`; resolvePortSource() turns the CLI's SOURCE options
 *   (port, range, layout/band/instance, source: 'resv') into a PortSource.
 * - Leases: currentLeases(), releaseLeases(), releaseJob().
 * - Services: launch() starts one service on a held port (`berth run`, the default band when
 *   no source is given): ready, exited, stop().
 * - Stacks: loadStack() reads a stack file; runStack() starts it (`berth up`) and returns a
 *   StackHandle (ready, done, stop()); the run directory holds endpoints.json and events.jsonl.
 */
export { BerthError, EXIT, type ExitCode } from './errors.js';
export * from './host/index.js';
export * from './layout/index.js';
export * from './allocate/index.js';
export * from './source/index.js';
export type { Duration } from './util/option-names.js';
export * from './stack/index.js';
export * from './launch/index.js';
/** Base of berth's private run folders ($BERTH_STATE_DIR, …); leases are never there (docs/leases.md). */
export { resolveStateDir } from './launch/launch-run-dir.js';
export * from './slurm/index.js';
export { collectReport, type CollectOptions } from './report/collect.js';
export type { PortSpaceReport } from './report/port-space-report.js';
export { renderText, renderHtml, type TextOptions } from './report/index.js';
export { parseDuration, formatDuration } from './util/duration.js';
