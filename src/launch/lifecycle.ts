import type { LaunchPhase } from './launch-api.js';

/*
 * Which state a launch is in, and the one pure function that moves it on. The phases report
 * what happened (LaunchState.happen) and read the state back: which ending wins over which is
 * decided here, not by flags each phase tests in its own order.
 *
 *   preparing ─reserved→ held ─spawned→ spawned ─answered→ answered ─ready→ ready
 *        │                 │               │                  │               │
 *        └─────────────────┴── stop → stopping, fail → failing ───────────────┘
 *   any of them ─finish→ ending ─cleaned→ ending (cleaned) ─ended→ ended
 *
 * An event a state does not take returns that same state (===), and the caller sees that
 * nothing happened (LaunchState.happen returns false):
 *   - the first stop wins: a second stop keeps the first one's signal (its own signal still
 *     reaches the tree; stop.ts sends it);
 *   - the first failure wins: a second failure is not recorded;
 *   - a stop after a failure is not recorded (the failure's exit code and bundle stand);
 *     a failure after a stop is (what went wrong while stopping is the launch's verdict);
 *   - a failure of a ready service is taken only when berth itself decides it (`afterReady`:
 *     a foreign listener under strict), ready or stopping after ready alike;
 *   - once finishing began (ending, ended) neither a stop nor a failure is taken;
 *   - the steps of the start-up (waiting, asking, answered, ready) only move a launch that is
 *     still starting: after a stop or a failure they change nothing.
 */

/** What a started, not yet ready, service is waiting for (LaunchPhase of its step). */
export type Waiting = 'ownership' | 'learn' | 'probe';
/** The phase of a launch whose tree runs and is not ready: its spawn, or what it waits for. */
export type StartStep = 'spawn' | Waiting;

export type Life =
  /** Refusing what can be refused, then reserving its ports (LaunchPhase 'reserve'). */
  | { at: 'preparing' }
  /** The ports are held (or it needs none): handing them over, starting the tree. */
  | { at: 'held' }
  /**
   * The tree runs; not ready. `asking`: a probe attempt is under way ('now'), or the child
   * exited during it ('exited'): a service that answered and exited at once was ready, so
   * the answer decides, not the exit (which of the two arrives first is the loaded host's).
   */
  | { at: 'spawned'; phase: StartStep; asking?: 'now' | 'exited' }
  /**
   * Its last readiness condition is met (the probe answered; without one, it owns its ports):
   * an exit from now on is a ready service's; the foreign check takes its turns meanwhile.
   */
  | { at: 'answered'; phase: StartStep }
  | { at: 'ready' }
  /** Asked to stop (`ready`: after it was ready; a stop before ends with 128+signal). */
  | { at: 'stopping'; signal: NodeJS.Signals; ready: boolean }
  /** Failed: the bundle is being written; `phase` is where it failed, `stop` the stop it failed during. */
  | { at: 'failing'; exitCode: number; phase: LaunchPhase; ready: boolean; stop?: NodeJS.Signals }
  /** The cleanup every ending shares (stop.ts finish); `cleaned`: the tree is stopped, no more signals. */
  | ({ at: 'ending'; phase: LaunchPhase; cleaned: boolean } & Verdict)
  | ({ at: 'ended' } & Verdict);

/** How a launch ended, as its exit code and messages need it: failed (exit code), stopped (signal), ready before. */
export interface Verdict {
  ready: boolean;
  failed?: number;
  stop?: NodeJS.Signals;
}

export type LifeEvent =
  /** The ports are reserved and held, or there were none to reserve (launch.ts). */
  | { kind: 'reserved' }
  /** The tree started (spawn.ts). */
  | { kind: 'spawned' }
  /** A step of the start-up begins to wait (ownership, learn, probe). */
  | { kind: 'waiting'; phase: Waiting }
  /** A probe attempt begins, and ends (ready.ts). */
  | { kind: 'asking' }
  | { kind: 'asked' }
  /** The child exited before it was ready and nothing else explains it (supervise.ts). */
  | { kind: 'child-exited' }
  /** The last readiness condition is met: only the foreign check is left (launch.ts). */
  | { kind: 'answered' }
  | { kind: 'ready' }
  | { kind: 'stop'; signal: NodeJS.Signals }
  | { kind: 'fail'; exitCode: number; afterReady: boolean }
  /** The cleanup begins; the tree is stopped; it is over. */
  | { kind: 'finish' }
  | { kind: 'cleaned' }
  | { kind: 'ended' };

export const START: Life = { at: 'preparing' };

