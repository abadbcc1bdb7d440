/**
 * The core side of peers across nodes, without Slurm: a service in
 * RunStackOptions.peerServices has its ports leased like any other but does not start until
 * StackHandle.setPeers gives every node's replicas; its own-service placeholders and its
 * template's replica list (with `self` at its rank) are then those, not this host's alone.
 * Without peerServices a service still sees its local replicas (one host).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseStack } from '../src/stack/file/load.js';
import { runStack } from '../src/stack/run/orchestrate.js';
import { tempStateDir } from './helpers/cli.js';

const until = async (what: () => boolean, ms = 10_000) => {
  const t0 = Date.now();
  while (!what()) {
    if (Date.now() - t0 > ms) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
};

function stack(nodes = ''): { dir: string; text: string } {
  const dir = mkdtempSync(join(tmpdir(), 'berth-peers-'));
  writeFileSync(join(dir, 'list.mustache'), '{{#m.replicas}}{{index}}={{hostport}}{{#self}}*{{/self}};{{/m.replicas}}\n');
  return {
    dir,
    text: `services:
  m:${nodes}
    replicas: 2
    range: 23100-23199
    templates: { list: list.mustache }
    command: [sh, -c, 'echo "peers $0 $(cat $1)"; exec python3 -m http.server "$2" --bind 127.0.0.1 >/dev/null 2>&1', "{m.hostports}", "{templates.list}", "{port}"]
`,
  };
}

test('peerServices: leased, pending until setPeers; then every node\'s replicas in its placeholders and template, self at its rank', async (t) => {
  // nodes: as an agent runs it (its ranks count the nodes before this one).
  const { dir, text } = stack('\n    nodes: all');
  const spec = parseStack(text, join(dir, 's.yaml'), dir);
  const log: string[] = [];
  const runDir = join(dir, 'run');
  // As the agent of the second of two nodes: ranks 2 and 3.
  const h = runStack(spec, {
    runDir,
    stateDir: tempStateDir(),
    stdout: null,
    stderr: null,
    peerServices: ['m'],
    topology: { node: 'n2', nodeIndex: 1, nodes: ['n1', 'n2'] },
    onEvent: (e) => log.push(`${e.service}/${e.replica} ${e.state}`),
  });
  t.after(() => h.stop());
  await until(() => log.includes('m/1 pending'));
  await new Promise((r) => setTimeout(r, 300));
  assert.ok(!log.some((l) => l.endsWith('starting')), `started before its peers were known: ${log.join(', ')}`);
  const mine = h.endpoints().replicas.map((r) => r.port!);
  assert.equal(mine.length, 2);
  h.setPeers('m', [{ host: '10.0.0.1', port: 1001 }, { host: '10.0.0.1', port: 1002 }, ...mine.map((port) => ({ host: '127.0.0.1', port }))]);
  await until(() => log.includes('m/1 ready') && log.includes('m/0 ready'));
  const all = `10.0.0.1:1001,10.0.0.1:1002,127.0.0.1:${mine[0]},127.0.0.1:${mine[1]}`;
  for (const r of [0, 1]) {
    await until(() => readFileSync(join(runDir, 'logs', `m-${r}.out`), 'utf8').includes('\n'));
    const marks = [0, 1, 2, 3].map((i) => `${i}=${all.split(',')[i]}${i === 2 + r ? '*' : ''};`).join('');
    assert.equal(readFileSync(join(runDir, 'logs', `m-${r}.out`), 'utf8'), `peers ${all} ${marks}\n`);
  }
  assert.equal((await h.stop()).exitCode, 0);
});

test('without peerServices a service names its local replicas, self at its replica', async (t) => {
  const { dir, text } = stack();
  const spec = parseStack(text, join(dir, 's.yaml'), dir);
  const runDir = join(dir, 'run');
  const log: string[] = [];
  const h = runStack(spec, { runDir, stateDir: tempStateDir(), stdout: null, stderr: null, onEvent: (e) => log.push(`${e.service}/${e.replica} ${e.state}`) });
  t.after(() => h.stop());
  await until(() => log.includes('m/1 ready') && log.includes('m/0 ready'));
  const ports = h.endpoints().replicas.map((r) => r.port!);
  for (const r of [0, 1]) {
    await until(() => readFileSync(join(runDir, 'logs', `m-${r}.out`), 'utf8').includes('\n'));
    const marks = [0, 1].map((i) => `${i}=127.0.0.1:${ports[i]}${i === r ? '*' : ''};`).join('');
    assert.equal(readFileSync(join(runDir, 'logs', `m-${r}.out`), 'utf8'), `peers 127.0.0.1:${ports[0]},127.0.0.1:${ports[1]} ${marks}\n`);
  }
  assert.equal((await h.stop()).exitCode, 0);
});
