import { BerthError, EXIT } from '../../errors.js';
import type { SharedPorts } from '../record/result.js';
import type { NamedReservation } from '../../allocate/reserve-named.js';
import { portsStillHeld, survivorsOf, survivorText } from './generation-gone.js';
import { endAbandoned, firstLine, type Replica, type Service } from './replica.js';
import { orphanLines } from './orphans.js';
import { releaseOrWarn } from './release.js';
import { reserveNextShared } from './reserve-ports.js';
import { reholdSingles } from './restart.js';
import type { StackRun } from './stack-run.js';

/*
 * A job of many ranks with `restart: on-failure` restarts as a group, as torchelastic does:
 * a rank that fails ends its generation. Then: the next generation's shared ports are leased
 * while the old ones still are (so the two never are the same port); every rank is stopped;
 * the old generation is proven gone (generation-gone.ts; a process that outlives SIGKILL stops
 * the stack with 70); the old shared ports go back and every rank starts again. A stop of the
 * stack meanwhile ends it there, giving back what was leased for the next generation.
 */

/** Whether the job may have another generation (1 + restart_limit of them at most). */
export function generationLeft(st: StackRun, svc: Service): boolean {
  // An agent's stack without a gate is one generation: berth up on the first node starts the next.
  if (st.o.generation !== undefined && !st.o.generationGate) return false;
  return !st.ending && !svc.generationEnding && svc.generation < svc.spec.restart.limit;
}

/** Ends the generation of the job `svc` because `cause` failed (`why`); then the next one, or the stack's end. */
export function endGeneration(st: StackRun, svc: Service, cause: Replica | undefined, why: string): void {
  svc.generationEnding = true;
  const g = svc.generation;
  const limit = svc.spec.restart.limit;
  const detail = `generation ${g} ends: ${cause ? `${cause.label} ` : ''}${why}`;
  st.console.message(`berth: ${svc.spec.name}: ${detail}; stopping every rank, then generation ${g + 1} of ${limit + 1}`);
  const exits = svc.replicas.map((rep) => {
    rep.generationStop = true;
    const runner = rep.runner;
    if (!runner) return Promise.resolve();
    if (rep !== cause && !rep.attemptFailed && (rep.state === 'starting' || rep.state === 'owned' || rep.state === 'ready' || rep.state === 'pending')) {
      st.update(rep, { state: 'stopping', detail });
    }
    void runner.stop({ signal: 'SIGTERM', graceMs: svc.spec.stopGraceMs });
    return runner.exited;
  });
  void nextGeneration(st, svc, exits, detail).catch((e) => st.internalError(e));
}

/** Across nodes (RunStackOptions.generationGate): a rank elsewhere ended `generation`. */
export function endGenerationElsewhere(st: StackRun, svc: Service, generation: number, why: string): void {
  if (st.ending || svc.generation !== generation || !generationLeft(st, svc)) return;
  endGeneration(st, svc, undefined, why);
}

