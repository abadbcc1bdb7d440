/**
 * UDP sockets (issue 28 part 3), the pure parts: /proc/net/udp{,6} rows and `ss -tu` lines
 * keep their protocol, the allocator's message names a UDP socket as such, the audit says
 * "UDP", and a stack's port entry can ask for its UDP side (`{ udp: true }`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeInUse, explainUnavailable } from '../src/allocate/explain.js';
import { planCandidates } from '../src/allocate/plan.js';
import { namedSetRequests } from '../src/allocate/reserve-named.js';
import { EXIT, BerthError } from '../src/errors.js';
import { parseTcpTable } from '../src/host/socket-table.js';
import { parseSsOutput, ssArgs } from '../src/host/ss-output.js';
import type { SocketRow } from '../src/host/host-map.js';
import { auditListeners, auditWarning } from '../src/launch/audit.js';
import { stateText, withoutPeer } from '../src/report/format.js';
import { parseStack } from '../src/stack/index.js';

const UDP4 = `   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
 3151: 0100007F:0400 00000000:0000 07 00000000:00000000 00:00000000 00000000  1000        0 13330 2 00000000d2e1f4ae 0
 3152: 0100007F:0401 0100007F:0400 01 00000000:00000000 00:00000000 00000000     0        0 13331 2 00000000d2e1f4af 0
`;
const UDP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
 1000: 00000000000000000000000001000000:0D96 00000000000000000000000000000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 2222 2 0000000000000000 0
`;

test('udp: /proc/net/udp and udp6 rows parse with protocol udp, CLOSE when unconnected and ESTABLISHED when connected', () => {
  const v4 = parseTcpTable(UDP4, 4, { littleEndian: true, protocol: 'udp' });
  assert.equal(v4.skipped, 0);
  assert.deepEqual(v4.rows, [
    { protocol: 'udp', family: 4, localAddress: '127.0.0.1', localPort: 1024, remoteAddress: '0.0.0.0', remotePort: 0, state: 'CLOSE', uid: 1000, inode: 13330 },
    { protocol: 'udp', family: 4, localAddress: '127.0.0.1', localPort: 1025, remoteAddress: '127.0.0.1', remotePort: 1024, state: 'ESTABLISHED', uid: 0, inode: 13331 },
  ]);
  const v6 = parseTcpTable(UDP6, 6, { littleEndian: true, protocol: 'udp' });
  assert.deepEqual(v6.rows.map((r) => [r.protocol, r.localAddress, r.localPort, r.state]), [['udp', '::1', 3478, 'CLOSE']]);
  // The default is TCP, as before.
  assert.equal(parseTcpTable(UDP4, 4, { littleEndian: true }).rows[0]!.protocol, 'tcp');
});

test('udp: ss -tu lines carry a Netid column; each row keeps its protocol, UNCONN reads as CLOSE', () => {
  const out = [
    'udp UNCONN 0      0      127.0.0.1:41024 0.0.0.0:*     ino:13330 sk:1 cgroup:/ <->',
    'udp ESTAB  0      0          [::1]:41025   [::1]:41024 uid:1000 ino:13331 sk:2 cgroup:/ <->',
    'tcp LISTEN 0      128    127.0.0.1:41026 0.0.0.0:*     ino:13332 sk:3 cgroup:/ <->',
  ].join('\n');
  const t = parseSsOutput(out);
  assert.equal(t.skipped, 0);
  assert.deepEqual(t.rows.map((r) => [r.protocol, r.family, r.localPort, r.state, r.uid, r.inode]), [
    ['udp', 4, 41024, 'CLOSE', 0, 13330],
    ['udp', 6, 41025, 'ESTABLISHED', 1000, 13331],
    ['tcp', 4, 41026, 'LISTEN', 0, 13332],
  ]);
  // One protocol asked: no Netid column, the caller says which.
  assert.equal(parseSsOutput('UNCONN 0 0 127.0.0.1:53 0.0.0.0:* ino:5 sk:1', { protocol: 'udp' }).rows[0]!.protocol, 'udp');
  assert.deepEqual(ssArgs(undefined, true, true), ['-t', '-u', '-a', '-n', '-H', '-O', '-e', 'state', 'listening', 'state', 'unconnected']);
  assert.deepEqual(ssArgs([{ lo: 53, hi: 53 }], false, true), ['-t', '-u', '-a', '-n', '-H', '-O', '-e', 'state', 'all', '( sport = :53 )']);
  assert.deepEqual(ssArgs(undefined, true), ['-t', '-a', '-n', '-H', '-O', '-e', 'state', 'listening'], 'without UDP, as before');
});

const udpRow = (port: number, inode = 77): SocketRow => ({ protocol: 'udp', family: 4, localAddress: '127.0.0.1', localPort: port, remoteAddress: '0.0.0.0', remotePort: 0, state: 'CLOSE', uid: 0, inode });

test('udp: a port with a UDP socket is not a candidate, and the message says "UDP socket by pid N"', () => {
  const host = {
    ephemeral: { lo: 32768, hi: 60999 },
    reserved: [],
    unprivilegedStart: 1024,
    sockets: [udpRow(1024)],
    owners: new Map([[77, [{ pid: 4242, comm: 'python3', cmdline: ['python3', 'udp.py'] }]]]),
  };
  const single = planCandidates({ source: { kind: 'port', port: 1024 }, host });
  assert.deepEqual(single.candidates, []);
  assert.equal(single.report.excluded.inUse[0]!.protocol, 'udp');
  const msg = explainUnavailable({ report: single.report, needed: 1, usable: 0, got: 0, ranges: single.ranges, ephemeralInSource: [], host });
  assert.equal(msg, 'port 1024 is not available: it is in use: 1024 UDP socket by pid 4242 (python3 udp.py)');
  assert.deepEqual(planCandidates({ source: { kind: 'range', range: { lo: 1024, hi: 1026 } }, host }).candidates, [1025, 1026]);
  assert.equal(describeInUse({ port: 53, state: 'CLOSE', protocol: 'udp', uid: 1000 }), '53 UDP socket by uid 1000, process not visible');
});

test('udp: the reports print UDP UNCONN / UDP ESTAB, and no peer for an unconnected socket', () => {
  assert.equal(stateText(udpRow(1)), 'UDP UNCONN');
  assert.equal(stateText({ protocol: 'udp', state: 'ESTABLISHED' }), 'UDP ESTAB');
  assert.equal(stateText({ protocol: 'tcp', state: 'LISTEN' }), 'LISTEN');
  assert.equal(withoutPeer(udpRow(1)), true);
  assert.equal(withoutPeer({ protocol: 'udp', state: 'ESTABLISHED' }), false);
});

test('udp: the audit names a UDP socket outside the set as UDP, and several in one line', () => {
  const set = [{ name: 'port', kind: 'single' as const, ports: [20000] }];
  const found = auditListeners({ name: 'turn', set, listeners: [{ port: 23000, address: '127.0.0.1', pid: 9, protocol: 'udp' }], ephemeral: [], reported: new Set() });
  assert.equal(found.length, 1);
  assert.equal(found[0]!.protocol, 'udp');
  assert.match(found[0]!.message, /^turn listens on UDP 23000 outside its ports \(port 20000\); nothing leases 23000 for it/);
  const two = auditListeners({ name: 'turn', set, listeners: [23000, 23001].map((port) => ({ port, address: '127.0.0.1', protocol: 'udp' as const })), ephemeral: [], reported: new Set() });
  assert.match(auditWarning('turn', set, two, [], { block: '--ports …=block:N' }), /^turn listens on 2 UDP ports outside its ports/);
});

test('udp: a stack port entry { udp: true } is one port whose UDP side is held too; bad values are 65 with the line', () => {
  const yaml = (entry: string) => `services:\n  turn:\n    range: 20000-20099\n    command: [turnserver, -p, '{ports.turn}']\n    ports:\n      turn: ${entry}\n      admin: 1\n`;
  const spec = parseStack(yaml('{ udp: true }'), 's.yaml', '/tmp');
  const ports = spec.services[0]!.ports;
  assert.deepEqual(ports, [{ name: 'turn', kind: 'single', udp: true }, { name: 'admin', kind: 'single' }]);
  const reqs = namedSetRequests(ports, { source: { kind: 'range', range: { lo: 20000, hi: 20099 } } });
  assert.deepEqual(reqs.map((r) => r.udp === true), [true, false]);
  assert.deepEqual(parseStack(yaml('{ udp: false }'), 's.yaml', '/tmp').services[0]!.ports[0], { name: 'turn', kind: 'single' });
  for (const [entry, re] of [
    ['{ udp: yes please }', /^s\.yaml:6: .*port "turn": udp must be true or false/],
    ['{ udp: true, block: 4 }', /^s\.yaml:6: .*port "turn": udp is for one port of the replica's own \(\{ udp: true \}\), not with block/],
  ] as const) {
    assert.throws(() => parseStack(yaml(entry), 's.yaml', '/tmp'), (e: unknown) => e instanceof BerthError && e.exitCode === EXIT.DATAERR && re.test(e.message), entry);
  }
});
