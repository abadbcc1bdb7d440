/**
 * Every listener of every service (issue 28.3): a `port: none` service is audited too, and
 * replicas of one stack that all listen on one hidden fixed port are said in one line naming
 * every replica and the port entry that would give each its own: three real Debian caddy
 * replicas on their default admin API 127.0.0.1:2019 (SO_REUSEPORT). Each stack in a network
 * namespace of its own, so a caddy daemon on the host's 2019 does not matter.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { requireNetns } from './helpers/netns.js';
import { NEED, requireNeeds } from './helpers/require.js';
import { box, up } from './fixtures/up/harness.js';
import { realPython, SERVICES } from './fixtures/services/launch-harness.js';

describe('audit of every service', { concurrency: 2 }, () => {
  test('three caddy replicas on 127.0.0.1:2019: one line naming all three and the port entry, no line per replica', async (t) => {
    if (!requireNetns(t) || !requireNeeds(t, NEED.caddy)) return;
    const b = box('');
    t.after(() => b.cleanup());
    writeFileSync(join(b.dir, 'Caddyfile'), 'http://127.0.0.1:{$CADDY_PORT} {\n\trespond "replica {$CADDY_REPLICA}"\n}\n');
    for (const r of [0, 1, 2]) mkdirSync(join(b.dir, `home${r}`));
    writeFileSync(b.stack, `
services:
  caddy:
    replicas: 3
    range: 23000-23099
    command: [caddy, run, --config, Caddyfile, --adapter, caddyfile]
    env: { CADDY_PORT: "{port}", CADDY_REPLICA: "{replica}", HOME: "${b.dir}/home{replica}", XDG_DATA_HOME: "${b.dir}/home{replica}", XDG_CONFIG_HOME: "${b.dir}/home{replica}" }
    ready: http://127.0.0.1:{port}/
`);
    const u = up(b, [], { timeoutMs: 90_000 });
    t.after(() => u.child.kill('SIGKILL'));
    await u.waitStderr(/all listen on 127\.0\.0\.1:2019/, 60_000);
    u.child.kill('SIGTERM');
    const r = await u.result;
    const lines = r.stderr.split('\n').filter((l) => l.includes('2019'));
    assert.equal(lines.length, 1, `one line names 2019:\n${r.stderr}`);
    assert.match(lines[0]!, /^berth: warning: caddy\/0, caddy\/1 and caddy\/2 all listen on 127\.0\.0\.1:2019, outside their ports, and share it through SO_REUSEPORT: the kernel splits new connections between them, so each may answer the others' requests; give each replica its own: add a port entry to service caddy \(ports: \{ …, p2019: 1 \}, or learn if the program picks it\) and pass \{ports\.p2019\} to the program's setting for port 2019$/);
    // The record still has each replica's finding.
    const doc = JSON.parse(readFileSync(join(b.runDir, 'endpoints.json'), 'utf8'));
    for (const rec of doc.replicas) assert.ok(rec.unexpectedListeners.some((f: { port: number }) => f.port === 2019), JSON.stringify(rec));
  });

  test('a port: none service is audited: its listeners are named, once', async (t) => {
    if (!requireNetns(t)) return;
    const b = box(`
services:
  worker:
    port: none
    command: [${JSON.stringify(realPython())}, -S, ${JSON.stringify(join(SERVICES, 'listen-ports.py'))}, "0", "0"]
`);
    t.after(() => b.cleanup());
    const u = up(b, [], { timeoutMs: 90_000 });
    t.after(() => u.child.kill('SIGKILL'));
    await u.waitStderr(/worker\/0 listens on 2 ports but has no port/, 60_000);
    u.child.kill('SIGTERM');
    const r = await u.result;
    assert.equal(r.stderr.match(/worker\/0 listens on/g)?.length, 1, r.stderr);
    assert.match(r.stderr, /berth: warning: worker\/0 listens on 2 ports but has no port \(none was asked for it\): \d+ and \d+ inside the unreserved ephemeral range/);
  });
});
