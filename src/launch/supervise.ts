import { EXIT } from '../errors.js';
import { reportStolen } from './ownership-phase.js';
import type { LaunchState } from './state.js';
import { fail, finish } from './stop.js';
import { descendantsAlive } from './tree-control.js';

/** How often a daemonized tree (child exited 0, descendants live) is checked. */
const TREE_POLL_MS = 250;

/** The child exited: a daemon left behind, an early death (a failure), or the end of the service. */
export function onChildExit(s: LaunchState): void {
  s.wake();
  const { code, signal } = s.childExit!;
  if (s.failure || s.finishing) return; // the failure path is waiting for this exit
  if (s.stopReq) return void finish(s);
  if (code === 0 && descendantsAlive(s)) {
    // A daemonizing service: its parent returns 0 once the daemon is running.
    s.warn(`${s.name}: pid ${s.child!.pid} exited 0, leaving descendants; following them as the service`);
    if (s.readyInfo) void followDaemon(s);
    return;
  }
  if (!s.readyInfo) {
    // A service that died because a stranger took its port was robbed, not broken.
    if (s.handoff === 'release' && reportStolen(s)) return;
    const how = signal ? `was killed by ${signal}` : `exited with status ${code}`;
    fail(s, EXIT.SOFTWARE, `${s.name}: the service ${how} before it was ready (phase ${s.phase})`);
    return;
  }
  void finish(s);
}

/** After the child returned 0 leaving descendants: the service ends when the last of them does. */
export async function followDaemon(s: LaunchState): Promise<void> {
  while (!s.finishing && !s.failure) {
    if (!descendantsAlive(s)) return void (await finish(s));
    await new Promise((r) => setTimeout(r, TREE_POLL_MS));
  }
}
