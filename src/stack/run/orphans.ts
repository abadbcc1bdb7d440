import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { processStartTime } from '../../host/proc-stat.js';
import { BerthError } from '../../errors.js';

/*
 * A port of the stack held by a process berth did not start (a vLLM left by a dead container):
 * the 69 says who, when it started, and that it is no process of this stack, so nobody hunts for a bug in it.
 */

/** Clock ticks per second of /proc/PID/stat's start time: 100 on every Linux berth runs on. */
const TICKS = 100;

function bootTimeMs(procRoot: string): number | undefined {
  try {
    const m = /^btime (\d+)$/m.exec(readFileSync(join(procRoot, 'stat'), 'latin1'));
    return m ? Number(m[1]) * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** "started 2026-12-03T14:00:00Z (5m12s ago)" of a pid, or undefined. */
export function startedText(pid: number, procRoot = '/proc', now = Date.now()): string | undefined {
  const ticks = processStartTime(pid, procRoot);
  const boot = bootTimeMs(procRoot);
  if (ticks === undefined || boot === undefined) return undefined;
  const at = boot + (ticks / TICKS) * 1000;
  const ago = Math.max(0, Math.round((now - at) / 1000));
  const h = Math.floor(ago / 3600);
  const m = Math.floor((ago % 3600) / 60);
  const agoText = h > 0 ? `${h}h${m}m` : m > 0 ? `${m}m${ago % 60}s` : `${ago}s`;
  return `started ${new Date(at).toISOString().replace(/\.\d+Z$/, 'Z')} (${agoText} ago)`;
}

interface InUse {
  port: number;
  pid?: number;
  uid?: number;
  command?: string;
  heldByBerth?: boolean;
  inProgress?: boolean;
}

/** The lines naming the processes outside the stack that hold its ports, from a 69's report; '' when none. */
export function orphanLines(err: BerthError, procRoot = '/proc'): string {
  const inUse = ((err.details as { excluded?: { inUse?: InUse[] } } | undefined)?.excluded?.inUse ?? []).filter(
    (u) => u.pid !== undefined && !u.heldByBerth && !u.inProgress,
  );
  const lines = inUse.slice(0, 5).map((u) => {
    const started = startedText(u.pid!, procRoot);
    const command = u.command ? ` (${u.command.length > 120 ? `${u.command.slice(0, 117)}...` : u.command})` : '';
    return `  port ${u.port}: pid ${u.pid}${u.uid !== undefined ? ` uid ${u.uid}` : ''}${command}${started ? `, ${started}` : ''}: not started by this stack`;
  });
  if (lines.length === 0) return '';
  return `\n${lines.join('\n')}\n  (a server left over from an earlier run: a dead container's under --network host, a previous job's rank): stop it, or ` +
    `give this service other ports`;
}
