import { BerthError, EXIT } from '../errors.js';
import { resolveLaunchOptions } from './launch-options.js';
import { checkForeignAtReady } from './foreign-check.js';
import { waitOwnership } from './ownership-phase.js';
import { learnPorts } from './learn-phase.js';
import { prepare } from './prepare.js';
import { becomeReady, probeUntilReady } from './ready.js';
import { reserve } from './reserve-phase.js';
import { spawn } from './spawn.js';
import { stopSignal } from './lifecycle.js';
import { LaunchState } from './state.js';
import { fail, finish, stop } from './stop.js';
import { signalTree, treeSurvivors } from './tree-control.js';
import type { LaunchHandle, LaunchOptions } from './launch-api.js';

/*
 * A launch, phase by phase, one file each:
 *   prepare.ts          refuse what can be refused before a port is touched; logs, deadline
 *   reserve-phase.ts    the caller's reservation, or lease and hold the port
 *   spawn.ts            hand the port over (release or fd) and start the service's tree
 *   ownership-phase.ts  wait until the tree, and nobody else, listens on the port
 *   learn-phase.ts      ports the service chose itself: learned from its listeners, leased
 *   ready.ts            probe until ready; the ready file and event; the deadline's message
 *   supervise.ts        the child's exit, a daemon it left
 *   stop.ts             stop, failure and the one cleanup every ending shares
 *   bundle.ts           the diagnostics bundle of a failure
 * state.ts holds what they share, lifecycle.ts which state the launch is in and which ending
 * wins. This file only sequences the phases, and ends the sequence after a step that left
 * the start-up stopped or failed.
 */

export { LaunchError } from './state.js';
export { exitStatus, signalNumber } from './exit-status.js';

/** Start a service on a held port, wait until it owns the port and is ready, supervise it. */
export function launch(options: LaunchOptions): LaunchHandle {
  const s = new LaunchState(resolveLaunchOptions(options));
  const handle: LaunchHandle = {
    name: s.name,
    ready: s.whenReady.promise,
    exited: s.whenExited.promise,
    get port() {
      return s.port;
    },
    get ports() {
      return s.set?.assigned;
    },
    get pid() {
      return s.child?.pid;
    },
    get phase() {
      return s.phase;
    },
    get runDir() {
      return s.runDir?.path ?? '';
    },
    signal: (sig) => signalTree(s, sig),
    survivors: () => treeSurvivors(s),
    stop: (opts) => stop(s, opts?.signal ?? 'SIGTERM', opts?.graceMs),
  };
  void run(s);
  return handle;
}

async function run(s: LaunchState): Promise<void> {
  try {
    prepare(s);
    if (!s.portless && !(s.learnPrimary && !s.o.ports && !s.o.portSet)) await reserve(s);
    // Held, or nothing to hold (portless, a learned primary): the spawn's turn.
    s.happen({ kind: 'reserved' });
    if (stopSignal(s.life) !== undefined) return void (await finish(s));
    // false: the spawn failed ('error' reports it) or a stop came first.
    if (!(await spawn(s)) || s.settled) return;
    // Nothing to own without a port: spawned is started; the probe, when given, says ready.
    if (!s.portless && !s.learnPrimary && !(await waitOwnership(s))) return;
    // Ports the service chooses: known once its tree listens on them (learn-phase.ts).
    if (s.o.learn?.length && !(await learnPorts(s))) return;
    if (s.spec && !(await probeUntilReady(s))) return;
    // Owned, or answered: an exit from here on is a ready service's (supervise.ts).
    s.happen({ kind: 'answered' });
    // Ready only if nobody else answers on its ports (69 naming the stranger).
    if (!s.portless && !(await checkForeignAtReady(s))) return;
    becomeReady(s);
  } catch (e) {
    const err = e instanceof BerthError ? e : new BerthError(EXIT.SOFTWARE, `internal error: ${(e as Error)?.stack ?? String(e)}`);
    fail(s, err.exitCode, err.message, err.details);
  }
}
