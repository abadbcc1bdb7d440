/**
 * The pure parts of `berth run` and its small real-I/O helpers: ready specs, the probe
 * address rules, redaction, /proc parsing, exec plans, probes (loopback only) and the
 * process-tree tracker on real processes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { BerthError } from '../src/errors.js';
import type { SocketRow } from '../src/host/host-map.js';
import { exitStatus } from '../src/launch/launch.js';
import { readPortRows } from '../src/launch/ownership.js';
import { parseTcpTable } from '../src/host/socket-table.js';
import { chooseProbeHost, hostPort } from '../src/launch/probe-host.js';
import { probeCmd, probeHttp, probeTcp, responseComplete } from '../src/launch/probes.js';
import { listPids } from '../src/host/proc-read.js';
import { parseStatIds, ProcessTree } from '../src/launch/process-tree.js';
import { checkReadyWithHandoff, parseReadySpec } from '../src/launch/ready-spec.js';
import { redactArgv, redactEnv } from '../src/util/redact.js';
import { childEnv, execPlan, fdName, PERL_SHIM, substitute } from '../src/launch/spawn-plan.js';

test('parseReadySpec: http, tcp, cmd; bad specs are usage errors naming the fix', () => {
  assert.deepEqual(parseReadySpec('http://127.0.0.1:{port}/health'), { kind: 'http', url: 'http://127.0.0.1:{port}/health' });
  assert.deepEqual(parseReadySpec('tcp'), { kind: 'tcp' });
  assert.deepEqual(parseReadySpec('cmd: curl -sf http://127.0.0.1:{port}/'), { kind: 'cmd', command: 'curl -sf http://127.0.0.1:{port}/' });
  const bad = (s: string, re: RegExp) => assert.throws(() => parseReadySpec(s), (e: unknown) => e instanceof BerthError && e.exitCode === 64 && re.test(e.message));
  bad('cmd:', /needs a command/);
  bad('https://127.0.0.1:{port}/', /https probes are not supported/);
  bad('http://[bad:{port}/', /not a valid URL/);
  bad('grpc', /expected http:\/\/HOST:\{port\}\/PATH, tcp, or cmd:COMMAND/);
});

test('--ready tcp with --handoff fd is refused, explaining the backlog', () => {
  assert.throws(() => checkReadyWithHandoff({ kind: 'tcp' }, 'fd'), /completes every TCP handshake into its backlog/);
  checkReadyWithHandoff({ kind: 'tcp' }, 'release');
  checkReadyWithHandoff({ kind: 'http', url: 'http://127.0.0.1:{port}/' }, 'fd');
});

const row = (family: 4 | 6, localAddress: string): SocketRow => ({ family, localAddress, localPort: 8000, remoteAddress: family === 4 ? '0.0.0.0' : '::', remotePort: 0, state: 'LISTEN', uid: 0, inode: 1 });

test('probe host: never "localhost"; follows what the service listens on', () => {
  assert.equal(chooseProbeHost('localhost', [row(4, '0.0.0.0')]), '127.0.0.1');
  assert.equal(chooseProbeHost('localhost', [row(6, '::')]), '::1');
  assert.equal(chooseProbeHost('localhost', [row(6, '::')], true), '127.0.0.1', 'berth\'s own dual-stack socket takes IPv4');
  assert.equal(chooseProbeHost('localhost', [row(6, '::1')]), '::1');
  assert.equal(chooseProbeHost('localhost', [row(4, '127.0.0.2')]), '127.0.0.2');
  assert.equal(chooseProbeHost('localhost', [row(6, '::'), row(4, '0.0.0.0')]), '127.0.0.1');
  assert.equal(chooseProbeHost(undefined, []), '127.0.0.1');
  assert.equal(chooseProbeHost('0.0.0.0', []), '127.0.0.1');
  assert.equal(chooseProbeHost('[::]', []), '::1');
  assert.equal(chooseProbeHost('10.1.2.3', [row(4, '0.0.0.0')]), '10.1.2.3', 'an explicit address is the user\'s choice');
  assert.equal(chooseProbeHost(undefined, [row(6, '::ffff:127.0.0.1')]), '127.0.0.1');
  assert.equal(hostPort('::1', 80), '[::1]:80');
  assert.equal(hostPort('127.0.0.1', 80), '127.0.0.1:80');
});

test('redaction: secret-looking env names and command-line values', () => {
  const env = redactEnv({ HF_TOKEN: 'x', AWS_SECRET_ACCESS_KEY: 'y', DB_PASSWORD: 'z', GH_AUTH: 'a', MY_CREDENTIALS: 'b', PATH: '/bin', PORT: '1' });
  assert.deepEqual(env, { AWS_SECRET_ACCESS_KEY: '<redacted>', DB_PASSWORD: '<redacted>', GH_AUTH: '<redacted>', HF_TOKEN: '<redacted>', MY_CREDENTIALS: '<redacted>', PATH: '/bin', PORT: '1' });
  assert.deepEqual(redactArgv(['serve', '--api-key', 'sk-1', '--token=abc', 'PASSWORD=p', '--port', '80']), ['serve', '--api-key', '<redacted>', '--token=<redacted>', 'PASSWORD=<redacted>', '--port', '80']);
});

test('parseStatIds: comm with spaces and parentheses', () => {
  const stat = '4242 (my (weird) proc) S 1 4242 4242 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 123456 0 0';
  assert.deepEqual(parseStatIds(stat), { state: 'S', ppid: 1, pgrp: 4242, session: 4242, start: 123456 });
  assert.equal(parseStatIds('garbage'), undefined);
});

test('the port filter keeps only rows whose LOCAL port matches, v4 and v6', () => {
  const rowsForPort = (text: string, family: 4 | 6, port: number) => parseTcpTable(text, family, { localPorts: [{ lo: port, hi: port }] }).rows;
  const v4 = [
    '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
    '   0: 00000000:4E20 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0 100 0 0 10 0',
    '   1: 0100007F:9C40 0100007F:4E20 01 00000000:00000000 00:00000000 00000000  1000        0 222 1 0 20 4 30 10 -1',
    '   2: 0100007F:4E20 0100007F:9C40 06 00000000:00000000 03:00000F6C 00000000     0        0 0 3 0',
  ].join('\n');
  const rows = rowsForPort(v4, 4, 20000);
  assert.deepEqual(rows.map((r) => [r.state, r.inode]), [['LISTEN', 111], ['TIME_WAIT', 0]]);
  const v6 = '  sl  local_address remote\n   0: 00000000000000000000000000000000:4E20 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 333 1 0 100 0 0 10 0\n';
  assert.deepEqual(rowsForPort(v6, 6, 20000).map((r) => [r.localAddress, r.inode]), [['::', 333]]);
  assert.deepEqual(rowsForPort(v4, 4, 20001), []);
});

test('responseComplete: content-length, chunked, no-body statuses, close-framed', () => {
  assert.equal(responseComplete(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok')), true);
  assert.equal(responseComplete(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok')), false);
  assert.equal(responseComplete(Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n')), true);
  assert.equal(responseComplete(Buffer.from('HTTP/1.1 204 No Content\r\n\r\n')), true);
  assert.equal(responseComplete(Buffer.from('HTTP/1.0 200 OK\r\n\r\nbody until close')), false);
  assert.equal(responseComplete(Buffer.from('HTTP/1.1 200 OK\r\nContent-Len')), false);
});

test('exec plan and child environment', () => {
  assert.deepEqual(execPlan(['srv', '--port', '80'], 'release', '/usr/bin/perl'), { file: 'srv', args: ['--port', '80'], command: ['srv', '--port', '80'] });
  const fd = execPlan(['srv'], 'fd', '/usr/bin/perl');
  assert.deepEqual(fd.args, ['-e', PERL_SHIM, '--', 'srv']);
  const sh = execPlan(['srv'], 'fd', undefined);
  assert.equal(sh.file, '/bin/sh');
  assert.match(sh.warning!, /non-blocking/);
  const env = childEnv({ base: { PATH: '/bin', LISTEN_FDS: '9', LISTEN_PID: '1' }, port: 8000, envName: 'HTTP_PORT', name: 'web:1', runId: 'r', handoff: 'release' });
  assert.equal(env.HTTP_PORT, '8000');
  assert.equal(env.BERTH_PORT, '8000');
  assert.equal(env.BERTH_RUN_ID, 'r');
  assert.equal(env.LISTEN_FDS, undefined, 'an inherited socket-activation set is never passed on');
  assert.equal(env.LISTEN_PID, undefined);
  const envFd = childEnv({ base: {}, port: 1, envName: 'PORT', name: 'web:1', runId: 'r', handoff: 'fd' });
  assert.equal(envFd.LISTEN_FDS, '1');
  assert.equal(envFd.LISTEN_FDNAMES, 'web_1');
  assert.equal(fdName(''), 'berth');
  assert.equal(substitute('--port={port} {port} {host}', { port: '80', host: 'h' }), '--port=80 80 h');
  assert.equal(exitStatus(3, null), 3);
  assert.equal(exitStatus(null, 'SIGTERM'), 143);
  assert.equal(exitStatus(null, 'SIGKILL'), 137);
});

test('probes: http 2xx/non-2xx/refused, tcp, cmd; http and tcp leave no TIME_WAIT behind', async () => {
  const server = http.createServer((req, res) => {
    res.writeHead(req.url === '/ok' ? 200 : 503, { 'content-length': '2' });
    res.end('hi');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  try {
    const ok = await probeHttp('127.0.0.1', port, '/ok', `localhost:${port}`, 2000);
    assert.equal(ok.ok, true);
    assert.equal(ok.detail, 'HTTP 200');
    const no = await probeHttp('127.0.0.1', port, '/x', `localhost:${port}`, 2000);
    assert.deepEqual([no.ok, no.detail], [false, 'HTTP 503']);
    assert.equal((await probeTcp('127.0.0.1', port, 2000)).ok, true);
    await new Promise((r) => setTimeout(r, 50));
    const timeWait = readPortRows('/proc', port).filter((r) => r.state === 'TIME_WAIT');
    assert.deepEqual(timeWait, [], 'probes end with a reset, so no TIME_WAIT holds the service\'s port');
  } finally {
    await new Promise((r) => server.close(r));
  }
  const refused = await probeHttp('127.0.0.1', port, '/', 'x', 2000);
  assert.deepEqual([refused.ok, refused.detail], [false, 'ECONNREFUSED']);
  assert.equal((await probeTcp('127.0.0.1', port, 2000)).detail, 'ECONNREFUSED');
  const c0 = await probeCmd('exit 0', process.env, undefined, 2000);
  assert.equal(c0.ok, true);
  const c1 = await probeCmd('echo not yet >&2; exit 3', process.env, undefined, 2000);
  assert.deepEqual([c1.ok, c1.detail], [false, 'exit 3: not yet']);
  const slow = await probeCmd('sleep 5', process.env, undefined, 100);
  assert.equal(slow.ok, false);
  assert.equal(slow.timedOut, true);
  assert.ok(slow.ms < 2000, 'a timed-out command is killed with its process group');
});

test('ProcessTree: finds a double-forked setsid daemon by its marker, and not strangers', async () => {
  const marker = `BERTH_RUN_ID=test-${process.pid}-${Date.now()}`;
  const existing = listPids();
  // root → (setsid) middle → (setsid) daemon; root and middle exit at once.
  const daemonJs = `
const { spawn } = require('node:child_process');
const stage = Number(process.env.STAGE || 0);
if (stage < 2) {
  const c = spawn(process.execPath, ['-e', process.argv[1]], { detached: true, stdio: 'ignore', env: { ...process.env, STAGE: String(stage + 1) } });
  if (stage === 0) console.log(c.pid);
  c.unref();
} else {
  console.log('daemon ' + process.pid);
  setTimeout(() => {}, 5000);
}`;
  const root = spawn(process.execPath, ['-e', daemonJs, daemonJs], { detached: true, stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, [marker.split('=')[0]!]: marker.split('=')[1] } });
  const stranger = spawn('sleep', ['5'], { stdio: 'ignore' });
  const tree = new ProcessTree('/proc', root.pid!, marker, existing);
  await new Promise((r) => root.on('exit', r));
  // Let both forks happen and their parents exit before the first scan: only the marker can tell.
  let daemon: number | undefined;
  for (let i = 0; i < 100 && daemon === undefined; i++) {
    await new Promise((r) => setTimeout(r, 20));
    for (const pid of listPids()) {
      try {
        const env = readFileSync(`/proc/${pid}/environ`, 'latin1');
        if (env.includes(marker) && env.includes('\0STAGE=2')) daemon = pid;
      } catch {
        // gone
      }
    }
  }
  assert.ok(daemon, 'the daemon started');
  tree.scan();
  const m = tree.members.get(daemon);
  assert.ok(m, 'the daemon is a member');
  assert.ok(m.joinedBy === 'marker' || m.joinedBy === 'parent', m.joinedBy);
  assert.equal(tree.has(stranger.pid!), false);
  assert.ok(tree.alive().some((x) => x.pid === daemon));
  process.kill(daemon, 'SIGKILL');
  stranger.kill('SIGKILL');
  await new Promise((r) => setTimeout(r, 50));
  assert.ok(!tree.alive().some((x) => x.pid === daemon), 'a killed member is no longer alive');
});
