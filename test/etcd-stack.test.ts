/**
 * A real two-port service: Debian's etcd 3.4 (etcd-server, installed by .ci/run) as one
 * stack service with `ports: { client: 1, peer: 1 }`, ready when `etcdctl endpoint health`
 * says so, and a job that writes and reads a key through the client port it got from
 * `{etcd.port.client}`. Runs in a network namespace of its own.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { wellKnownPort } from '../src/layout/well-known-ports.js';
import { berth } from './helpers/cli.js';
import { requireNetns } from './helpers/netns.js';
import { NEED, requireNeeds } from './helpers/require.js';

const STACK = `services:
  etcd:
    ports: { client: 1, peer: 1 }
    command:
      - etcd
      - --name=default
      - --data-dir=etcd-data
      - --listen-client-urls=http://127.0.0.1:{ports.client}
      - --advertise-client-urls=http://127.0.0.1:{ports.client}
      - --listen-peer-urls=http://127.0.0.1:{ports.peer}
      - --initial-advertise-peer-urls=http://127.0.0.1:{ports.peer}
      - --initial-cluster=default=http://127.0.0.1:{ports.peer}
    ready: "cmd:etcdctl --endpoints=http://127.0.0.1:{ports.client} endpoint health"
    ready_timeout: 2m
  client:
    depends_on: { etcd: ready }
    job: true
    command:
      - sh
      - -c
      - >-
        E=http://127.0.0.1:{etcd.port.client};
        etcdctl --endpoints=$E put berth-key from-berth >/dev/null &&
        echo "value=$(etcdctl --endpoints=$E get --print-value-only berth-key)" &&
        etcdctl --endpoints=$E endpoint health 2>&1
`;

test('etcd with client and peer ports from one set: healthy, a key written and read, ports recorded', { timeout: 180_000 }, async (t) => {
  if (!requireNeeds(t, NEED.etcd, NEED.etcdctl)) return;
  if (!requireNetns(t)) return;
  const dir = mkdtempSync(join(tmpdir(), 'berth-etcd-'));
  try {
    const file = join(dir, 'stack.yaml');
    writeFileSync(file, STACK);
    const run = join(dir, 'run');
    const r = await berth(['up', file, '--run-dir', run], { netns: {}, env: { BERTH_STATE_DIR: join(dir, 'state') }, timeoutMs: 170_000 });
    assert.equal(r.code, 0, `berth up failed:\n${r.stderr}`);
    assert.match(r.stdout, /value=from-berth/);
    assert.match(r.stdout, /is healthy/);
    const doc = JSON.parse(readFileSync(join(run, 'endpoints.json'), 'utf8')) as unknown;
    const replica = findReplica(doc, 'etcd');
    assert.ok(replica, `endpoints.json has the etcd replica: ${JSON.stringify(doc)}`);
    const ports = replica.ports as { client: number; peer: number };
    assert.equal(typeof ports.client, 'number');
    assert.equal(typeof ports.peer, 'number');
    assert.notEqual(ports.client, ports.peer);
    assert.equal(replica.port, ports.client, 'the first entry is the primary port');
    // The built-in band never hands out etcd's own 2379/2380 or any other listed port.
    assert.equal(wellKnownPort(ports.client), undefined);
    assert.equal(wellKnownPort(ports.peer), undefined);
    // etcd listens on exactly its two ports: nothing for the audit to report.
    assert.equal(replica.unexpectedListeners, undefined, JSON.stringify(replica.unexpectedListeners));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

type Json = Record<string, unknown>;
function findReplica(v: unknown, service: string): Json | undefined {
  if (Array.isArray(v)) {
    for (const x of v) {
      const f = findReplica(x, service);
      if (f) return f;
    }
    return undefined;
  }
  if (v === null || typeof v !== 'object') return undefined;
  const o = v as Json;
  if (o.service === service && typeof o.replica === 'number' && o.ports !== undefined) return o;
  for (const x of Object.values(o)) {
    const f = findReplica(x, service);
    if (f) return f;
  }
  return undefined;
}
