/**
 * berth never leaves services running when it goes away (issue 9 §1), through the CLI with
 * real pipes and signals, each scenario in a network namespace of its own:
 *   - a closed stdout (`| head -1`) or stderr (`2>&1 | sed "/stack ready/q"`) only ends berth's output
 *     there: `berth up` and `berth run` keep supervising and end in order;
 *   - berth killed with SIGKILL: its watchdog sends the whole tree (double-forked daemons
 *     included) SIGTERM at once and SIGKILL after the grace, marks endpoints.json, and the
 *     leases of the dead berth are reclaimed by the next `berth port`;
 *   - a clean exit leaves nothing behind, the watchdog included.
 * Every process berth starts inherits its environment, so a unique NO_ORPHANS=<uuid> given to
 * berth finds them all in /proc (helpers/procs.ts).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { requireNetns } from './helpers/netns.js';
import { waitGone } from './helpers/procs.js';
import { berthSh, kv, netnsSh, q, sandbox, SERVICES, type Sandbox } from './fixtures/services/launch-harness.js';

const SVC = join(SERVICES, '..', 'up', 'svc.mjs');
const DAEMON = join(SERVICES, 'service.mjs');
const node = JSON.stringify(process.execPath);

function setup(t: { after(fn: () => void): void }): { box: Sandbox; mark: string; env: string } {
  const box = sandbox();
  const mark = `NO_ORPHANS=${randomUUID()}`;
  t.after(() => box.cleanup());
  return { box, mark, env: `env ${mark}` };
}

/** Shell: wait (≤ 10 s) until no process carries `mark`, then print GONE_MS since $t0. */
const waitGoneSh = (mark: string) =>
  `i=0; while grep -lqs ${q(mark)} /proc/[0-9]*/environ && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done
echo "GONE_MS=$(( ($(date +%s%N) - t0) / 1000000 ))"`;

function stack(box: Sandbox, yaml: string): string {
  const file = join(box.dir, 'stack.yaml');
  writeFileSync(file, yaml);
  return file;
}

const endpoints = (run: string) => JSON.parse(readFileSync(join(run, 'endpoints.json'), 'utf8'));
const crashText = /EPIPE|internal error|Error: write|at .*\.cjs:\d+/;

