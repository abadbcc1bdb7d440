/**
 * A watchdog that cannot run is said once on stderr, not silently given up on: berth runs on,
 * but a SIGKILL of berth would leave its services running. Seen for real with the arm64
 * executable under qemu-user without binfmt_misc (execve of berth's own file fails, exec
 * falls back to sh, which exits 2); here the watchdog is a script that does not exist.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { guardRun, useWatchdogEntry } from '../src/launch/watchdog/index.js';

test('a watchdog that keeps exiting: one warning naming it and what it means, after the respawns', async () => {
  const said: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    if (String(chunk).startsWith('berth: warning: its watchdog')) said.push(String(chunk));
    return (write as (c: string | Uint8Array, ...r: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stderr.write;
  useWatchdogEntry('/nonexistent/watchdog.cjs');
  const guard = guardRun('warn-test', 'BERTH_RUN_ID=warn-test', 1000);
  try {
    const t0 = Date.now();
    while (said.length === 0 && Date.now() - t0 < 20_000) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(said.length, 1, `one warning: ${JSON.stringify(said)}`);
    const program = process.execPath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const warning = `^berth: warning: its watchdog \\(${program}\\) does not run \\(it exited 4 times, last with status 1\\); `;
    assert.match(said[0]!, new RegExp(`${warning}if berth is killed with SIGKILL, its services are not stopped for it\\n$`));
  } finally {
    guard.ended();
    process.stderr.write = write;
  }
});
