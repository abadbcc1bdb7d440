/**
 * A band that overlaps the ephemeral range: berth run only ever hands out its ports that
 * lie outside the unreserved ephemeral range (a reserved port inside it is fine), also when
 * several services start at once; a band wholly inside it is refused with exit 69.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireNetns } from './helpers/netns.js';
import { berthSh, kv, netnsSh, q, sandbox, serviceSh, waitFile } from './fixtures/services/launch-harness.js';

test('band partly inside the ephemeral range: concurrent runs get only ports outside it (or reserved)', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const layout = join(box.dir, 'layout.yaml');
  writeFileSync(layout, 'bands:\n  svc: { range: 20990-21009 }\n  inside: { range: 20100-20199 }\n');
  // All five are up at the same time (each is stopped only once every one is ready), so
  // distinct ports mean the allocator kept them apart, not that a port was freed and reused.
  const rf = (i: number) => join(box.dir, `ready${i}.json`);
  const run = (i: number) =>
    `${berthSh} run --layout ${q(layout)} --band svc --name svc${i} --ready-file ${q(rf(i))} --ready http://127.0.0.1:{port}/ -- ${serviceSh} --host 0.0.0.0 > /dev/null & P${i}=$!`;
  const r = await netnsSh({ ephemeral: '20000 20999', reserved: '20995' }, box, `
${[1, 2, 3, 4, 5].map(run).join('\n')}
${[1, 2, 3, 4, 5].map((i) => waitFile(rf(i))).join('\n')}
for i in 1 2 3 4 5; do sed -n 's/.*"port": \\([0-9]*\\).*/PORT_'$i'=\\1/p' ${q(box.dir)}/ready$i.json; done
kill -TERM $P1 $P2 $P3 $P4 $P5
for p in $P1 $P2 $P3 $P4 $P5; do wait $p; echo "RC_$p=$?"; done
${berthSh} run --layout ${q(layout)} --band inside -- ${serviceSh}
echo "INSIDE=$?"
`, 60_000);
  const v = kv(r.stdout);
  const codes = [...v].filter(([k]) => k.startsWith('RC_')).map(([, c]) => c);
  assert.deepEqual(codes, ['143', '143', '143', '143', '143'], r.stdout + r.stderr);
  const ports = [1, 2, 3, 4, 5].map((i) => Number(v.get(`PORT_${i}`)));
  assert.equal(new Set(ports).size, 5, `distinct ports: ${ports}`);
  for (const p of ports) assert.ok(p === 20995 || (p >= 21000 && p <= 21009), `port ${p} is in the unreserved ephemeral range 20000-20999`);
  assert.ok(ports.includes(20995), 'the reserved port inside the ephemeral range is usable');
  assert.equal(kv(r.stdout).get('INSIDE'), '69');
  assert.match(r.stderr, /no usable port in band inside [^\n]*\(20100-20199\)[\s\S]*100 inside the ephemeral range 20000-20999/);
});
