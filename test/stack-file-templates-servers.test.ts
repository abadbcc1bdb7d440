/**
 * Config-file templates against the real programs (Debian's /usr/sbin/nginx and haproxy, from
 * .ci/run): an nginx and a haproxy config rendered for two engine replicas must pass the
 * program's own check and, run for real, spread requests over both engines. The engines are
 * plain HTTP servers of this test process on ports leased with `berth port`; wiring templates
 * into stack files is tested with the stacks.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { templateContext } from '../src/stack/file/template-context.js';
import { renderTemplateFile } from '../src/stack/file/templates.js';
import { tsNode } from './helpers/netns.js';
import { findProgram, NEED, requireNeeds } from './helpers/require.js';

const FIX = resolve('test/fixtures/templates');
let ports: number[] = [];
const servers: Server[] = [];
const children: ChildProcess[] = [];
let dir = '';

before(async () => {
  const argv = tsNode('src/cli/main.ts', 'port', '--range', '27800-27899', '--count', '4', '--owner', String(process.pid), '--name', 'templates-servers-test');
  const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8' });
  assert.equal(r.status, 0, `berth port failed: ${r.stderr}`);
  ports = r.stdout.trim().split('\n').map(Number);
  dir = mkdtempSync(join(tmpdir(), 'berth-templates-servers-'));
  for (const [i, port] of ports.slice(0, 2).entries()) {
    const s = createServer((_req, res) => res.end(`engine/${i}\n`));
    servers.push(s);
    await new Promise<void>((res) => s.listen(port, '127.0.0.1', res));
  }
});

after(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const s of servers) s.close();
  const argv = tsNode('src/cli/main.ts', 'release', '--owner', String(process.pid));
  spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8' });
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The context the proxy replica sees: its own port, and the two engine replicas. */
const contextFor = (port: number) =>
  templateContext({
    name: 'proxy',
    replica: 0,
    replicas: 1,
    host: '127.0.0.1',
    port,
    ports: [{ name: 'port', kind: 'single', ports: [port] }],
    endpoints: new Map([['engine', ports.slice(0, 2).map((p) => ({ host: '127.0.0.1', port: p, ports: [{ name: 'port', kind: 'single' as const, ports: [p] }] }))]]),
  });

function start(argv: string[]): { child: ChildProcess; output: () => string } {
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (d) => (output += d));
  child.stderr!.setEncoding('utf8').on('data', (d) => (output += d));
  return { child, output: () => output };
}

/** Sends `n` requests through the proxy once it answers; returns the answers by engine. */
async function spread(url: string, n: number, output: () => string): Promise<Record<string, number>> {
  const t0 = Date.now();
  for (;;) {
    const ok = await fetch(url).then((r) => r.ok, () => false);
    if (ok) break;
    if (Date.now() - t0 > 60_000) throw new Error(`${url} did not answer within 60 s; output: ${output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const seen: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const body = (await (await fetch(url)).text()).trim();
    seen[body] = (seen[body] ?? 0) + 1;
  }
  return seen;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((r) => child.once('close', r));
  child.kill('SIGTERM');
  await gone;
}

test('nginx: the rendered upstream passes nginx -t and spreads requests over both engines', async (t) => {
  if (!requireNeeds(t, NEED.nginx)) return;
  const NGINX = findProgram('nginx')!;
  const port = ports[2]!;
  const out = join(dir, 'nginx');
  spawnSync('mkdir', ['-p', out]);
  const r = renderTemplateFile(join(FIX, 'nginx.conf.mustache'), contextFor(port), out);
  assert.equal(r.path, join(out, 'nginx.conf'));
  const check = spawnSync(NGINX, ['-t', '-p', `${out}/`, '-c', r.path, '-e', 'stderr'], { encoding: 'utf8' });
  assert.equal(check.status, 0, `nginx -t: ${check.stderr}`);
  const nginx = start([NGINX, '-p', `${out}/`, '-c', r.path, '-e', 'stderr']);
  const seen = await spread(`http://127.0.0.1:${port}/`, 8, nginx.output);
  // Round robin over both; exact counts would depend on retries under load.
  assert.ok(seen['engine/0']! >= 1 && seen['engine/1']! >= 1 && seen['engine/0']! + seen['engine/1']! === 8, `${JSON.stringify(seen)}\n${nginx.output()}`);
  await stop(nginx.child);
});

test('haproxy: the rendered backend passes haproxy -c and spreads requests over both engines', async (t) => {
  if (!requireNeeds(t, NEED.haproxy)) return;
  const HAPROXY = findProgram('haproxy')!;
  const port = ports[3]!;
  const out = join(dir, 'haproxy');
  spawnSync('mkdir', ['-p', out]);
  const r = renderTemplateFile(join(FIX, 'haproxy.cfg.mustache'), contextFor(port), out);
  const check = spawnSync(HAPROXY, ['-c', '-f', r.path], { encoding: 'utf8' });
  assert.equal(check.status, 0, `haproxy -c: ${check.stdout}${check.stderr}`);
  const haproxy = start([HAPROXY, '-db', '-f', r.path]);
  const seen = await spread(`http://127.0.0.1:${port}/`, 8, haproxy.output);
  assert.ok(seen['engine/0']! >= 1 && seen['engine/1']! >= 1 && seen['engine/0']! + seen['engine/1']! === 8, `${JSON.stringify(seen)}\n${haproxy.output()}`);
  await stop(haproxy.child);
});
