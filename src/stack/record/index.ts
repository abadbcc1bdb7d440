/*
 * record/: what a run leaves and shows. The run directory (stack-run-dir.ts: endpoints.json,
 * events.jsonl, logs/, diagnostics/; made by create-stack-run-dir.ts) and its records
 * (endpoints.ts), how a run ended (result.ts), the writes that failed while it ran
 * (write-failures.ts: a full disk), the console on stderr (stack-console.ts with status-view.ts
 * and the replicas' prefixed output, replica-output.ts), what `berth up` says
 * (stack-messages.ts), and the watchdog's mark on a run whose berth died (run-gone.ts).
 * Writes and shows; decides nothing about the run.
 * May import: ../file/ and src/launch, src/allocate (types), src/util, src/errors; never
 * ../run/ or ../multi-node/.
 */
export { checkRunDir, createRunDir, defaultRunDir, runStamp, type RunDirOptions } from './create-stack-run-dir.js';
export { RunDir } from './stack-run-dir.js';
export { applyUpdate, formatEvent, portsRecord } from './endpoints.js';
export type { EndpointRecord, EndpointsDocument, ReplicaUpdate, StackEvent } from './endpoints.js';
export type { SharedPorts, StackFailure, StackResult } from './result.js';
export type { WriteFailure } from './write-failures.js';
export { eraseFrame, formatAge, formatClock, formatEventLine, renderTable, StatusView, wantColor } from './status-view.js';
export type { RenderOptions, StatusRow, StatusStream, StatusViewOptions } from './status-view.js';
export type { StatusMode } from './stack-console.js';
export { formatFailure, formatStackReady, tailLines } from './stack-messages.js';
