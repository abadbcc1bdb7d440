/**
 * The lease protocol's names (src/allocate/lease-protocol.ts, lease-record.ts, lease-table.ts; docs/leases.md) as data:
 * formatting, parsing, and what hostile or malformed names can and cannot do. Pure.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { leasesOf } from '../src/allocate/lease-list.js';
import { NAME_BYTES, portName } from '../src/allocate/lease-protocol.js';
import { escapeValue, formatPorts, parsePayload, parsePorts, recordNames, unescapeValue, type RecordInfo } from '../src/allocate/lease-record.js';
import { leaseTable, listNames, type ListedName } from '../src/allocate/lease-table.js';
import { knownLeases } from '../src/allocate/competitors.js';
import { firstCover } from '../src/allocate/lease-cover.js';
import { seeded } from './helpers/seeded.js';

/** A /proc/net/unix line for an abstract name as Node binds it (padded with NULs, shown as "@"). */
function line(inode: number, name: string, padded = true): string {
  const path = padded ? `@${name}${'@'.repeat(NAME_BYTES - name.length)}` : `@${name}`;
  return `0000000000000000: 00000002 00000000 00010000 0001 01 ${inode} ${path}`;
}

const HEAD = 'Num       RefCount Protocol Flags    Type St Inode Path';

function table(lines: string[]) {
  return leaseTable(listNames([HEAD, ...lines, ''].join('\n')));
}

const rec = (r: Partial<RecordInfo> & { ports: number[] }): RecordInfo => ({ uid: 1000, pid: 4242, kind: 'single', ...r });