/** Not ready yet, and nothing ended it: what the start-up's steps may still move on. */
export function starting(l: Life): l is Extract<Life, { at: 'preparing' | 'held' | 'spawned' | 'answered' }> {
  return l.at === 'preparing' || l.at === 'held' || l.at === 'spawned' || l.at === 'answered';
}

/** Ready, failed, stopping or ending: the start-up's waits are over. */
export function settled(l: Life): boolean {
  return !starting(l);
}

/** The cleanup began (or is over): nothing more is taken. */
export function finishing(l: Life): boolean {
  return l.at === 'ending' || l.at === 'ended';
}

/** The tree has been stopped for good: no more signals. */
export function cleanedUp(l: Life): boolean {
  return (l.at === 'ending' && l.cleaned) || l.at === 'ended';
}

/** It failed (and stays failed through the cleanup). */
export function failed(l: Life): boolean {
  return l.at === 'failing' || ((l.at === 'ending' || l.at === 'ended') && l.failed !== undefined);
}

/** The signal of the stop that was recorded (the first), if any: while stopping, failing after it, or ending. */
export function stopSignal(l: Life): NodeJS.Signals | undefined {
  if (l.at === 'stopping') return l.signal;
  if (l.at === 'failing' || l.at === 'ending' || l.at === 'ended') return l.stop;
  return undefined;
}

/** It was ready before whatever ends it now. */
export function wasReady(l: Life): boolean {
  if (l.at === 'ready') return true;
  if (l.at === 'stopping' || l.at === 'failing' || l.at === 'ending' || l.at === 'ended') return l.ready;
  return false;
}

/** The child exited during a probe attempt: the attempt's answer decides (ready.ts). */
export function exitedWhileAsking(l: Life): boolean {
  return l.at === 'spawned' && l.asking === 'exited';
}

/** LaunchHandle.phase of a state: a failure or a cleanup keeps the phase it came in. */
export function phaseOf(l: Life): LaunchPhase {
  if ('phase' in l) return l.phase; // spawned, answered, failing, ending
  return l.at === 'preparing' ? 'reserve' : l.at === 'held' ? 'spawn' : l.at === 'ended' ? 'exited' : l.at; // ready, stopping
}

function verdict(l: Life): Verdict {
  const failedCode = l.at === 'failing' ? l.exitCode : l.at === 'ending' || l.at === 'ended' ? l.failed : undefined;
  const stop = stopSignal(l);
  return { ready: wasReady(l), ...(failedCode !== undefined ? { failed: failedCode } : {}), ...(stop !== undefined ? { stop } : {}) };
}

/** The state after `e`; the same state (===) when `l` does not take it (the rules above). */
export function transition(l: Life, e: LifeEvent): Life {
  switch (e.kind) {
    case 'reserved':
      return l.at === 'preparing' ? { at: 'held' } : l;
    case 'spawned':
      return l.at === 'held' ? { at: 'spawned', phase: 'spawn' } : l;
    case 'waiting':
      return l.at === 'spawned' ? { at: 'spawned', phase: e.phase } : l;
    case 'asking':
      return l.at === 'spawned' && l.asking === undefined ? { ...l, asking: 'now' } : l;
    case 'asked':
      return l.at === 'spawned' && l.asking !== undefined ? { at: 'spawned', phase: l.phase } : l;
    case 'child-exited':
      return l.at === 'spawned' && l.asking === 'now' ? { ...l, asking: 'exited' } : l;
    case 'answered':
      return l.at === 'spawned' ? { at: 'answered', phase: l.phase } : l;
    case 'ready':
      return l.at === 'answered' ? { at: 'ready' } : l;
    case 'stop':
      if (starting(l)) return { at: 'stopping', signal: e.signal, ready: false };
      if (l.at === 'ready') return { at: 'stopping', signal: e.signal, ready: true };
      return l; // a second stop, a stop after a failure, or while finishing
    case 'fail': {
      if (l.at === 'failing' || finishing(l)) return l;
      if (wasReady(l) && !e.afterReady) return l;
      const stop = stopSignal(l);
      return { at: 'failing', exitCode: e.exitCode, phase: phaseOf(l), ready: wasReady(l), ...(stop !== undefined ? { stop } : {}) };
    }
    case 'finish':
      return finishing(l) ? l : { at: 'ending', phase: phaseOf(l), cleaned: false, ...verdict(l) };
    case 'cleaned':
      return l.at === 'ending' && !l.cleaned ? { ...l, cleaned: true } : l;
    case 'ended':
      return l.at === 'ending' ? { at: 'ended', ...verdict(l) } : l;
  }
}
