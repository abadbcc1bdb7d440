import { join } from 'node:path';
import type { StackSpec } from './spec.js';

/*
 * Where a replica's own directory ({dir}) is, and whether the Unix socket paths a stack
 * builds on it fit: sun_path holds 108 bytes, the last a NUL, so a socket path longer than
 * 107 bytes cannot be bound (ZMQ's ipc://, gunicorn's unix:, uvicorn's --uds …). The run
 * directory is known before anything starts, so berth refuses a run directory too deep for
 * them instead of letting a program fail with ENAMETOOLONG (or truncate the path) later.
 */

/** The folder of the run directory that holds every replica's directory. */
export const REPLICA_DIRS = 'data';

/** `<run dir>/data/<service>-<replica>`: short, so socket paths in it stay short. */
export function replicaDirPath(runDir: string, service: string, replica: number): string {
  return join(runDir, REPLICA_DIRS, `${service}-${replica}`);
}

/** The most bytes sun_path holds for a path (108 with its NUL). */
export const SUN_PATH_MAX = 107;

/** `ipc://{dir}/x`, `unix:{dir}/x`, `unix://{dir}/x`: a socket path written after {dir}. */
const SOCKET_RE = /(?:ipc|unix):(?:\/\/)?\{dir\}([^\s,;{}]*)/g;

/**
 * Problems of socket paths under {dir} that would not fit sun_path in this run directory,
 * with the longest run directory that would do. Replica counts not known yet (gpus) count
 * as two digits.
 */
export function socketPathProblems(spec: StackSpec, runDir: string): string[] {
  const out: string[] = [];
  for (const s of spec.services) {
    const last = typeof s.replicas === 'number' ? s.replicas - 1 : 99;
    const dir = replicaDirPath(runDir, s.name, last);
    const texts = [...s.command.map((a, i) => [`command[${i}]`, a] as const), ...Object.entries(s.env).map(([k, v]) => [`env ${k}`, v] as const)];
    for (const [where, text] of texts) {
      for (const m of text.matchAll(SOCKET_RE)) {
        const path = dir + m[1]!;
        const bytes = Buffer.byteLength(path);
        if (bytes <= SUN_PATH_MAX) continue;
        const room = SUN_PATH_MAX - (bytes - Buffer.byteLength(runDir));
        const fix = room > 1 ? `use a --run-dir of at most ${room} bytes (e.g. --run-dir /tmp/$USER-r1)` : 'shorten the socket name or the service name';
        out.push(
          `service "${s.name}" (line ${s.line}): ${where}: the Unix socket path ${path} is ${bytes} bytes, but a socket path holds at most ` +
            `${SUN_PATH_MAX} (sun_path); ${fix}`,
        );
      }
    }
  }
  return out;
}