describe('lease names', () => {
  test('a record fits its names (107 bytes each), splits into parts, and reads back whole', () => {
    const info = rec({ owner: 77, expiresAt: 1_800_000_000_000, job: '123', step: '0', kind: 'block', ports: [20000, 20001, 20002, 20005], name: 'stack.yaml:engine/0/dist — ü' });
    const names = recordNames(info, 'abcdefghij');
    assert.ok(names.length >= 2, 'this payload needs two parts');
    for (const n of names) assert.ok(Buffer.byteLength(n) <= NAME_BYTES, `${n} is ${Buffer.byteLength(n)} bytes`);
    const t = table([line(1, portName(20000)), line(2, portName(20001)), line(3, portName(20002)), line(4, portName(20005)), ...names.map((n, i) => line(10 + i, n))]);
    assert.equal(t.records.length, 1);
    const { id, inodes, ...back } = t.records[0]!;
    assert.equal(id, 'abcdefghij');
    assert.equal(inodes.length, names.length);
    assert.deepEqual(back, { ...info, ports: [{ lo: 20000, hi: 20002 }, { lo: 20005, hi: 20005 }] });
    assert.equal(formatPorts(info.ports), '20000-20002,20005');
  });

  test('a stack replica’s record is one name: each single costs two descriptors', () => {
    const names = recordNames(rec({ ports: [20017], name: 'stack.yaml:engine/12/port' }));
    assert.equal(names.length, 1);
  });

  test('ports and values: canonical forms only', () => {
    assert.deepEqual(parsePorts('20000-20002,20005'), [{ lo: 20000, hi: 20002 }, { lo: 20005, hi: 20005 }]);
    for (const bad of ['', '0', '65536', '020000', '20002-20000', '20000,20000', '20005,20000', '20000-20005,20003', '1-2-3', 'x']) assert.equal(parsePorts(bad), undefined, bad);
    assert.equal(escapeValue('a/b c@%'), 'a%2Fb%20c%40%25');
    assert.equal(unescapeValue('a%2Fb%20c%40%25'), 'a/b c@%');
    assert.equal(unescapeValue('a/b'), undefined);
    assert.equal(unescapeValue('%E2%82'), undefined, 'broken UTF-8 is not a value');
    assert.equal(parsePayload('uid=0/pid=1/kind=single/ports=1/uid=2'), undefined, 'a field twice');
    assert.equal(parsePayload('uid=0/pid=1/kind=other/ports=1'), undefined);
    assert.equal(parsePayload('uid=-1/pid=1/kind=single/ports=1'), undefined);
  });

  test('a port name without a record is a set in progress, named by the allocator whose range holds it', () => {
    const t = table([line(1, portName(20000)), line(2, portName(30000)), line(3, 'berth/v1/a/1000/4242/20000-20099/k3j2h1')]);
    const ls = leasesOf(t, 'net:[1]');
    assert.deepEqual(ls.map((l) => [l.port, l.state, l.createdBy, l.uid]), [[20000, 'pending', 4242, 1000], [30000, 'pending', 0, undefined]]);
    const known = knownLeases(t, () => true);
    assert.deepEqual(known.get(20000), { pending: { pid: 4242 }, uid: 1000 });
    assert.deepEqual(known.get(30000), { pending: {} });
  });

  test('hostile names: forged lines, twins, duplicates and huge junk only take or label ports', () => {
    const good = recordNames(rec({ ports: [20001], name: 'mine' }), 'goodrecord');
    const lines = [
      line(1, portName(20001)),
      ...good.map((n, i) => line(10 + i, n)),
      // Unpadded twin of a port name (another implementation that forgot the padding): the port is taken all the same.
      line(2, portName(20002), false),
      // A name with a newline adds a line of its own making: it can only claim a port too.
      `${line(3, 'evil')}\n${line(4, portName(20003))}`,
      // Two parts in one place: not a record anyone can trust.
      line(5, 'berth/v1/r/dup/0/1/uid=0/pid=1/kind=single/ports=20001/name=hijack'),
      line(6, 'berth/v1/r/dup/0/1/uid=0/pid=1/kind=single/ports=20001/name=hijack2'),
      // Malformed: leading zero, out of range, trailing junk, a part beyond its count, a missing part.
      line(7, 'berth/v1/p/020004'),
      line(8, 'berth/v1/p/70000'),
      line(9, 'berth/v1/p/20005x'),
      line(20, 'berth/v1/r/late/3/2/uid=0/pid=1/kind=single/ports=20001'),
      line(21, 'berth/v1/r/half/0/2/uid=0/pid=1/kind=single/ports=20001'),
      line(22, `berth/v1/r/${'x'.repeat(96)}`),
    ];
    const t = table(lines);
    assert.deepEqual([...t.ports.keys()].sort(), [20001, 20002, 20003]);
    assert.equal(t.records.length, 1);
    assert.equal(t.records[0]!.name, 'mine');
    const ls = leasesOf(t, 'n');
    assert.equal(ls.find((l) => l.port === 20001)!.state, 'live');
    assert.equal(ls.find((l) => l.port === 20003)!.state, 'pending');
  });

  test('8,000 forged records each claiming 1-65535 are kept as runs: the table costs what the names cost (issue 32 item 4)', () => {
    const forged = Array.from({ length: 8000 }, (_, k) => line(1000 + k, `berth/v1/r/f${k.toString(36)}/0/1/uid=0/pid=1/kind=block/ports=1-65535`));
    const mine = recordNames(rec({ ports: [20001], name: 'mine' }), 'goodrecord');
    const t = table([line(1, portName(20001)), line(2, portName(20002)), ...forged, ...mine.map((n, i) => line(10 + i, n)), line(3, 'berth/v1/a/0/1/1-65535/aaaaaa')]);
    assert.equal(t.records.length, 8001);
    assert.deepEqual(t.records[0]!.ports, [{ lo: 1, hi: 65535 }], 'a claim of every port is one run, not 65535 numbers');
    const t0 = process.hrtime.bigint();
    const ls = leasesOf(t, 'n');
    const known = knownLeases(t, () => true);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    // The first record naming a port labels it (the forged ones came first), as before.
    assert.deepEqual(ls.map((l) => [l.port, l.state, l.uid]), [[20001, 'live', 0], [20002, 'live', 0]]);
    assert.equal(known.get(20001)!.uid, 0);
    assert.ok(ms < 2000, `joining 8,000 whole-range records with 2 port names took ${ms} ms`);
  });

  test('firstCover: the first claim in order covering a port wins, every port once', () => {
    const rng = seeded(32);
    for (let k = 0; k < 200; k++) {
      const ports = Array.from({ length: 1 + Math.floor(rng() * 30) }, () => 1 + Math.floor(rng() * 200));
      const claims = Array.from({ length: Math.floor(rng() * 8) }, () => {
        const runs: { lo: number; hi: number }[] = [];
        let at = 1 + Math.floor(rng() * 50);
        while (at <= 200 && runs.length < 4) {
          const hi = Math.min(200, at + Math.floor(rng() * 40));
          runs.push({ lo: at, hi });
          at = hi + 2 + Math.floor(rng() * 30);
        }
        return runs;
      });
      const got = firstCover(new Set(ports), claims, (c) => c);
      for (const p of new Set(ports)) {
        const want = claims.find((c) => c.some((r) => r.lo <= p && p <= r.hi));
        assert.equal(got.get(p), want, `port ${p}`);
      }
    }
  });

  test('property: any bytes in /proc/net/unix never crash the reader and never free a port whose name is listed', () => {
    const rng = seeded(19);
    const alphabet = 'berth/v1/pra0123456789-=,%@\n :xuidkndslog';
    for (let k = 0; k < 300; k++) {
      const junk: string[] = [];
      for (let j = 0; j < 5; j++) {
        let n = 'berth/v1/';
        const len = Math.floor(rng() * 100);
        for (let i = 0; i < len; i++) n += alphabet[Math.floor(rng() * alphabet.length)];
        junk.push(line(100 + j, n.slice(0, NAME_BYTES), rng() < 0.8));
      }
      const port = 1 + Math.floor(rng() * 65535);
      const t = table([...junk, line(1, portName(port))]);
      assert.ok(t.ports.has(port));
      const names: ListedName[] = listNames(junk.join('\n'));
      assert.ok(Array.isArray(names));
    }
  });
});
