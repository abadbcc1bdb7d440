/**
 * /proc/net/tcp{,6} (host/socket-table.ts): any text or bytes give rows and a count of skipped
 * lines, never an exception, quickly; a table of well-formed rows mixed with damaged lines
 * gives exactly those rows (in order) with every damaged line counted; and the port filter
 * keeps exactly the rows the filter names.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isIP } from 'node:net';
import fc from 'fast-check';
import { parseTcpBuffer, parseTcpTable, tcpStateName } from '../src/host/socket-table.js';
import type { SocketRow } from '../src/host/host-map.js';
import { anyText, holds, outcome, tokenSoup } from './helpers/property.js';

const HEADER = '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode';
const STATES = new Set(Array.from({ length: 13 }, (_, i) => tcpStateName(i)));

function checkRows(rows: readonly SocketRow[], family: 4 | 6): void {
  for (const r of rows) {
    assert.equal(r.family, family);
    for (const p of [r.localPort, r.remotePort]) assert.ok(Number.isInteger(p) && p >= 0 && p <= 65535);
    for (const a of [r.localAddress, r.remoteAddress]) assert.equal(isIP(a), family, a);
    assert.ok(STATES.has(r.state));
    assert.ok(Number.isSafeInteger(r.uid) && r.uid >= 0 && Number.isSafeInteger(r.inode) && r.inode >= 0);
  }
}

const hex = (n: number, w: number) => n.toString(16).toUpperCase().padStart(w, '0');

/** Address bytes as the kernel prints them on a host of this byte order (%08X per 32-bit word). */
function addrHex(bytes: readonly number[], le: boolean): string {
  let s = '';
  for (let w = 0; w < bytes.length / 4; w++) {
    const b = bytes.slice(w * 4, w * 4 + 4);
    s += (le ? [...b].reverse() : b).map((x) => hex(x, 2)).join('');
  }
  return s;
}

/** 16 bytes of an IPv6 text (the parser's output), for comparing with what was written. */
function v6Bytes(text: string): number[] {
  const m = /^(.*::ffff:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  const head = m ? `${m[1]}${(Number(m[2]) * 256 + Number(m[3])).toString(16)}:${(Number(m[4]) * 256 + Number(m[5])).toString(16)}` : text;
  const [l, r] = head.includes('::') ? head.split('::') : [head, undefined];
  const left = l ? l.split(':') : [];
  const right = r ? r.split(':') : [];
  const groups = r === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  return groups.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 255]);
}

const row = (family: 4 | 6) =>
  fc.record({
    local: fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 255 })), { minLength: family === 4 ? 4 : 16, maxLength: family === 4 ? 4 : 16 }),
    remote: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: family === 4 ? 4 : 16, maxLength: family === 4 ? 4 : 16 }),
    lport: fc.integer({ min: 0, max: 65535 }),
    rport: fc.integer({ min: 0, max: 65535 }),
    state: fc.integer({ min: 1, max: 12 }),
    uid: fc.integer({ min: 0, max: 2 ** 31 }),
    inode: fc.integer({ min: 0, max: 2 ** 40 }),
    slot: fc.integer({ min: 0, max: 99999 }),
  });

type Row = { local: number[]; remote: number[]; lport: number; rport: number; state: number; uid: number; inode: number; slot: number };

function rowLine(r: Row, le: boolean): string {
  return `${String(r.slot).padStart(4)}: ${addrHex(r.local, le)}:${hex(r.lport, 4)} ${addrHex(r.remote, le)}:${hex(r.rport, 4)} ${hex(r.state, 2)} 00000000:00000000 00:00000000 00000000 ${String(r.uid).padStart(5)} ${String(0).padStart(8)} ${r.inode} 1 0000000000000000 100 0 0 10 0`;
}

function sameRow(got: SocketRow, r: Row, family: 4 | 6): void {
  const addr = (b: number[]) => (family === 4 ? b.join('.') : undefined);
  if (family === 4) {
    assert.equal(got.localAddress, addr(r.local));
    assert.equal(got.remoteAddress, addr(r.remote));
  } else {
    assert.deepEqual(v6Bytes(got.localAddress), r.local, got.localAddress);
    assert.deepEqual(v6Bytes(got.remoteAddress), r.remote, got.remoteAddress);
  }
  assert.deepEqual([got.localPort, got.remotePort, got.state, got.uid, got.inode], [r.lport, r.rport, tcpStateName(r.state), r.uid, r.inode]);
}

