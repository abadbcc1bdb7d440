/**
 * What `berth release` may end (src/allocate/release-plan.ts), as data: kernel facts of the
 * processes holding a lease's socket decide; a record's uid only words a message. Pure.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HOLDER_ARGV0 } from '../src/allocate/lease-holder.js';
import { isTargeted, splitHolders, verdict, watchedPid, type HoldingProc, type ReleaseCandidate } from '../src/allocate/release-plan.js';
import { NAME_BYTES } from '../src/allocate/lease-protocol.js';
import { listNames, provenPortInodes } from '../src/allocate/lease-table.js';

const NS = 4026531836;
const tailHolder = (pid: number, owner: number, uid = 1000, pidns = NS): HoldingProc => ({ pid, uid, pidns, ppid: 1, argv: [HOLDER_ARGV0, `--pid=${owner}`, '-s', '0.2', '-f', '/dev/null'] });
const timeoutHolder = (pid: number, owner: number, uid = 1000): HoldingProc[] => [
  { pid, uid, pidns: NS, ppid: 1, argv: [HOLDER_ARGV0, '300.000', 'tail', `--pid=${owner}`, '-s', '0.2', '-f', '/dev/null'] },
  { pid: pid + 1, uid, pidns: NS, ppid: pid, argv: ['tail', `--pid=${owner}`, '-s', '0.2', '-f', '/dev/null'] },
];
const lease = (procs: HoldingProc[], more: Partial<ReleaseCandidate> = {}): ReleaseCandidate => ({ port: 20000, state: 'live', inode: 77, procs, ...more });
const me = { uid: 1000, root: false, pidns: NS };
const root = { uid: 0, root: true, pidns: NS };

describe('release plan', () => {
  test('the owner a holder watches is read from its argv, in both holder forms', () => {
    assert.equal(watchedPid(tailHolder(5, 4242).argv), 4242);
    assert.equal(watchedPid(timeoutHolder(5, 4242)[0]!.argv), 4242);
    assert.equal(watchedPid([HOLDER_ARGV0, '60.000']), undefined, 'a sleep holder watches nobody');
    assert.equal(watchedPid(['bash', '--pid=1']), undefined);
  });

  test('a timeout holder’s tail is part of it; another process holding the socket is not', () => {
    const [t, child] = timeoutHolder(10, 4242);
    assert.deepEqual(splitHolders([t!, child!]).others, []);
    const stranger: HoldingProc = { pid: 99, uid: 1000, ppid: 1, argv: ['node', 'berth.cjs', 'run'] };
    assert.deepEqual(splitHolders([t!, child!, stranger]).others, [stranger]);
    const foreignTail: HoldingProc = { ...child!, uid: 2000 };
    assert.deepEqual(splitHolders([t!, foreignTail]).others, [foreignTail], 'a tail of another uid is no part of it');
  });

  test('--all, --owner and --job target by kernel facts, never by the record', () => {
    const mine = lease([tailHolder(10, 4242)], { claimedUid: 0 });
    assert.ok(isTargeted(mine, { all: true }, me), 'mine by the holder’s uid, whatever the record claims');
    assert.ok(!isTargeted(mine, { all: true }, root), 'root’s --all is root’s processes only');
    assert.ok(isTargeted(mine, { ownerPid: 4242 }, root));
    assert.ok(!isTargeted(lease([tailHolder(10, 4242, 1000, NS + 1)]), { ownerPid: 4242 }, root), 'another pid namespace’s 4242 is not ours');
    assert.ok(!isTargeted(mine, { jobId: '777' }, root));
    assert.ok(isTargeted(lease([{ ...tailHolder(10, 4242), job: '777' }]), { jobId: '777' }, root));
    assert.ok(!isTargeted(lease([tailHolder(10, 4242)], { inode: undefined }), { all: true }, me), 'an unproven name is nobody’s');
  });

  test('verdicts: others’ holders refused to users, strangers named, holders signalled', () => {
    assert.deepEqual(verdict(lease([tailHolder(10, 1, 2000)]), me), { port: 20000, act: 'refuse', why: 'other-user', uid: 2000 });
    assert.deepEqual(verdict(lease([tailHolder(10, 1, 2000)]), root), { port: 20000, act: 'signal', pids: [10] });
    assert.deepEqual(verdict(lease(timeoutHolder(10, 1)), me), { port: 20000, act: 'signal', pids: [10] });
    assert.deepEqual(verdict(lease([], { claimedUid: 0 }), me), { port: 20000, act: 'refuse', why: 'other-user', uid: 0 });
    assert.deepEqual(verdict(lease([], { inode: undefined }), root), { port: 20000, act: 'refuse', why: 'not-proven' });
    const v = verdict(lease([{ pid: 99, uid: 1000, argv: ['node', 'x'] }]), me);
    assert.equal(v.act, 'held-by');
  });

  test('only padded port names prove an inode: a line forged by a newline never is', () => {
    const pad = (n: string) => `@${n}${'@'.repeat(NAME_BYTES - n.length)}`;
    const row = (inode: number, path: string) => `0000000000000000: 00000002 00000000 00010000 0001 01 ${inode} ${path}`;
    const forgedInner = row(41, '@berth/v1/p/25000');
    const outer = `x\n${forgedInner.slice(0)}`;
    const text = ['Num RefCount', row(41, pad('berth/v1/p/20003')), row(42, `@${outer}${'@'.repeat(Math.max(0, NAME_BYTES - outer.length))}`), ''].join('\n');
    const proven = provenPortInodes(listNames(text));
    assert.deepEqual([...proven], [[20003, 41]]);
  });
});
