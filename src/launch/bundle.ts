import { join } from 'node:path';
import type { BerthError } from '../errors.js';
import { snapshotHost, writeBundle } from './diagnostics.js';
import { exitStatus } from './exit-status.js';
import { copyLogTail } from './log-copy.js';
import type { OutputTee } from './output.js';
import { redactArgv, redactEnv, redactReadySpec } from '../util/redact.js';
import { formatReadySpec } from './ready-spec.js';
import { now, type LaunchState } from './state.js';
import type { LaunchPhase } from './launch-api.js';

/**
 * diagnostics.json, and with the caller's log files, this launch's part of each copied in as
 * stdout.log/stderr.log (see log-copy.ts): the bundle is complete on its own. Called again
 * when the launch has ended, so the copies then hold the output of the cleanup too.
 */
export function saveBundle(s: LaunchState, dir: string, phase: LaunchPhase, err: BerthError, details?: Record<string, unknown>): string {
  for (const [tee, file] of [
    [s.out, 'stdout.log'],
    [s.err, 'stderr.log'],
  ] as const) {
    if (!tee || !s.callerLogs.has(tee)) continue;
    try {
      copyLogTail(tee.logPath, tee.startOffset, join(dir, file));
      s.copyErrors.delete(file);
    } catch (e) {
      s.copyErrors.set(file, (e as NodeJS.ErrnoException).code ?? (e as Error).message);
    }
  }
  return writeBundle(dir, bundle(s, phase, err, details));
}

function logEntry(s: LaunchState, tee: OutputTee | undefined, file: 'stdout.log' | 'stderr.log'): Record<string, unknown> {
  const entry: Record<string, unknown> = { file, bytes: tee?.bytes ?? 0 };
  if (tee?.logError) entry.error = tee.logError;
  if (tee && s.callerLogs.has(tee)) {
    // The live log is the caller's file; `file` is the copy of this launch's part of it.
    entry.log = tee.logPath;
    entry.offset = tee.startOffset;
    const copyError = s.copyErrors.get(file);
    if (copyError !== undefined) entry.copyError = copyError;
  }
  return entry;
}

function bundle(s: LaunchState, phase: LaunchPhase, err: BerthError, details?: Record<string, unknown>): Record<string, unknown> {
  const asked = s.o.source;
  const port = s.port ?? s.o.port ?? (typeof asked === 'object' && asked.kind === 'port' ? asked.port : undefined);
  const tree = s.tree;
  const alive = tree ? new Set(tree.alive().map((m) => m.pid)) : new Set<number>();
  return {
    berth: { version: 1, pid: process.pid, runId: s.runId },
    name: s.name,
    phase,
    reason: s.reason ?? err.message,
    exitCode: err.exitCode,
    port: port ?? null,
    ports: s.set?.assigned ?? null,
    portless: s.portless,
    handoff: s.handoff,
    ...(s.o.dir !== undefined ? { dir: s.o.dir } : {}),
    ready: s.spec ? redactReadySpec(formatReadySpec(s.spec)) : null,
    command: redactArgv(s.o.command),
    exec: s.plan ? { file: s.plan.file, args: s.handoff === 'fd' ? ['<fd shim>', ...redactArgv(s.plan.command)] : redactArgv(s.plan.args) } : null,
    source: s.reservation?.report.source ?? s.o.source ?? null,
    allocation: s.reservation?.report ?? (details && 'excluded' in details ? details : null),
    errorDetails: details ?? null,
    lease: s.reservation?.leases[0] ?? null,
    ...(s.set ? { leases: s.set.reservations.flatMap((r) => r.leases) } : {}),
    host: snapshotHost(s.procRoot, port),
    ownership: s.lastOwnership ? { state: s.lastOwnership.state, ownerPids: s.ownerPids } : null,
    probe: { attempts: s.probe.attempts, last: s.probe.last ?? null },
    unexpectedListeners: s.findings,
    child: s.child
      ? {
          pid: s.child.pid ?? null,
          pgid: s.child.pid ?? null,
          exit: s.childExit ? { ...s.childExit, status: exitStatus(s.childExit.code, s.childExit.signal) } : null,
          tree: tree ? [...tree.members.values()].map((m) => ({ ...m, alive: alive.has(m.pid) })) : [],
          // Where the tree was tracked (docs/run.md, "The process tree"), or why not.
          cgroup: s.cgroupWhy === undefined && s.cgroup !== undefined ? { path: s.cgroup } : { path: null, why: s.cgroupWhy ?? null },
        }
      : null,
    timings: { startedAt: s.startedAt, ...s.timings, bundleMs: Math.round(now() - s.t0) },
    logs: { stdout: logEntry(s, s.out, 'stdout.log'), stderr: logEntry(s, s.err, 'stderr.log') },
    warnings: s.warnings,
    env: redactEnv(s.env ?? s.o.env ?? process.env),
    cwd: s.o.cwd ?? process.cwd(),
    ...(s.o.files ? { files: s.o.files } : {}),
  };
}
