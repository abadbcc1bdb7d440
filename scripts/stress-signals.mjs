#!/usr/bin/env node
// The "signal before ready" tests of test/launch-signals.test.ts, run ROUNDS times (default
// 50) beside two CPU-bound loops: the load under which a fixed sleep, or a signal taken with
// Node's default action during berth's start-up, used to make them fail. Needs root (network
// namespaces) and a built dist/. Prints one line per round and the totals; exits 1 if any failed.
//   node scripts/stress-signals.mjs [ROUNDS]
import { spawn, spawnSync } from 'node:child_process';

const rounds = Number(process.argv[2] ?? 50);
const burners = [0, 1].map(() => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
const stop = () => burners.forEach((b) => b.kill('SIGKILL'));
process.on('exit', stop);

let failed = 0;
let tests = 0;
const t0 = Date.now();
for (let i = 1; i <= rounds; i++) {
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', '--test-reporter=tap', '--test-name-pattern', 'before the service is ready', 'test/launch-signals.test.ts'],
    { encoding: 'utf8', env: { ...process.env, CI: 'true' } },
  );
  const pass = Number(/^# pass (\d+)/m.exec(r.stdout)?.[1] ?? 0);
  const fail = Number(/^# fail (\d+)/m.exec(r.stdout)?.[1] ?? 0);
  tests += pass + fail;
  failed += fail + (r.status !== 0 && fail === 0 ? 1 : 0);
  console.log(`round ${i}: ${pass} passed, ${fail} failed${r.status !== 0 ? `, status ${r.status}` : ''}`);
  if (r.status !== 0) process.stdout.write(r.stdout.split('\n').filter((l) => /^not ok|^\s+(error|expected|actual):/.test(l)).join('\n') + '\n');
}
stop();
const load = spawnSync('cat', ['/proc/loadavg'], { encoding: 'utf8' }).stdout.trim();
console.log(`${rounds} rounds, ${tests} tests, ${failed} failed, ${((Date.now() - t0) / 1000).toFixed(0)} s, two CPU-bound loops beside them; load at the end: ${load}`);
process.exit(failed > 0 ? 1 : 0);
