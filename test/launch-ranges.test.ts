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
import { berthSh, kv, netnsSh, q, sandbox, serviceSh } from './fixtures/services/launch-harness.js';

test('band partly inside the ephemeral range: concurrent runs get only ports outside it (or reserved)', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  try {
    const layout = join(box.dir, 'layout.yaml');
    writeFileSync(layout, 'bands:\n  svc: { range: 20990-21009 }\n  inside: { range: 20100-20199 }\n');
    const run = (i: number) =>
      `${berthSh} run --layout ${q(layout)} --band svc --name svc${i} --ready http://127.0.0.1:{port}/ -- ${serviceSh} --host 0.0.0.0 --exit-after-served 300 > /dev/null 2>> ${q(join(box.dir, 'err'))} & P${i}=$!`;
    const r = await netnsSh({ ephemeral: '20000 20999', reserved: '20995' }, box, `
${[1, 2, 3, 4, 5].map(run).join('\n')}
for p in $P1 $P2 $P3 $P4 $P5; do wait $p; echo "RC_$p=$?"; done
cat ${q(join(box.dir, 'err'))} >&2
${berthSh} run --layout ${q(layout)} --band inside -- ${serviceSh}
echo "INSIDE=$?"
`, 60_000);
    const codes = [...kv(r.stdout)].filter(([k]) => k.startsWith('RC_')).map(([, v]) => v);
    assert.deepEqual(codes, ['0', '0', '0', '0', '0'], r.stdout + r.stderr);
    const ports = [...r.stderr.matchAll(/svc\d ready on 127\.0\.0\.1:(\d+) /g)].map((m) => Number(m[1]));
    assert.equal(ports.length, 5, r.stderr);
    assert.equal(new Set(ports).size, 5, `distinct ports: ${ports}`);
    for (const p of ports) assert.ok(p === 20995 || p >= 21000, `port ${p} is in the unreserved ephemeral range 20000-20999`);
    assert.ok(ports.includes(20995), 'the reserved port inside the ephemeral range is usable');
    assert.equal(kv(r.stdout).get('INSIDE'), '69');
    assert.match(r.stderr, /no usable port in band inside [^\n]*\(20100-20199\)[\s\S]*100 inside the ephemeral range 20000-20999/);
  } finally {
    box.cleanup();
  }
});
