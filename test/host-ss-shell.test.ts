/**
 * The shell that starts `ss` for berth's asynchronous reads (src/host/ss-shell.ts), for real:
 * answers in order and whole, exit statuses, a shell that dies, and that it neither keeps
 * berth alive nor outlives it.
 */
import assert from 'node:assert/strict';
import * as cp from 'node:child_process';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { ssArgs } from '../src/host/ss-output.js';
import { SsShell } from '../src/host/ss-shell.js';
import { requireNetns } from './helpers/netns.js';

const ROOT = join(import.meta.dirname, '..');
const alive = (pid: number) => existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(spawnSync('cat', [`/proc/${pid}/status`], { encoding: 'utf8' }).stdout);

/**
 * A network namespace of this test with two listeners of its own, kept by the process that
 * holds them: the host's listeners change whenever anything else on the machine (another
 * copy of the suite) starts a server, so the reads compared must be of this namespace.
 */
async function quietNetns(t: TestContext): Promise<string> {
  const code = "const n=require('net');let k=0;const up=()=>{if(++k===2)console.log('ready')};n.createServer().listen(25011,'127.0.0.1',up);n.createServer().listen(25012,'::',up)";
  const holder = spawn('unshare', ['--net', '--', 'sh', '-c', 'ip link set lo up && exec "$0" -e "$1"', process.execPath, code], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => holder.kill('SIGKILL'));
  await new Promise<void>((res, rej) => {
    holder.stdout.setEncoding('utf8').on('data', (d: string) => d.includes('ready') && res());
    holder.on('exit', (c) => rej(new Error(`the namespace's holder exited ${c}`)));
  });
  return `/proc/${holder.pid}/ns/net`;
}

test('reads asked together are answered in order, each whole and as ss prints it', async (t) => {
  if (!requireNetns(t)) return;
  const ns = await quietNetns(t);
  const inNs = { ...cp, spawn: ((cmd: string, args: string[], opts: cp.SpawnOptions) => cp.spawn('nsenter', [`--net=${ns}`, '--', cmd, ...args], opts)) as typeof cp.spawn };
  const sh = new SsShell(inNs);
  t.after(() => process.kill(sh.pid!, 'SIGKILL'));
  // Both forms of filter, and the unfiltered table, of a namespace whose listeners stay as they are.
  const asks = [ssArgs(undefined, true), ssArgs([{ lo: 1, hi: 65535 }], true), ssArgs([{ lo: 1, hi: 1 }], false), ['-t', '-l', '-n']];
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => sh.run('ss', asks[i % asks.length]!)));
  const directNs = (args: string[]) => spawnSync('nsenter', [`--net=${ns}`, '--', 'ss', ...args], { encoding: 'latin1' }).stdout;
  for (const [i, a] of answers.entries()) {
    assert.equal(a.status, 0);
    assert.equal(a.stdout, directNs(asks[i % asks.length]!), `read ${i}`);
  }
  assert.match(answers[0]!.stdout, /127\.0\.0\.1:25011[\s\S]*:25012/, 'the namespace’s two listeners are read');
  assert.ok(answers[3]!.stdout.startsWith('State'), 'a header line is passed on as it is');
});

test('an ss that fails or is missing reports its status; a quote in an argument is refused', async (t) => {
  const sh = new SsShell(cp);
  t.after(() => process.kill(sh.pid!, 'SIGKILL'));
  assert.notEqual((await sh.run('ss', ['--no-such-option'])).status, 0);
  assert.equal((await sh.run('/nonexistent/ss', ['-t'])).status, 127);
  await assert.rejects(sh.run('ss', ["it's"]), /refusing argument/);
  assert.equal((await sh.run('ss', ssArgs(undefined, true))).status, 0, 'still answers after failures');
  assert.equal(sh.usable, true);
});

test('a shell that dies rejects the reads waiting on it and takes no more', async () => {
  const sh = new SsShell(cp);
  const waiting = sh.run('sleep', ['5']); // not ss, but any command the shell runs
  await new Promise((r) => setTimeout(r, 100));
  process.kill(sh.pid!, 'SIGKILL');
  await assert.rejects(waiting, /exited/);
  assert.equal(sh.usable, false);
  await assert.rejects(sh.run('ss', ['-t']), /exited/);
});

test('the shell does not keep its process alive, and goes when the process exits (even by SIGKILL)', async () => {
  const script = `
    import * as cp from 'node:child_process';
    import { SsShell } from ${JSON.stringify(join(ROOT, 'src/host/ss-shell.ts'))};
    const sh = new SsShell(cp);
    const a = await sh.run('ss', ['-t', '-l', '-n', '-H']);
    process.stdout.write(sh.pid + ' ' + a.status + '\\n');
    if (process.argv[2] === 'hang') setInterval(() => {}, 1000);`;
  for (const how of ['exit', 'hang'] as const) {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, how], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    const line = await new Promise<string>((resolve) => child.stdout.once('data', (d: Buffer) => resolve(String(d))));
    const [pid, status] = line.trim().split(' ').map(Number) as [number, number];
    assert.equal(status, 0);
    if (how === 'hang') child.kill('SIGKILL');
    const code = await new Promise((r) => child.once('exit', (c, s) => r(c ?? s)));
    assert.equal(code, how === 'exit' ? 0 : 'SIGKILL', 'an idle shell does not hold its process open');
    for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(alive(pid), false, `the shell (pid ${pid}) is gone after its process (${how})`);
  }
});
