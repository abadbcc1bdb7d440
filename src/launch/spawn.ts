import { spawn as spawnChild, type ChildProcess } from 'node:child_process';
import { BerthError, EXIT } from '../errors.js';
import { listPids } from '../host/pids.js';
import { ProcessTree } from './process-tree.js';
import { childEnv, execPlan, findPerl, substitute } from './spawn-plan.js';
import { DEFAULT_STOP_GRACE_MS, iso, type LaunchState } from './state.js';
import { fail, finish } from './stop.js';
import { onChildExit } from './supervise.js';
import { guardRun } from './watchdog.js';

/**
 * Phase 2: hand the port over (close the hold, or pass it as fd 3) and start the service in
 * a session of its own, registered with the watchdog. false: the spawn failed ('error'
 * reports it) or a stop came first.
 */
export async function spawn(s: LaunchState): Promise<boolean> {
  s.phase = 'spawn';
  const o = s.o;
  const port = s.port;
  const base = o.env ?? process.env;
  const vars: Record<string, string> = { host: o.bind ?? '127.0.0.1', name: s.name };
  if (port !== undefined) vars.port = String(port);
  const command = s.subst ? o.command.map((a) => substitute(a, vars)) : [...o.command];
  const env = childEnv({ base, ...(port !== undefined ? { port } : {}), envName: o.envName ?? 'PORT', name: s.name, runId: s.runId, handoff: s.handoff, ...(o.bind !== undefined ? { bind: o.bind } : {}) });
  s.env = env;
  const plan = execPlan(command, s.handoff, s.handoff === 'fd' ? findPerl(base) : undefined);
  s.plan = plan;
  if (plan.warning) s.warn(plan.warning);
  // Listed before the release window opens: everything here predates the child.
  const existing = listPids(s.procRoot);
  let fd: number | undefined;
  if (port === undefined) {
    // portless: nothing is held, nothing to hand over
  } else if (s.handoff === 'fd') {
    fd = s.reservation!.holdFd(port);
    if (fd === undefined) throw new BerthError(EXIT.SOFTWARE, `fd handoff: berth holds no listening socket for port ${port} (the reservation was made without a hold, or already handed over)`);
  } else {
    // Release handoff: close the hold immediately before the spawn. The lease stays, so no
    // cooperating allocator takes the port; ownership is verified before any probe.
    await s.reservation!.unhold(port);
    if (s.stopReq) {
      await finish(s);
      return false;
    }
  }
  const marker = `BERTH_RUN_ID=${s.runId}`;
  // Before the spawn: a berth killed right after it still has its service found by the marker.
  s.guard = guardRun(s.runId, marker, o.stopGraceMs ?? DEFAULT_STOP_GRACE_MS);
  let child: ChildProcess;
  try {
    child = spawnChild(plan.file, plan.args, {
      env,
      ...(o.cwd !== undefined ? { cwd: o.cwd } : {}),
      // setsid(): its own session and process group, so signals reach the whole group and
      // a terminal's Ctrl-C reaches berth, which decides what to forward.
      detached: true,
      stdio: [o.stdin ?? 'ignore', 'pipe', 'pipe', ...(fd !== undefined ? [fd] : [])],
    });
  } finally {
    // fd handoff: berth's copy closes in the same tick, so berth never accepts a connection
    // meant for the service (the child's dup keeps the socket and its backlog alive).
    if (fd !== undefined) void s.reservation!.unhold(port!);
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
    onJoin: (m) => {
      if (m.pgrp !== group) guard.member(m.pid, m.start);
    },
  });
  guard.spawned(group, s.tree.rootStart);
  s.mark('spawnedMs');
  s.emit({ type: 'spawned', pid: child.pid, port: port ?? 0, handoff: s.handoff, t: iso() });
  return true;
}
