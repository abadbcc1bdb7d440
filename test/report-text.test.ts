import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { renderText } from '../src/report/text.js';
import type { PortSpaceReport } from '../src/report/port-space-report.js';

const fixtureUrl = new URL('./fixtures/reports/doctor-rl.json', import.meta.url);
const goldenUrl = new URL('./fixtures/reports/doctor-rl.txt', import.meta.url);
const load = (): PortSpaceReport => JSON.parse(readFileSync(fixtureUrl, 'utf8')) as PortSpaceReport;
const stripAnsi = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, '');

/** Column start of `word` in the header line of the table that has it. */
function columnOf(lines: string[], header: string, word: string): { line: number; col: number } {
  const line = lines.findIndex((l) => l.trimStart().startsWith(header));
  assert.ok(line >= 0, `table header ${header}`);
  return { line, col: lines[line]!.indexOf(word) };
}

describe('renderText', () => {
  const report = load();
  const plain = renderText(report);
  const lines = plain.split('\n');

  test('matches the reviewed output (BERTH_UPDATE_GOLDEN=1 rewrites it)', () => {
    if (process.env.BERTH_UPDATE_GOLDEN) writeFileSync(goldenUrl, plain);
    assert.equal(plain, readFileSync(goldenUrl, 'utf8'));
  });

  test('host ranges name their sysctls', () => {
    assert.match(plain, /^ {2}ephemeral range +9000-65499 {2}\(net\.ipv4\.ip_local_port_range\)$/m);
    assert.match(plain, /^ {2}reserved +20000-20999,50051 {2}\(net\.ipv4\.ip_local_reserved_ports\)$/m);
    assert.match(plain, /^ {2}unreserved ephemeral +9000-19999,21000-50050,50052-65499 /m);
    assert.match(plain, /^ {2}privileged +0-1023 /m);
    assert.match(plain, /rollout +8600-9599 \(1000 ports, window 100 = 10 instances\) +in unreserved ephemeral range: 9000-9599$/m);
  });

  test('findings carry severity markers and the exact fixes', () => {
    assert.match(plain, /^Findings: 1 error, 1 warning, 1 info$/m);
    assert.match(plain, /^ {2}\[ERROR\] band-in-ephemeral \(band rollout, ports 9000-9599\)$/m);
    assert.match(plain, /^ {2}\[WARN\] {2}band-port-taken/m);
    assert.match(plain, /^ {2}\[INFO\] {2}ephemeral-low/m);
    assert.match(plain, /^ {15}sudo sysctl -w net\.ipv4\.ip_local_reserved_ports=9000-9599,20000-20999,50051$/m);
    assert.match(plain, /^ {15}rollout: \{ range: 6000-6999, window: 100 \}$/m);
    assert.ok(plain.indexOf('fix: reserve the overlapping') < plain.indexOf('or:  move the band'));
  });

  test('sockets table: port, state, local address, owner as pid (comm) or uid', () => {
    const row = (port: number, state: string) => lines.find((l) => new RegExp(`^  ${port} +${state} `).test(l));
    assert.match(row(7000, 'LISTEN') ?? '', /^ {2}7000 +LISTEN +0\.0\.0\.0 +- +vllm#0 +pid 41233 \(python3\) +python3 -m vllm/);
    assert.match(row(7001, 'TIME_WAIT') ?? '', /127\.0\.0\.1:7001 +vllm#0 +none \(kernel-held\)$/);
    assert.match(row(9150, 'LISTEN') ?? '', / :: +- +rollout#5 +uid 1007$/);
    assert.match(row(50044, 'SYN_SENT') ?? '', /10\.2\.0\.7:8080 +- +pid 48810 \(wget\)/);
    // Columns line up under their headers.
    const { line, col } = columnOf(lines, 'PORT   STATE', 'OWNER');
    for (let i = line + 1; lines[i]; i++) assert.ok(/^\S/.test(lines[i]!.slice(col)), `owner column of: ${lines[i]}`);
  });

  test('leases: name, state, owner, expiry relative to the report time, job, band', () => {
    assert.match(plain, /^ {2}3000 +gen-0 +live +pid 41210 +while owner lives +4242\.0 +gen#0$/m);
    assert.match(plain, /^ {2}5100 +gym-1 +pending +pid 39999 /m);
    assert.match(plain, /^ {2}8700 +rollout-1 +live +none \(expiry only\) +in 4m +4242 +rollout#1$/m);
  });

  test('no colour unless asked, no trailing blanks, hostile text escaped', () => {
    assert.ok(!plain.includes('\x1b'), 'no escape characters at all without colour');
    assert.ok(!plain.includes('\u202e'), 'no bidi override');
    assert.ok(plain.includes('pid 48900 (evil\\x1b[31m)'));
    assert.ok(plain.includes("'a\\u202eb'"));
    for (const l of lines) assert.equal(l, l.trimEnd(), `trailing blanks: "${l}"`);
    assert.ok(plain.endsWith('\n') && !plain.endsWith('\n\n'));
  });

  test('with colour, the only escapes are SGR codes and the columns still line up', () => {
    const colored = renderText(report, { color: true });
    assert.ok(colored.includes('\x1b[1;31m[ERROR]\x1b[0m'));
    assert.ok(!/\x1b(?!\[[0-9;]*m)/.test(colored), 'only SGR sequences');
    assert.equal(stripAnsi(colored), plain);
  });

  test('an inspect report without layout, findings, sockets or leases', () => {
    const r: PortSpaceReport = { ...load(), kind: 'inspect', findings: [], summary: { errors: 0, warnings: 0, infos: 0 }, sockets: [], leases: [], ranges: [] };
    delete r.layout;
    const out = renderText(r);
    assert.match(out, /^berth inspect {2}gpu-node-017 /);
    assert.ok(!out.includes('Layout'));
    assert.ok(!out.includes('Findings'), 'inspect shows no empty findings section');
    assert.match(out, /^Sockets in bands and asked ranges \(0\)\n {2}none$/m);
    assert.match(out, /^Leases \(0\)\n {2}none$/m);
  });

  test('a clean doctor report says so', () => {
    const r: PortSpaceReport = { ...load(), findings: [], summary: { errors: 0, warnings: 0, infos: 0 } };
    assert.match(renderText(r), /^Findings: 0 errors, 0 warnings, 0 infos\n {2}none: the layout is safe on this host$/m);
  });
});

test('an owner not visible says why and how to see it (issue 32 item 22)', async () => {
  const { socketOwnerText } = await import('../src/report/format.js');
  const row = { family: 4 as const, localAddress: '0.0.0.0', localPort: 8000, remoteAddress: '0.0.0.0', remotePort: 0, state: 'LISTEN' as const, uid: 0, inode: 77 };
  assert.equal(socketOwnerText({ ...row, ownerHidden: 'pid-namespace' }), 'root (uid 0), held by no process of this PID namespace (run berth outside it, on the host, to see which)');
  assert.match(socketOwnerText({ ...row, uid: 4242, ownerHidden: 'other-user' }), /^uid 4242, another user's process \(run as root to see which\)$/);
});
