/**
 * The NATS cluster recipe (examples/recipes/nats-cluster), run for real with Debian's
 * nats-server (installed by .ci/run): `berth up` in a fresh network namespace; every server's
 * --routes comes from one placeholder formatted per entry ({nats.ports.cluster.hostport|nats://{}}),
 * readiness is the monitoring port's /healthz, and the job's message crosses the routes.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test, type TestContext } from 'node:test';
import { berth } from './helpers/cli.js';
import { requireNetns } from './helpers/netns.js';

const STACK = resolve('examples/recipes/nats-cluster/stack.yaml');

/** nats-server on PATH; outside CI a missing one skips loudly, naming the package. */
function requireNats(t: TestContext): boolean {
  if (spawnSync('nats-server', ['--version']).status === 0) return true;
  if (process.env.CI) throw new Error('nats-server is not installed; .ci/run installs Debian\'s nats-server');
  process.stderr.write(`\n!!! SKIPPING "${t.name}": nats-server is not installed (Debian: apt-get install nats-server). In CI this is a failure.\n\n`);
  t.skip('needs nats-server (Debian package nats-server)');
  return false;
}

test('a 3-member NATS cluster: --routes from the per-entry format, ready on /healthz, a message crosses the routes', { timeout: 240_000 }, async (t) => {
  if (!requireNetns(t) || !requireNats(t)) return;
  const dir = mkdtempSync(join(tmpdir(), 'berth-recipe-nats-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const run = join(dir, 'run');
  const r = await berth(['up', STACK, '--run-dir', run], { netns: {}, env: { BERTH_STATE_DIR: join(dir, 'state') }, timeoutMs: 240_000 });
  assert.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(readFileSync(join(run, 'endpoints.json'), 'utf8')) as { replicas: { service: string; replica: number; port: number; ports: Record<string, number> }[] };
  const servers = doc.replicas.filter((x) => x.service === 'nats').sort((a, b) => a.replica - b.replica);
  assert.equal(servers.length, 3);
  const hp = (p: number) => `127.0.0.1:${p}`;
  assert.match(r.stdout, new RegExp(`^hello from ${hp(servers[2]!.port)} to ${hp(servers[0]!.port)}, a cluster of 3$`, 'm'), r.stdout + r.stderr);
  for (const s of servers) {
    const log = readFileSync(join(run, 'logs', `nats-${s.replica}.err`), 'utf8');
    // Each server listens where berth leased, and solicited a route to every other member's cluster port.
    assert.match(log, new RegExp(`Listening for client connections on ${hp(s.port)}\\b`));
    assert.match(log, new RegExp(`Listening for route connections on ${hp(s.ports.cluster!)}\\b`));
    for (const o of servers) if (o !== s) assert.match(log, new RegExp(`${hp(o.ports.cluster!)}\\b`), `nats-${s.replica} named no route to nats-${o.replica}: ${log}`);
  }
  // Nothing outside the leased ports: the audit found no stray listener.
  assert.doesNotMatch(r.stderr, /outside its ports/);
});