/** A damaged line: starts like a row (a digit), then anything without a newline. */
const damaged = fc.tuple(fc.integer({ min: 0, max: 999 }), anyText(60)).map(([n, junk]) => `${n}:${junk.replace(/[\n]/g, ' ')}x`);

test('any text or bytes: rows that make sense and a skipped count, never an exception', () => {
  const soup = tokenSoup([HEADER, '\n', ' ', '   0: ', '0100007F:1F90', '00000000000000000000000001000000:0016', ' 0A ', '00000000:00000000', ' 1000 ', ' 12345 1', ':', 'FFFFFFFF', '\r\n', '\t']);
  holds(
    fc.tuple(fc.oneof(anyText(400), soup), fc.constantFrom(4 as const, 6 as const), fc.boolean()),
    ([text, family, le]) => {
      const r = outcome(() => parseTcpTable(text, family, { littleEndian: le }));
      assert.ok(r.ok);
      checkRows(r.value.rows, family);
      // Blank to the kernel's format: spaces, tabs, CR (a BOM or NBSP line is damaged, not blank).
      const lines = text.split('\n').filter((l) => /[^ \t\r]/.test(l)).length;
      assert.ok(r.value.rows.length + r.value.skipped <= lines, `${r.value.rows.length} rows + ${r.value.skipped} skipped from ${lines} lines`);
    },
    { seed: 4401, numRuns: 400 },
  );
  holds(
    fc.tuple(fc.uint8Array({ maxLength: 600 }), fc.constantFrom(4 as const, 6 as const)),
    ([bytes, family]) => {
      const r = outcome(() => parseTcpBuffer(bytes, family));
      assert.ok(r.ok);
      checkRows(r.value.rows, family);
    },
    { seed: 4402, numRuns: 300 },
  );
});

test('well-formed rows among damaged lines: exactly those rows, in order; every damaged line counted', () => {
  for (const family of [4, 6] as const) {
    holds(
      fc.tuple(fc.array(fc.oneof(row(family).map((r) => ({ r })), damaged.map((d) => ({ d }))), { maxLength: 25 }), fc.boolean(), fc.constantFrom('\n', '\r\n')),
      ([lines, le, eol]) => {
        const text = [HEADER, ...lines.map((l) => ('r' in l ? rowLine(l.r, le) : l.d)), ''].join(eol);
        const t = outcome(() => parseTcpTable(text, family, { littleEndian: le }));
        assert.ok(t.ok);
        const want = lines.flatMap((l) => ('r' in l ? [l.r] : []));
        assert.equal(t.value.rows.length, want.length, text);
        t.value.rows.forEach((got, i) => sameRow(got, want[i]!, family));
        assert.equal(t.value.skipped, lines.length - want.length);
      },
      { seed: 4403 + family, numRuns: 150 },
    );
  }
});

test('the port filter keeps exactly the rows whose local port it names', () => {
  const ranges = fc.array(fc.integer({ min: 0, max: 65535 }).chain((lo) => fc.integer({ min: lo, max: Math.min(65535, lo + 3000) }).map((hi) => ({ lo, hi }))), { maxLength: 3 });
  holds(
    fc.tuple(fc.array(row(4), { maxLength: 30 }), ranges),
    ([rows, localPorts]) => {
      const text = [HEADER, ...rows.map((r) => rowLine(r, true)), ''].join('\n');
      const all = parseTcpTable(text, 4, { littleEndian: true }).rows;
      const some = parseTcpTable(text, 4, { littleEndian: true, localPorts });
      assert.deepEqual(some.rows, all.filter((r) => localPorts.some((g) => r.localPort >= g.lo && r.localPort <= g.hi)));
      assert.equal(some.skipped, 0);
    },
    { seed: 4410, numRuns: 200 },
  );
});
