/**
 * A port of a job's set held at its start by a process the stack did not start (here: a
 * python3 server left running, as a rank of a previous job or a dead container's vLLM would
 * be): berth up exits 69 naming it with pid, uid, command and start time, "not started by this
 * stack". Real processes in a network namespace of the test's.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { requireNetns } from './helpers/netns.js';
import { box } from './fixtures/up/harness.js';
import { berthSh, kv, netnsSh, q, realPython } from './fixtures/services/launch-harness.js';

test('an orphan on a job\'s shared port: 69 naming pid, uid, command, start time, "not started by this stack"', async (t) => {
  if (!requireNetns(t)) return;
  const b = box(`
services:
  trainer:
    job: true
    port: 29500
    ports: { master: shared }
    command: [sleep, "1"]
`);
  t.after(() => b.cleanup());
  const r = await netnsSh({}, { dir: b.dir, cleanup: b.cleanup } as never, `
${q(realPython())} -m http.server 29500 --bind 127.0.0.1 > /dev/null 2>&1 & O=$!
echo "ORPHAN=$O"
i=0; until grep -q ':733C ' /proc/net/tcp || [ $i -ge 3000 ]; do sleep 0.01; i=$((i+1)); done
${berthSh} up ${q(b.stack)} --run-dir ${q(b.runDir)} 2> ${q(`${b.dir}/err`)}; echo "RC=$?"
kill $O
`, 60_000);
  const v = kv(r.stdout);
  const err = (await import('node:fs')).readFileSync(`${b.dir}/err`, 'utf8');
  assert.equal(v.get('RC'), '69', err);
  assert.match(err, new RegExp(`port 29500: pid ${v.get('ORPHAN')} uid ${process.getuid!()} \\(.*http\\.server 29500 --bind 127\\.0\\.0\\.1\\), started \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ \\(\\d+s ago\\): not started by this stack`));
});
