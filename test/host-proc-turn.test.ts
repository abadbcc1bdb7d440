import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forgetTurn, pidsThisTurn, statThisTurn } from '../src/host/proc-turn.js';

// A fake /proc: one directory per pid with a stat file.
function fakeProc(): { root: string; add(pid: number, stat: string): void; done(): void } {
  const root = mkdtempSync(join(tmpdir(), 'berth-proc-turn-'));
  return {
    root,
    add(pid, stat) {
      mkdirSync(join(root, String(pid)), { recursive: true });
      writeFileSync(join(root, String(pid), 'stat'), stat);
    },
    done: () => rmSync(root, { recursive: true, force: true }),
  };
}
const nextTurn = () => new Promise((r) => setImmediate(r));

test('pidsThisTurn: one listing per turn; the next turn lists again; forgetTurn lists now', async () => {
  const p = fakeProc();
  try {
    p.add(10, '10 (a) S 1 10 10 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0');
    assert.deepEqual(pidsThisTurn(p.root), [10]);
    p.add(11, '11 (b) S 1 11 11 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 101 0 0');
    assert.deepEqual(pidsThisTurn(p.root), [10], 'same turn: the first listing');
    forgetTurn(p.root);
    assert.deepEqual(pidsThisTurn(p.root).sort(), [10, 11]);
    p.add(12, '12 (c) S 1 12 12 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 102 0 0');
    await nextTurn();
    assert.deepEqual(pidsThisTurn(p.root).sort(), [10, 11, 12], 'a new turn lists again');
  } finally {
    p.done();
  }
});

test('statThisTurn: read once per turn; a pid that could not be read is read again', async () => {
  const p = fakeProc();
  try {
    assert.equal(statThisTurn(20, p.root), undefined);
    p.add(20, 'first');
    assert.equal(statThisTurn(20, p.root), 'first', 'a miss is not kept (a spawn may follow in the same turn)');
    writeFileSync(join(p.root, '20', 'stat'), 'second');
    assert.equal(statThisTurn(20, p.root), 'first', 'same turn: the first read');
    await nextTurn();
    assert.equal(statThisTurn(20, p.root), 'second');
  } finally {
    p.done();
  }
});