describe('no orphans', { concurrency: 2 }, () => {
  test('berth up --json | head -1: the closed stdout ends only that output; the job finishes, the stack ends in order', async (t) => {
    if (!requireNetns(t)) return;
    const { box, mark, env } = setup(t);
    const file = stack(
      box,
      `services:
  web:
    range: 20000-20009
    command: [${node}, ${JSON.stringify(SVC)}, --port, "{port}"]
    ready: http://127.0.0.1:{port}/health
  job:
    command: [${node}, ${JSON.stringify(SVC)}, --lines, "20000", --exit-after, "400"]
    depends_on: { web: ready }
    job: true
`,
    );
    const run = join(box.dir, 'run');
    const r = await netnsSh(
      {},
      box,
      `{ ${env} ${berthSh} up ${q(file)} --run-dir ${q(run)} --json; echo "RC=$?" > ${q(box.dir)}/rc; } 2>${q(box.dir)}/err | head -1 > ${q(box.dir)}/first
cat ${q(box.dir)}/rc`,
    );
    const err = readFileSync(join(box.dir, 'err'), 'utf8');
    assert.equal(kv(r.stdout).get('RC'), '0', err);
    assert.doesNotMatch(err, crashText);
    assert.match(err, /job job exited with status 0; stack stopped/);
    const first = JSON.parse(readFileSync(join(box.dir, 'first'), 'utf8'));
    assert.equal(first.replicas[0].state, 'ready', 'the one line head read: the ready document');
    assert.deepEqual(endpoints(run).replicas.map((x: { state: string }) => x.state), ['exited', 'exited']);
    assert.deepEqual((await waitGone(mark, 2_000)).left, []);
  });

  test('berth up 2>&1 | a reader that quits once the stack is ready, then SIGINT: orderly teardown, exit 130, nothing left', async (t) => {
    if (!requireNetns(t)) return;
    const { box, mark, env } = setup(t);
    const file = stack(
      box,
      `services:
  web:
    replicas: 2
    range: 20000-20009
    command: [${node}, ${JSON.stringify(SVC)}, --port, "{port}"]
    ready: http://127.0.0.1:{port}/health
`,
    );
    const run = join(box.dir, 'run');
    const d = q(box.dir);
    const r = await netnsSh(
      {},
      box,
      `( sh -c 'echo $$ > ${box.dir}/pid; exec "$@"' sh ${env} ${berthSh} up ${q(file)} --run-dir ${q(run)} --follow 2>&1; echo "RC=$?" > ${d}/rc ) | sed '/stack ready/q' > ${d}/seen &
P=$!
# The reader (sed) quits after the "stack ready" line: berth's output then goes to a closed pipe.
gone() { [ ! -e /proc/$1 ] || grep -q '^State:.*Z' /proc/$1/status 2>/dev/null; }
i=0; until gone $P || [ $i -ge 6000 ]; do sleep 0.01; i=$((i+1)); done
kill -INT $(cat ${d}/pid)
wait $P
cat ${d}/rc`,
    );
    assert.equal(kv(r.stdout).get('RC'), '130', r.stdout + r.stderr + readFileSync(join(box.dir, 'seen'), 'utf8'));
    assert.match(readFileSync(join(box.dir, 'seen'), 'utf8'), /stack ready/, 'the stack was up before its output went away');
    assert.deepEqual(endpoints(run).replicas.map((x: { state: string }) => x.state), ['exited', 'exited']);
    assert.deepEqual((await waitGone(mark, 2_000)).left, []);
  });

  test('berth run | head -1: supervision goes on; SIGTERM ends it with the service status, nothing left', async (t) => {
    if (!requireNetns(t)) return;
    const { box, mark, env } = setup(t);
    const d = q(box.dir);
    const r = await netnsSh(
      {},
      box,
      `{ sh -c 'echo $$ > ${box.dir}/pid; exec "$@"' sh ${env} ${berthSh} run --port 20000 --ready-file ${d}/ready.json -- ${node} ${q(SVC)} --port {port} --lines 20000; echo "RC=$?" > ${d}/rc; } 2>${d}/err | head -1 > ${d}/first &
P=$!
i=0; while [ ! -s ${d}/ready.json ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done
sleep 0.3
kill -TERM $(cat ${d}/pid)
wait $P
cat ${d}/rc`,
    );
    const err = readFileSync(join(box.dir, 'err'), 'utf8');
    assert.equal(kv(r.stdout).get('RC'), '0', err);
    assert.doesNotMatch(err, crashText);
    assert.equal(readFileSync(join(box.dir, 'first'), 'utf8'), 'line 1 of 20000\n');
    assert.deepEqual((await waitGone(mark, 2_000)).left, []);
  });

  test('berth up killed with SIGKILL: every service, the double-forked daemon too, is gone within a second of the grace; endpoints.json says so; leases are reclaimed', async (t) => {
    if (!requireNetns(t)) return;
    const { box, mark, env } = setup(t);
    const file = stack(
      box,
      `services:
  web:
    port: 20000
    command: [${node}, ${JSON.stringify(SVC)}, --port, "{port}"]
    ready: http://127.0.0.1:{port}/health
  daemon:
    port: 20001
    command: [${node}, ${JSON.stringify(DAEMON)}, --daemonize, --ignore-term, --port, "{port}"]
    stop_grace: 500ms
    depends_on: { web: ready }
`,
    );
    const run = join(box.dir, 'run');
    const d = q(box.dir);
    const r = await netnsSh(
      {},
      box,
      `${env} ${berthSh} up ${q(file)} --run-dir ${q(run)} 2>${d}/err & B=$!
i=0; until grep -q "stack ready" ${d}/err || [ $i -ge 1000 ]; do sleep 0.01; i=$((i+1)); done
echo "READY_SEEN=$(grep -c 'stack ready' ${d}/err)"
t0=$(date +%s%N)
kill -KILL $B
${waitGoneSh(mark)}
${berthSh} port --range 20000-20001 --count 2 > ${d}/reclaimed; echo "PORT_RC=$?"
echo "RECLAIMED=$(tr '\\n' ' ' < ${d}/reclaimed)"`,
    );
    const v = kv(r.stdout);
    assert.equal(v.get('READY_SEEN'), '1', readFileSync(join(box.dir, 'err'), 'utf8'));
    const goneMs = Number(v.get('GONE_MS'));
    t.diagnostic(`berth up SIGKILL → every service gone: ${goneMs} ms (stop_grace 500ms, the daemon ignores SIGTERM)`);
    assert.deepEqual((await waitGone(mark, 0)).left, [], 'nothing of the run is left');
    assert.ok(goneMs >= 500 && goneMs < 2_500, `gone after ${goneMs} ms: SIGKILL comes after the 500ms grace, within about a second of it`);
    assert.equal(v.get('PORT_RC'), '0', r.stderr);
    assert.equal(v.get('RECLAIMED'), '20000 20001 ', 'the dead berth\'s leases are reclaimed');
    const doc = endpoints(run);
    assert.equal(doc.ended?.by, 'watchdog');
    assert.deepEqual(doc.replicas.map((x: { state: string }) => x.state), ['exited', 'exited']);
    const events = readFileSync(join(run, 'events.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.match(events.at(-1).detail, /berth \(pid \d+\) died; its watchdog stopped the service/);
  });

  test('berth run killed with SIGKILL: a setsid daemon that ignores SIGTERM is killed after --stop-grace; a clean run leaves no watchdog', async (t) => {
    if (!requireNetns(t)) return;
    const { box, mark, env } = setup(t);
    const d = q(box.dir);
    const clean = `NO_ORPHANS=${randomUUID()}`;
    const r = await netnsSh(
      {},
      box,
      `${env} ${berthSh} run --port 20000 --stop-grace 300ms --ready-file ${d}/ready.json -- ${node} ${q(DAEMON)} --daemonize --ignore-term --port {port} >/dev/null 2>&1 & B=$!
i=0; while [ ! -s ${d}/ready.json ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done
t0=$(date +%s%N)
kill -KILL $B
${waitGoneSh(mark)}
${berthSh} port --port 20000 >/dev/null; echo "PORT_RC=$?"
env ${clean} ${berthSh} run --port 20001 --ready-file ${d}/ready2.json -- ${node} ${q(SVC)} --port {port} >/dev/null 2>&1 & B=$!
i=0; while [ ! -s ${d}/ready2.json ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done
kill -TERM $B; wait $B; echo "CLEAN_RC=$?"`,
    );
    const v = kv(r.stdout);
    const goneMs = Number(v.get('GONE_MS'));
    t.diagnostic(`berth run SIGKILL → daemon gone: ${goneMs} ms (--stop-grace 300ms, SIGTERM ignored)`);
    assert.ok(goneMs >= 300 && goneMs < 2_300, `${goneMs} ms`);
    assert.deepEqual((await waitGone(mark, 0)).left, []);
    assert.equal(v.get('PORT_RC'), '0', 'the port and its lease are free again');
    assert.equal(v.get('CLEAN_RC'), '0');
    assert.deepEqual((await waitGone(clean, 2_000)).left, [], 'after a clean exit the watchdog ends too');
  });
});