async function nextGeneration(st: StackRun, svc: Service, exits: Promise<unknown>[], detail: string): Promise<void> {
  const g = svc.generation;
  const old = svc.shared;
  let fresh: NamedReservation | undefined;
  let problem: { rep: Replica; exitCode: number; reason: string } | undefined;
  const fail = (reason: string, exitCode: number = EXIT.SOFTWARE, rep = svc.replicas[0]!): void => {
    problem = { rep, exitCode, reason };
  };
  try {
    // Leased here (not given by another node): the next generation's, before the old go back.
    if (old?.set) fresh = await reserveNextShared(st, svc, old.set);
  } catch (e) {
    if (!st.ending) {
      const err = e instanceof BerthError ? e : new BerthError(EXIT.SOFTWARE, String(e));
      fail(`generation ${g + 1}: no shared port: ${err.message}${err.exitCode === EXIT.UNAVAILABLE ? orphanLines(err, st.procRoot) : ''}`, err.exitCode);
    }
  }
  await Promise.all(exits);
  if (!problem && !st.ending) {
    const left = await survivorsOf(svc.replicas);
    if (left.length > 0) {
      const why = `berth cannot start generation ${g + 1} while it may still hold the job's ports and files, so the stack is stopped`;
      fail(`generation ${g} is not gone: ${left.map(survivorText).join('; ')}; ${why}`, EXIT.SOFTWARE, left[0]!.rep);
    }
  }
  if (!problem && !st.ending) {
    // Shared ports leased on another node (rank 0's) are that node's to prove free.
    const ports = [...(old?.set ? old.assigned : []), ...svc.replicas.flatMap((r) => r.set?.assigned ?? [])].flatMap((a) => a.ports);
    const held = await portsStillHeld(st.procRoot, ports);
    const holders = held.map((h) => `port ${h.row.localPort} (${h.row.state}) is held by ${h.holder}`);
    if (held.length > 0) fail(`generation ${g} is not gone: ${holders.join('; ')}, outside the ranks' process trees; the stack is stopped`);
  }
  // Across nodes: every node's old generation must be gone before any starts the next (coordinator.ts).
  let go: { shared?: SharedPorts } | undefined = {};
  if (!problem && !st.ending && st.o.generationGate)
    go = await st.o.generationGate(svc.spec.name, g, fresh && old ? { host: old.host, ports: fresh.assigned } : undefined);
  if (problem || st.ending || !go) {
    // The leases of the next generation that will not come (the old ones are the teardown's).
    await giveBack(st, fresh, (r) => old!.set!.reservations.includes(r));
    if (problem) st.failStack(problem.rep, problem.exitCode, problem.reason);
    for (const rep of svc.replicas) endAbandoned(rep);
    return;
  }
  if (old?.set && fresh) {
    // Every process of the old generation is gone: its shared ports go back, kept ones are held again.
    await giveBack(st, old.set, (r) => fresh!.reservations.includes(r));
    for (const r of fresh.reservations) if (old.set.reservations.includes(r) && !r.block) await r.rehold();
    svc.shared = { host: old.host, assigned: fresh.assigned, set: fresh };
    st.run.shared[svc.spec.name] = { host: old.host, ports: fresh.assigned };
  }
  if (go.shared) {
    // Leased on rank 0's node for the next generation.
    svc.shared = { host: go.shared.host, assigned: go.shared.ports };
    st.run.shared[svc.spec.name] = go.shared;
  }
  // A rank's own singles were handed over: held again for its next start, as a restart's are.
  for (const rep of svc.replicas) {
    const taken = await reholdSingles(rep);
    if (taken) st.failStack(rep, taken.exitCode, `generation ${svc.generation + 1}: cannot come back on its ports: ${firstLine(taken.message)}`);
  }
  if (st.ending) {
    for (const rep of svc.replicas) endAbandoned(rep);
    return;
  }
  svc.generation = g + 1;
  st.run.generation = svc.generation;
  svc.generationEnding = false;
  for (const rep of svc.replicas) {
    rep.attempt++;
    rep.final = false;
    rep.attemptFailed = false;
    rep.generationStop = false;
    rep.stopAsked = false;
    rep.sharedReleased = false;
    rep.runner = undefined;
    st.update(rep, { state: 'pending', detail: `generation ${svc.generation} of ${svc.spec.restart.limit + 1} (${detail})` });
  }
  st.next({ kind: 'generation-due', svc });
}

/** Gives back the reservations of `set` that `keep` does not claim, with a warning when that fails. */
async function giveBack(st: StackRun, set: NamedReservation | undefined, keep: (r: NamedReservation['reservations'][number]) => boolean): Promise<void> {
  for (const r of set?.reservations ?? []) if (!keep(r)) await releaseOrWarn(st, () => r.release(), `port ${r.ports[0]}`);
}
