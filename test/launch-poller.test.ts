/**
 * The shared socket-table poller (src/launch/port-watch.ts): launches waiting for their
 * ports share one read of /proc/net/tcp{,6} per tick, each gets only its port's rows, an
 * answer always comes from a read made after the question, hurry() answers now, and an
 * unreadable table is an error rather than an endless wait. On a copy of a fixture /proc.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { TablePoller } from '../src/launch/port-watch.js';

const FIXTURE = join(import.meta.dirname, 'fixtures', 'proc-basic');

function procCopy(): { root: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'berth-poller-'));
  const root = join(dir, 'proc');
  cpSync(FIXTURE, root, { recursive: true });
  return { root, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

const key = (r: { family: number; localPort: number; state: string; inode: number }) => `${r.family}:${r.localPort}:${r.state}:${r.inode}`;

test('one read serves every waiting look, each with its own port\'s listeners', async (t) => {
  const p = procCopy();
  t.after(() => p.cleanup());
  const poller = new TablePoller(p.root);
  const a = poller.look(41005, 0);
  const b = poller.look(41003, 0);
  const c = poller.look(41001, 50);
  const [ra, rb, rc] = await Promise.all([a.rows, b.rows, c.rows]);
  assert.equal(poller.reads, 1, 'a later-due look is answered by the earlier one\'s read');
  assert.deepEqual(ra.map(key), ['4:41005:LISTEN:9232']);
  // Only listeners: ownership is decided by them, and the kernel then skips its connection hash.
  assert.deepEqual(rb.map((r) => `${r.family}:${r.localPort}:${r.state}`), ['6:41003:LISTEN']);
  assert.ok(rc.length > 0 && rc.every((r) => r.localPort === 41001 && r.state === 'LISTEN'));
  assert.deepEqual(await poller.look(41999, 0).rows, []);
  assert.equal(poller.reads, 2);
});

test('an answer comes from a read made after the look; hurry() answers now', async (t) => {
  const p = procCopy();
  t.after(() => p.cleanup());
  const poller = new TablePoller(p.root);
  assert.deepEqual((await poller.look(41005, 0).rows).map(key), ['4:41005:LISTEN:9232']);
  // The table changes right after the question: the answer must show the change.
  const look = poller.look(41005, 5_000);
  const tcp = join(p.root, 'net', 'tcp');
  writeFileSync(tcp, readFileSync(tcp, 'latin1').split('\n').filter((l) => !l.includes(':A02D ')).join('\n'), 'latin1');
  const t0 = performance.now();
  setTimeout(() => look.hurry(), 20);
  const after = await look.rows;
  const waited = performance.now() - t0;
  assert.ok(waited < 1_000, `hurry() answered after ${waited.toFixed(0)} ms, not at the 5 s due time`);
  assert.deepEqual(after, []);
  assert.equal(poller.reads, 2);
});

test('an unreadable table fails the looks (74) instead of leaving them waiting', async (t) => {
  const p = procCopy();
  t.after(() => p.cleanup());
  rmSync(join(p.root, 'net', 'tcp'));
  const poller = new TablePoller(p.root);
  await assert.rejects(poller.look(41005, 0).rows, (e: Error & { exitCode: number }) => e.exitCode === 74 && /net\/tcp/.test(e.message));
});
