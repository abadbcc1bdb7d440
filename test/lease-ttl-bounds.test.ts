/**
 * Every duration is bounded where it is parsed (issue 32 §8): an absurd `--ttl` (300000000h)
 * is a usage error (64) before anything is leased, instead of a record that readers refuse
 * (shown as "pending", and not releasable by its own user). The longest ttl allowed makes a
 * record that readers read back as a live lease with its expiry.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BERTH } from './helpers/cli.js';
import { requireNetns, runInNetns } from './helpers/netns.js';
import { formatPayload, MAX_STAMP_MS, parsePayload } from '../src/allocate/lease-record.js';
import { reserve } from '../src/source/reserve.js';
import { MAX_TTL_MS } from '../src/util/duration.js';

test('berth port --ttl beyond 8784h is 64 with nothing leased; 8784h is a live lease with its expiry', async (t) => {
  if (!requireNetns(t)) return;
  const script = [
    `"$NODE" "$BERTH" port --port 20201 --ttl 300000000h; echo "RC_absurd=$?"`,
    `"$NODE" "$BERTH" port --port 20202 --ttl 99999999999999999999999h; echo "RC_huge=$?"`,
    `"$NODE" "$BERTH" port --port 20203 --ttl 8785h; echo "RC_over=$?"`,
    `echo "LEFT=$(grep -c '@berth/v1/p/' /proc/net/unix)"`,
    `"$NODE" "$BERTH" port --port 20204 --ttl 8784h >/dev/null; echo "RC_max=$?"`,
    `"$NODE" "$BERTH" leases --json`,
    `"$NODE" "$BERTH" release --port 20204; echo "RC_release=$?"`,
    `"$NODE" "$BERTH" run --port 20205 --ready-timeout 300000000h -- true; echo "RC_ready=$?"`,
  ].join('\n');
  const r = await runInNetns({}, ['sh', '-c', script], { env: { ...process.env, NODE: process.execPath, BERTH, NO_COLOR: '1' }, timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  for (const k of ['absurd', 'huge', 'over', 'ready']) assert.match(r.stdout, new RegExp(`^RC_${k}=64$`, 'm'), `${k}\n${r.stdout}${r.stderr}`);
  assert.match(r.stderr, /--ttl 300000000h is too long: at most 8784h/);
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  assert.match(r.stdout, /^LEFT=0$/m, r.stdout);
  assert.match(r.stdout, /^RC_max=0$/m, r.stdout + r.stderr);
  const json = r.stdout.slice(r.stdout.indexOf('['), r.stdout.lastIndexOf(']') + 1);
  const leases = JSON.parse(json) as { port: number; state: string; expiresAt?: number }[];
  const l = leases.find((x) => x.port === 20204);
  assert.ok(l, json);
  assert.equal(l.state, 'live', 'readers accept what the writer wrote');
  assert.ok(l.expiresAt! > Date.now() + MAX_TTL_MS - 120_000 && l.expiresAt! <= Date.now() + MAX_TTL_MS, `expiry ${l.expiresAt}`);
  assert.match(r.stdout, /^RC_release=0$/m, r.stdout + r.stderr);
});

test('the library bounds ttl alike (64), and a record field readers would refuse is never written', async () => {
  for (const ttl of ['300000000h', '8785h']) {
    await assert.rejects(reserve({ range: '20210-20219', ttl }), (e: Error & { exitCode?: number }) => e.exitCode === 64 && /too long: at most 8784h/.test(e.message));
  }
  await assert.rejects(reserve({ range: '20210-20219', ttlMs: Infinity }), (e: Error & { exitCode?: number }) => e.exitCode === 64);
  const rec = { uid: 0, pid: 1, kind: 'single' as const, ports: [20000] };
  assert.equal(parsePayload(formatPayload({ ...rec, expiresAt: MAX_STAMP_MS }))?.expiresAt, MAX_STAMP_MS);
  assert.throws(() => formatPayload({ ...rec, expiresAt: MAX_STAMP_MS + 1 }), /readers would refuse/);
});
