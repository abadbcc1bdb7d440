import { singles } from '../allocate/port-set.js';
import { EXIT } from '../errors.js';
import { auditListeners, auditWarning, isAcknowledged, setPorts } from './audit.js';
import { foreignTurn } from './foreign-check.js';
import { reportStolen } from './ownership-phase.js';
import { exitedWhileAsking, failed, finishing } from './lifecycle.js';
import { iso, type LaunchState } from './state.js';
import type { AuditFinding } from './launch-api.js';
import { fail, finish } from './stop.js';
import { soonListenSnapshot, treeListeners, watchListeners, type ListenSnapshot } from './tree-listeners.js';
import { descendantsAlive } from './tree-control.js';

/** How often a daemonized tree (child exited 0, descendants live) is checked. */
const TREE_POLL_MS = 250;

/** The child exited: a daemon left behind, an early death (a failure), or the end of the service. */
export function onChildExit(s: LaunchState): void {
  s.wake();
  const { code, signal } = s.childExit!;
  const at = s.life.at;
  if (failed(s.life) || finishing(s.life)) return; // the failure path is waiting for this exit
  if (at === 'stopping') return void finish(s);
  // A one-shot step is done: nothing to own or probe any more.
  if (code === 0 && at !== 'ready' && s.o.oneShot) return void finish(s);
  if (code === 0 && descendantsAlive(s)) {
    // A daemonizing service: its parent returns 0 once the daemon is running.
    s.warn(`${s.name}: pid ${s.child!.pid} exited 0, leaving descendants; following them as the service`);
    if (at === 'ready') void followDaemon(s);
    return;
  }
  if (at === 'ready') return void finish(s);
  if (at === 'answered') return; // ready in a moment: becomeReady() follows what is left of it
  // During a probe attempt the answer decides (ready.ts): answered and exited at once is ready.
  if (s.happen({ kind: 'child-exited' }) && exitedWhileAsking(s.life)) return;
  // A service that died because a stranger took its port was robbed, not broken.
  if (s.handoff === 'release' && reportStolen(s)) return;
  const how = signal ? `was killed by ${signal}` : `exited with status ${code}`;
  const hint = code === 0 && s.o.exitZeroHint ? `; ${s.o.exitZeroHint}` : '';
  fail(s, EXIT.SOFTWARE, `${s.name}: the service ${how} before it was ready (phase ${s.phase})${hint}`);
}

/** The listener audit, from ready until the end: what the tree listens on outside its set, now and on watchListeners' rhythm. */
export function startAudit(s: LaunchState): void {
  // A service without a port is audited too: every listener it opens is outside its set.
  if (!s.tree || finishing(s.life)) return;
  // One read shared with every launch that becomes ready about now (a stack's replicas do).
  soonListenSnapshot(s.procRoot, (snap) => audit(s, snap));
  s.stopAudit = watchListeners(s.procRoot, (snap) => audit(s, snap));
}

function audit(s: LaunchState, snap: ListenSnapshot): void {
  if (finishing(s.life) || !s.tree) return;
  foreignTurn(s, snap.listening);
  if (failed(s.life)) return;
  // Only sockets that could be news are looked up in the tree's fds: ports outside the set
  // not reported yet, and (fd handoff) the handed ports; with none, no fd is read at all.
  const own = [...s.assigned(), ...(s.o.sharedPorts ?? [])];
  const inSet = setPorts(own);
  const handed = s.handoff === 'fd' && s.set ? new Set(singles(s.set.assigned).map((a) => a.ports[0]!)) : new Set<number>();
  const candidates = snap.listening.filter(
    (r) => (!inSet.has(r.localPort) && !s.audited.has(r.localPort)) || (handed.has(r.localPort) && !s.lostHanded.has(r.localPort)),
  );
  // UDP sockets bound outside the set: a port of the set covers its UDP side too.
  const udpCandidates = snap.udp.filter((r) => !inSet.has(r.localPort) && !s.auditedUdp.has(r.localPort));
  const all = treeListeners(s.procRoot, s.tree, [...candidates, ...udpCandidates]);
  const listeners = all.filter((l) => l.protocol !== 'udp');
  const udpListeners = all.filter((l) => l.protocol === 'udp');
  if (s.handoff === 'fd' && s.set) {
    // Each handed socket must stay the service's: one it closed serves nobody (said once).
    const heard = new Set(listeners.map((l) => l.port));
    singles(s.set.assigned).forEach((a, i) => {
      const p = a.ports[0]!;
      if (heard.has(p) || s.lostHanded.has(p)) return;
      s.lostHanded.add(p);
      s.warn(`${s.name}: the service no longer listens on "${a.name}" (port ${p}, fd ${3 + i}): it closed the socket berth handed over`);
    });
  }
  // A stack (it keeps its leases; a portless replica of one is a one-shot step or is told how
  // to become one) declares its set in its file, `berth run` with --ports.
  const stack = s.o.portSet !== undefined || s.o.keepReservation === true || s.o.oneShot === true || s.o.exitZeroHint !== undefined;
  const blockHint = stack ? 'ports: NAME: { block: N } in the stack file' : '--ports …=block:N';
  const portHint = stack ? 'ports: { NAME: 1 } in the stack file, then {ports.NAME} in its command' : undefined; // else auditListeners' --ports
  const hints = { block: blockHint, ...(stack ? { strays: 'strays: ephemeral in the stack file' } : {}) };
  for (const [found, reported] of [[listeners, s.audited], [udpListeners, s.auditedUdp]] as const)
    report(s, own, auditListeners({ name: s.name, set: own, listeners: found, ephemeral: snap.ephemeral, reported, portHint }), reported, snap, hints);
}

/** Record one protocol's findings of an audit pass, and warn about them in one message. */
function report(
  s: LaunchState,
  own: Parameters<typeof auditWarning>[1],
  found: AuditFinding[],
  audited: Set<number>,
  snap: ListenSnapshot,
  hints: Parameters<typeof auditWarning>[4],
): void {
  if (found.length === 0) return;
  for (const f of found) {
    audited.add(f.port);
    if (isAcknowledged(f, s.o.strays)) f.acknowledged = true;
    s.findings.push(f);
  }
  s.emit({ type: 'audit', listeners: found, t: iso() });
  // Once each, all of one pass in one message; the acknowledged ones only in the record.
  const warn = found.filter((f) => !f.acknowledged);
  if (warn.length === 0) return;
  const message = auditWarning(s.name, own, warn, snap.ephemeral, hints);
  if (s.o.onAuditWarning) s.o.onAuditWarning(warn, message);
  else s.warn(message);
}

/** After the child returned 0 leaving descendants: the service ends when the last of them does. */
export async function followDaemon(s: LaunchState): Promise<void> {
  while (!finishing(s.life) && !failed(s.life)) {
    if (!descendantsAlive(s)) return void (await finish(s));
    await new Promise((r) => setTimeout(r, TREE_POLL_MS));
  }
}
