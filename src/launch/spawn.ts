import { spawn as spawnChild, type ChildProcess } from 'node:child_process';
import { portSetEnv, singles } from '../allocate/port-set.js';
import { BerthError, EXIT } from '../errors.js';
import { makeRunCgroup, runInCgroup } from '../host/cgroup.js';
import { listPids } from '../host/proc-read.js';
import { portVars } from './port-vars.js';
import { ProcessTree } from './process-tree.js';
import { childEnv, execPlan, findPerl, substitute } from './spawn-plan.js';
import { stopSignal } from './lifecycle.js';
import { DEFAULT_STOP_GRACE_MS, iso, type LaunchState } from './state.js';
import { fail, finish } from './stop.js';
import { onChildExit } from './supervise.js';
import { guardRun } from './watchdog/index.js';
import { leaseHandles } from '../allocate/held-reservation.js';

/**
 * Phase 2: hand the ports over (close the holds, or pass each single port as fd 3, 4, …)
 * and start the service in a session of its own, registered with the watchdog. false: the
 * spawn failed ('error' reports it) or a stop came first.
 */
export async function spawn(s: LaunchState): Promise<boolean> {
  const o = s.o;
  const port = s.port;
  const base = o.env ?? process.env;
  const vars: Record<string, string> = { host: o.bind ?? '127.0.0.1', name: s.name, ...portVars(s.assigned()) };
  if (port !== undefined) vars.port = String(port);
  const command = s.subst ? o.command.map((a) => substitute(a, vars)) : [...o.command];
  // With a set, every single port is its own fd, in set order; blocks are the program's to bind.
  const handed = s.set ? singles(s.set.assigned) : undefined;
  const env = childEnv({
    base,
    ...(port !== undefined ? { port } : {}),
    envName: o.envName ?? 'PORT',
    name: s.name,
    runId: s.runId,
    handoff: s.handoff,
    ...(o.bind !== undefined ? { bind: o.bind } : {}),
    ...(s.set ? { portEnv: portSetEnv(s.set.assigned) } : {}),
    ...(handed ? { fdNames: handed.map((a) => a.name) } : {}),
  });
  s.env = env;
  const plan = execPlan(command, s.handoff, s.handoff === 'fd' ? findPerl(base) : undefined);
  s.plan = plan;
  if (plan.warning) s.warn(plan.warning);
  // Listed before the release window opens: everything here predates the child.
  const existing = listPids(s.procRoot);
  const fds: number[] = [];
  if (port === undefined && !s.set) {
    // portless (or one learned port): nothing is held, nothing to hand over
  } else if (s.handoff === 'fd') {
    const held = handed
      ? handed.map((a) => ({ r: s.set!.byName(a.name)!, port: a.ports[0]!, name: a.name }))
      : [{ r: s.reservation!, port: port!, name: s.name }];
    for (const h of held) {
      const fd = h.r.holdFd(h.port);
      if (fd === undefined)
        throw new BerthError(
          EXIT.SOFTWARE,
          `fd handoff: berth holds no listening socket for port ${h.port}${handed ? ` ("${h.name}")` : ''} (the reservation was made without a hold, or ` +
            `already handed over)`,
        );
      fds.push(fd);
    }
    // Only the TCP socket is handed over: the UDP side (--udp) is the service's to bind.
    await Promise.all((s.set?.reservations ?? [s.reservation!]).map((r) => r.unholdUdp?.()));
  } else {
    // Release handoff: close the holds immediately before the spawn. The leases stay, so no
    // cooperating allocator takes the ports; ownership is verified before any probe.
    if (s.set) await Promise.all(s.set.reservations.map((r) => r.unhold()));
    else await s.reservation!.unhold(port);
    if (stopSignal(s.life) !== undefined) {
      await finish(s);
      return false;
    }
  }
  const marker = `BERTH_RUN_ID=${s.runId}`;
  // The child is born in a cgroup of its own where berth may make one (host/cgroup.ts): what
  // it forks stays there, whatever it does to its session, group and environment.
  const cg =
    s.procRoot === '/proc' && process.env.BERTH_CGROUP !== 'off'
      ? makeRunCgroup(s.runId)
      : { why: s.procRoot !== '/proc' ? `a /proc of its own (${s.procRoot})` : 'BERTH_CGROUP=off' };
  if (typeof cg === 'string') s.cgroup = cg;
  else s.cgroupWhy = cg.why;
  // Before the spawn: a berth killed right after it still has its service found by the marker.
  s.guard = guardRun(s.runId, marker, o.stopGraceMs ?? DEFAULT_STOP_GRACE_MS, s.cgroup);
  // The watchdog holds the leases too (they outlive a SIGKILLed berth while it stops the service). Not awaited: each waits
  // for the ack of the one before, and a first launch must not wait for the watchdog's start-up (a berth killed meanwhile
  // loses only the leases not yet written; its service is stopped all the same).
  void s.guard.holdLeases([...(s.set?.reservations ?? (s.reservation ? [s.reservation] : [])), ...(o.leasesHeld ?? [])].flatMap(leaseHandles));
  let child: ChildProcess;
  const start = () =>
    spawnChild(plan.file, plan.args, {
      env,
      ...(o.cwd !== undefined ? { cwd: o.cwd } : {}),
      // setsid(): its own session and process group, so signals reach the whole group and
      // a terminal's Ctrl-C reaches berth, which decides what to forward.
      detached: true,
      stdio: [o.stdin ?? 'ignore', 'pipe', 'pipe', ...fds],
    });
  try {
    if (s.cgroup === undefined) child = start();
    else {
      const r = runInCgroup(s.cgroup, start);
      child = r.value;
      if (!r.inside) s.cgroupWhy = `cannot move a process into ${s.cgroup}`;
    }
  } catch (e) {
    // Node throws (instead of emitting 'error') for E2BIG and the like: preflight should have
    // caught it; if not, a message, not a stack trace.
    const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
    const why = code === 'E2BIG' ? 'its arguments and environment are too long for Linux (pass large data in a file instead)' : code;
    throw new BerthError(code === 'E2BIG' ? EXIT.USAGE : EXIT.SOFTWARE, `${s.name}: cannot start ${plan.command[0]}: ${why}`);
  } finally {
    // fd handoff: berth's copies close in the same tick, so berth never accepts a connection
    // meant for the service (the child's dups keep the sockets and their backlogs alive).
    if (fds.length > 0) {
      if (s.set) for (const r of s.set.reservations) void r.unhold();
      else void s.reservation!.unhold(port!);
    }
  }
  s.child = child;
  s.out!.attach(child.stdout);
  s.err!.attach(child.stderr);
  let resolveExit!: () => void;
  s.childExited = new Promise((r) => (resolveExit = r));
  child.on('exit', (code, signal) => {
    s.childExit = { code, signal };
    s.mark('childExitMs');
    resolveExit();
    onChildExit(s);
  });
  child.on('error', (e) => {
    // spawn failure (ENOENT, EACCES…): there is no process and 'exit' never comes.
    if (child.pid === undefined && !s.childExit) {
      s.childExit = { code: null, signal: null };
      resolveExit();
      fail(s, EXIT.SOFTWARE, `${s.name}: cannot start ${plan.command[0]}: ${(e as NodeJS.ErrnoException).code ?? e.message}`);
    }
  });
  if (child.pid === undefined) return false; // 'error' follows
  const guard = s.guard;
  const group = child.pid;
  s.tree = new ProcessTree(s.procRoot, group, marker, existing, {
    ...(s.cgroup !== undefined && s.cgroupWhy === undefined ? { cgroup: s.cgroup } : {}),
    onJoin: (m) => {
      if (m.pgrp !== group) guard.member(m.pid, m.start);
    },
  });
  guard.spawned(group, s.tree.rootStart);
  s.happen({ kind: 'spawned' });
  s.mark('spawnedMs');
  s.emit({ type: 'spawned', pid: child.pid, port: port ?? 0, handoff: s.handoff, t: iso() });
  return true;
}
