/**
 * The byte parser (parseTcpBuffer) and the allocator's local-port filter must give exactly
 * what the text parser gives: the same rows, and with a filter the same rows on those ports.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseTcpBuffer, parseTcpTable } from '../src/host/socket-table.js';
import type { PortRange, SocketRow } from '../src/host/host-map.js';

const fixture = (p: string) => readFileSync(fileURLToPath(new URL(`./fixtures/${p}`, import.meta.url)));
const LE = { littleEndian: true };
const inAny = (p: number, ranges: readonly PortRange[]) => ranges.some((r) => p >= r.lo && p <= r.hi);

const HEADER4 =
  '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode                                                     ';

/** A 30,000-row table shaped like the kernel's, ports 1024.. in order, every state. */
function bigTable(): string {
  const lines = [HEADER4];
  const addrs = ['0100007F', '00000000', '0200000A', '0101A8C0'];
  const states = ['0A', '01', '06', '08'];
  const hex4 = (n: number) => n.toString(16).toUpperCase().padStart(4, '0');
  for (let i = 0; i < 30_000; i++) {
    lines.push(
      `${String(i).padStart(5)}: ${addrs[i % 4]}:${hex4(1024 + i)} ${addrs[(i >> 2) % 4]}:${hex4(40000 + (i % 20000))} ${states[i % 4]} 00000000:00000000 00:00000000 00000000 ${String(i % 3000).padStart(5)}        0 ${i % 4 === 2 ? 0 : 100000 + i} 1 0000000000000000 100 0 0 10 0`,
    );
  }
  return `${lines.join('\n')}\n`;
}

test('parseTcpBuffer on the bytes equals parseTcpTable on the text (fixtures, damaged lines included)', () => {
  for (const [file, family] of [['proc-basic/net/tcp', 4], ['proc-basic/net/tcp6', 6], ['proc-basic/net/tcp6', 4]] as const) {
    const bytes = fixture(file);
    assert.deepEqual(parseTcpBuffer(bytes, family, LE), parseTcpTable(bytes.toString('latin1'), family, LE), file);
  }
});

test('parseTcpBuffer appends to the array it is given', () => {
  const rows: SocketRow[] = [];
  const a = parseTcpBuffer(fixture('proc-basic/net/tcp'), 4, LE, rows);
  const b = parseTcpBuffer(fixture('proc-basic/net/tcp6'), 6, LE, rows);
  assert.equal(a.rows, rows);
  assert.equal(b.rows, rows);
  assert.equal(rows.length, 9 + 5);
  assert.deepEqual(rows.map((r) => r.family), [4, 4, 4, 4, 4, 4, 4, 4, 4, 6, 6, 6, 6, 6]);
});

test('localPorts keeps exactly the rows on those ports, in order', () => {
  const cases: PortRange[][] = [
    [{ lo: 41001, hi: 41005 }],
    [{ lo: 49864, hi: 49864 }], // a TIME_WAIT row only
    [{ lo: 36520, hi: 36520 }, { lo: 41056, hi: 41056 }],
    [{ lo: 1, hi: 1023 }], // nothing there
  ];
  for (const [file, family] of [['proc-basic/net/tcp', 4], ['proc-basic/net/tcp6', 6]] as const) {
    const bytes = fixture(file);
    const all = parseTcpBuffer(bytes, family, LE).rows;
    for (const ranges of cases) {
      const only = parseTcpBuffer(bytes, family, { ...LE, localPorts: ranges }).rows;
      assert.deepEqual(only, all.filter((r) => inAny(r.localPort, ranges)), `${file} ${JSON.stringify(ranges)}`);
    }
  }
  const big = Buffer.from(bigTable());
  const all = parseTcpBuffer(big, 4, LE).rows;
  assert.equal(all.length, 30_000);
  for (const ranges of [[{ lo: 20000, hi: 20999 }], [{ lo: 1024, hi: 1024 }, { lo: 31023, hi: 40000 }], [{ lo: 1, hi: 65535 }]]) {
    const only = parseTcpBuffer(big, 4, { ...LE, localPorts: ranges });
    assert.deepEqual(only.rows, all.filter((r) => inAny(r.localPort, ranges)), JSON.stringify(ranges));
    assert.equal(only.skipped, 0);
  }
});

test('localPorts: a damaged row on a wanted port is still skipped and counted; rows elsewhere are not looked at', () => {
  const good = '   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 12345 1';
  const cut = '   1: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 123';
  const elsewhere = '   2: 0100007F:0050 00000000:0000 ZZ garbage';
  const shapeless = '   3: 0100007F';
  const text = `${HEADER4}\n${good}\n${cut}\n${elsewhere}\n${shapeless}\n`;
  const t = parseTcpTable(text, 4, { ...LE, localPorts: [{ lo: 8080, hi: 8081 }] });
  assert.deepEqual(t.rows.map((r) => r.localPort), [8080]);
  // the cut row on 8081 and the line without a readable local port; the bad row on port 80 is passed over
  assert.equal(t.skipped, 2);
  assert.equal(parseTcpTable(text, 4, LE).skipped, 3);
});

test("localPorts: rows printed as the kernel does (\"%4d: \"), below and above 10,000 rows, filter as the full parse does", () => {
  const hex4 = (n: number) => n.toString(16).toUpperCase().padStart(4, '0');
  const lines = [HEADER4];
  for (let i = 0; i < 12_000; i++) {
    lines.push(`${String(i).padStart(4)}: 0100007F:${hex4(20000 + (i % 3000))} 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 ${100000 + i} 1 0000000000000000 100 0 0 10 0`);
  }
  // The fixed column holds a colon but no port: decided by the full parse, never misread.
  lines.push('   9: 0100007F:ZZZZ 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7 1 0000000000000000 100 0 0 10 0');
  for (const family of [4, 6] as const) {
    const text = family === 4 ? lines.join('\n') : lines.map((l, k) => (k === 0 ? l : l.replace('0100007F:', '0000000000000000FFFF00000100007F:').replace(' 00000000:0000 ', ` ${'0'.repeat(32)}:0000 `))).join('\n');
    const bytes = Buffer.from(`${text}\n`);
    const all = parseTcpBuffer(bytes, family, LE);
    assert.equal(all.rows.length, 12_000);
    for (const ranges of [[{ lo: 20000, hi: 20009 }], [{ lo: 22990, hi: 23005 }], [{ lo: 1, hi: 19999 }]]) {
      const only = parseTcpBuffer(bytes, family, { ...LE, localPorts: ranges });
      assert.deepEqual(only.rows, all.rows.filter((r) => inAny(r.localPort, ranges)), `${family} ${JSON.stringify(ranges)}`);
      assert.equal(only.skipped, all.skipped);
    }
  }
});
