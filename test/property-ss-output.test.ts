/**
 * The parser of `ss -tanHOe` output (src/host/ss-output.ts): on fixtures captured from
 * Debian's iproute2 (test/fixtures/ss-debian: ss output and /proc/net/tcp{,6} of the same
 * namespace at the same moment, made by test/fixtures/scripts/socket-states.py) it gives the
 * /proc parser's rows; and as properties: any row ss can print, in any of its address forms and
 * paddings, with any trailing details, parses back to that row; a line cut short is skipped,
 * never misread; arbitrary text never throws.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { parseIPv6, parseSsOutput, SS_STATE_NAME, ssArgs } from '../src/host/ss-output.js';
import { formatIPv6 } from '../src/host/proc-net-address.js';
import { parseTcpTable } from '../src/host/socket-table.js';
import type { SocketRow, TcpState } from '../src/host/host-map.js';
import { holds } from './helpers/property.js';

const dir = join(import.meta.dirname, 'fixtures', 'ss-debian');
const read = (f: string) => readFileSync(join(dir, f), 'latin1');
const key = (r: SocketRow) => `${r.family} ${r.localAddress} ${r.localPort} ${r.remoteAddress} ${r.remotePort} ${r.state} ${r.uid} ${r.inode}`;
const keys = (rows: SocketRow[]) => rows.map(key).sort();
const proc = () => [...parseTcpTable(read('tcp'), 4, { littleEndian: true }).rows, ...parseTcpTable(read('tcp6'), 6, { littleEndian: true }).rows];

test('Debian ss fixtures: the same rows as /proc/net/tcp{,6} of the same moment', () => {
  assert.match(read('VERSION'), /iproute2-6\.1\.0/);
  const all = parseSsOutput(read('all.txt'));
  assert.equal(all.skipped, 0);
  assert.equal(all.rows.length, 30);
  assert.deepEqual(keys(all.rows), keys(proc()));
  // `state listening` has no state column: the caller names it.
  const listening = parseSsOutput(read('listening.txt'), { onlyState: 'LISTEN' });
  assert.equal(listening.skipped, 0);
  assert.deepEqual(keys(listening.rows), keys(proc().filter((r) => r.state === 'LISTEN')));
  assert.equal(parseSsOutput(read('listening.txt')).skipped, listening.rows.length, 'without onlyState the lines are not guessed');
  const range = parseSsOutput(read('range.txt'));
  assert.deepEqual(keys(range.rows), keys(proc().filter((r) => r.localPort >= 20000 && r.localPort <= 20005)));
});

test('ssArgs: one kernel filter term per range', () => {
  assert.deepEqual(ssArgs(undefined, true), ['-t', '-a', '-n', '-H', '-O', '-e', 'state', 'listening']);
  assert.deepEqual(ssArgs([{ lo: 80, hi: 80 }, { lo: 20000, hi: 20099 }], false).slice(6), ['state', 'all', '( sport = :80 or ( sport >= :20000 and sport <= :20099 ) )']);
  assert.throws(() => ssArgs([], false), /no port range/);
});

test('parseIPv6 reads every textual form of an address', () => {
  const cases: [string, string][] = [
    ['::', '::'],
    ['::1', '::1'],
    ['::ffff:127.0.0.1', '::ffff:127.0.0.1'],
    ['0:0:0:0:0:ffff:7f00:1', '::ffff:127.0.0.1'],
    ['::127.0.0.2', '::7f00:2'],
    ['fe80::1:0:0:1', 'fe80::1:0:0:1'],
    ['FE80:0:0:0:0:0:0:1', 'fe80::1'],
    ['1:0:0:2:0:0:0:3', '1:0:0:2::3'],
    ['1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8'],
  ];
  for (const [text, canon] of cases) assert.equal(formatIPv6(parseIPv6(text)!), canon, text);
  for (const bad of ['', ':', ':::', '1::2::3', '1:2:3:4:5:6:7:8:9', '12345::', '::g', '1:2:3:4:5:6:7', '::1.2.3', '::256.0.0.1', '1.2.3.4']) {
    assert.equal(parseIPv6(bad), undefined, bad);
  }
});

const STATES = Object.keys(SS_STATE_NAME) as TcpState[];
const bytes16 = fc.uint8Array({ minLength: 16, maxLength: 16 });

/** An address of either family, with the text ss may print for it (one of several forms). */
const address = fc.oneof(
  fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map(([a, b, c, d]) => ({ family: 4 as const, text: `${a}.${b}.${c}.${d}`, canon: `${a}.${b}.${c}.${d}` })),
  fc.tuple(bytes16, fc.constantFrom('full', 'canon', 'upper')).map(([b, form]) => {
    const groups = [...Array(8).keys()].map((k) => ((b[2 * k]! << 8) | b[2 * k + 1]!).toString(16));
    const canon = formatIPv6(b);
    const text = form === 'full' ? groups.join(':') : form === 'upper' ? canon.toUpperCase() : canon;
    return { family: 6 as const, text: `[${text}]`, canon };
  }),
  fc.constant({ family: 6 as const, text: '*', canon: '::' }),
  fc.nat(255).map((d) => ({ family: 6 as const, text: `[::ffff:10.0.0.${d}]`, canon: `::ffff:10.0.0.${d}` })),
);

