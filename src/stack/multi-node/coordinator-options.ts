import type { RunStackOptions } from '../run/orchestrate.js';

/* What berth up of a multi-node stack is given (coordinator.ts). */

export interface MultiNodeOptions extends RunStackOptions {
  /** The stack file as the agents open it (absolute: they may start elsewhere). */
  stackFile: string;
  /** Runs berth (default selfArgv(): the single executable, or node + this script); `up STACK --agent DIR` is appended. */
  berth?: string[];
  /** Progress lines ("agents started on n[1-3]", "node n2 ready"). */
  onMessage?: (text: string) => void;
  /**
   * How often the node files are read while the nodes start (default 100 ms; twice that once
   * they are ready). Each look reads every node's file: on a shared filesystem that is one
   * open and read per node per look (docs/scale.md).
   */
  pollMs?: number;
}