const pad = fc.integer({ min: 1, max: 12 }).map((n) => ' '.repeat(n));
const junk = fc.string({ unit: fc.constantFrom('a', 'z', '/', ':', ' ', 'u', 'i', 'd', 'n', 'o', '(', ')', '1', '-', '>', '<') , maxLength: 40 });

const line = fc
  .record({
    state: fc.constantFrom(...STATES.filter((s) => s !== 'UNKNOWN')),
    pair: fc.oneof(address.map((a) => [a, a] as const), fc.tuple(address, address).filter(([a, b]) => a.family === b.family)),
    lport: fc.nat(65535),
    rport: fc.nat(65535),
    uid: fc.oneof(fc.constant(0), fc.nat(4_000_000_000)),
    inode: fc.nat(4_000_000_000),
    ifname: fc.option(fc.constantFrom('lo', 'eth0', 'ib0.8001', 'veth-a_b'), { nil: undefined }),
    timer: fc.option(fc.constantFrom('timer:(keepalive,1min,0)', 'timer:(timewait,59sec,0)', 'timer:(on,200ms,1)'), { nil: undefined }),
    tail: junk,
    pads: fc.array(pad, { minLength: 6, maxLength: 6 }),
    noStateColumn: fc.boolean(),
  })
  .map((g) => {
    const [l, r] = g.pair;
    const port = (p: number) => (p === 0 ? '*' : String(p));
    const ep = (a: typeof l, p: number, dev?: string) => `${a.text}${dev ? `%${dev}` : ''}:${port(p)}`;
    const cols = [
      ...(g.noStateColumn ? [] : [SS_STATE_NAME[g.state]]),
      '0',
      '128',
      ep(l, g.lport, g.ifname),
      ep(r, g.rport),
      ...(g.timer ? [g.timer] : []),
      ...(g.uid !== 0 ? [`uid:${g.uid}`] : []),
      `ino:${g.inode}`,
      'sk:1f3a',
      `cgroup:/${g.tail}`,
      l.family === 6 ? 'v6only:0' : '',
      '<->',
    ];
    const text = cols.map((c, k) => c + (g.pads[k % 6] ?? ' ')).join('');
    const row: SocketRow = { protocol: 'tcp', family: l.family, localAddress: l.canon, localPort: g.lport, remoteAddress: r.canon, remotePort: g.rport, state: g.state, uid: g.uid, inode: g.inode };
    return { text, row, onlyState: g.noStateColumn ? g.state : undefined };
  });

test('property: every line ss prints parses back to its row', () => {
  holds(
    fc.array(line, { minLength: 1, maxLength: 20 }),
    (lines) => {
      for (const l of lines) {
        const got = parseSsOutput(`${l.text}\n`, l.onlyState ? { onlyState: l.onlyState } : {});
        assert.deepEqual(got, { rows: [l.row], skipped: 0 }, l.text);
      }
      const withColumns = lines.filter((l) => l.onlyState === undefined);
      const all = parseSsOutput(withColumns.map((l) => l.text).join('\n'));
      assert.deepEqual(all.rows, withColumns.map((l) => l.row));
    },
    { seed: 2301, numRuns: 300 },
  );
});

test('property: a line cut short is skipped or read whole, never misread', () => {
  holds(
    fc.tuple(line, fc.nat()),
    ([l, at]) => {
      const cut = l.text.slice(0, at % (l.text.length + 1));
      const got = parseSsOutput(cut, l.onlyState ? { onlyState: l.onlyState } : {});
      if (got.rows.length === 1) assert.deepEqual(got.rows[0], l.row, cut);
      else assert.equal(got.skipped, cut.trim() === '' ? 0 : 1, cut);
    },
    { seed: 2302, numRuns: 500 },
  );
});

test('property: any text gives rows and skipped lines, never an exception', () => {
  holds(
    fc.string({ maxLength: 300 }),
    (text) => {
      const got = parseSsOutput(text);
      const lines = text.split('\n').filter((x) => x.trim() !== '').length;
      assert.equal(got.rows.length + got.skipped, lines);
    },
    { seed: 2303, numRuns: 500 },
  );
});
