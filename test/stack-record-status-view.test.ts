import assert from 'node:assert/strict';
import { test } from 'node:test';
import { eraseFrame, formatAge, formatClock, formatEventLine, renderTable, StatusView, wantColor, type StackEvent, type StatusRow } from '../src/stack/index.js';

// Plain lines show local time; pin the zone so expectations are exact.
process.env.TZ = 'UTC';

const T0 = Date.parse('2026-11-29T12:01:02.345Z');
const ev = (over: Partial<StackEvent> & Pick<StackEvent, 'service' | 'replica' | 'state'>, dt = 0): StackEvent => ({ t: new Date(T0 + dt).toISOString(), ...over });

class Capture {
  chunks: string[] = [];
  constructor(
    readonly isTTY: boolean,
    readonly columns?: number,
  ) {}
  write(s: string) {
    this.chunks.push(s);
    return true;
  }
  get text() {
    return this.chunks.join('');
  }
}

test('formatClock and formatAge', () => {
  assert.equal(formatClock(new Date(T0)), '12:01:02.345');
  assert.equal(formatClock(new Date('2026-11-29T03:04:05.006Z')), '03:04:05.006');
  assert.deepEqual([0, 420, 9_949, 10_000, 59_999, 60_000, 185_000, 3_599_000, 3_720_000, -5].map(formatAge), ['0.0s', '0.4s', '9.9s', '10s', '59s', '1m00s', '3m05s', '59m59s', '1h02m', '0.0s']);
});

test('one plain line per state change', () => {
  assert.equal(formatEventLine(ev({ service: 'engine', replica: 0, state: 'ready', port: 20000, pid: 123 })), '12:01:02.345 engine/0 ready port 20000 pid 123');
  assert.equal(formatEventLine(ev({ service: 'engine', replica: 1, state: 'pending' })), '12:01:02.345 engine/1 pending');
  assert.equal(
    formatEventLine(ev({ service: 'engine', replica: 1, state: 'failed', port: 20100, pid: 124, code: 70, detail: 'exited with status 3 before ready; diagnostics: berth-runs/x/diagnostics/engine-1' })),
    '12:01:02.345 engine/1 failed port 20100 pid 124 code 70: exited with status 3 before ready; diagnostics: berth-runs/x/diagnostics/engine-1',
  );
  assert.equal(formatEventLine(ev({ service: 'proxy', replica: 0, state: 'exited', code: null, signal: 'SIGTERM', detail: '' })), '12:01:02.345 proxy/0 exited signal SIGTERM');
});

const rows: StatusRow[] = [
  { service: 'engine', replica: 0, port: 20000, pid: 4242, state: 'ready', since: T0 },
  { service: 'engine', replica: 1, port: 20100, pid: 4243, state: 'starting', since: T0 + 1500 },
  { service: 'client', replica: 0, state: 'pending', since: T0 },
];

test('renderTable: aligned columns, time in state', () => {
  assert.deepEqual(renderTable(rows, T0 + 3_000, { color: false }), [
    'SERVICE  REPLICA  PORT   PID   STATE     TIME',
    'engine   0        20000  4242  ready     3.0s',
    'engine   1        20100  4243  starting  1.5s',
    'client   0        -      -     pending   3.0s',
  ]);
});

test('renderTable: the state coloured, the header bold; lines cut to the terminal width', () => {
  const [head, first] = renderTable(rows.slice(0, 1), T0 + 65_000, { color: true });
  assert.equal(head, '\x1b[1mSERVICE  REPLICA  PORT   PID   STATE  TIME\x1b[0m');
  assert.equal(first, 'engine   0        20000  4242  \x1b[32mready\x1b[0m  1m05s');
  const failed = renderTable([{ ...rows[0]!, state: 'failed' }], T0, { color: true })[1];
  assert.equal(failed, 'engine   0        20000  4242  \x1b[1;31mfailed\x1b[0m  0.0s');
  assert.deepEqual(renderTable(rows.slice(0, 1), T0, { color: true, width: 20 }), ['SERVICE  REPLICA  P', 'engine   0        2']);
});

test('eraseFrame: cursor up over the old frame, clear to the end', () => {
  assert.equal(eraseFrame(0), '');
  assert.equal(eraseFrame(3), '\x1b[3A\r\x1b[J');
});

test('wantColor: a terminal, unless NO_COLOR is set or TERM is dumb', () => {
  assert.equal(wantColor(true, {}), true);
  assert.equal(wantColor(false, {}), false);
  assert.equal(wantColor(true, { NO_COLOR: '1' }), false);
  assert.equal(wantColor(true, { NO_COLOR: '' }), true, 'an empty NO_COLOR does not count (no-color.org)');
  assert.equal(wantColor(true, { TERM: 'dumb' }), false);
});

test('StatusView off a terminal: plain lines, no escapes', () => {
  const out = new Capture(false);
  const v = new StatusView(out, { env: {} });
  assert.equal(v.live, false);
  assert.equal(v.color, false);
  v.update(ev({ service: 'engine', replica: 0, state: 'starting', port: 20000, pid: 7 }));
  v.update(ev({ service: 'engine', replica: 0, state: 'ready', port: 20000, pid: 7 }, 512));
  v.print('client: 200 requests');
  v.close();
  assert.equal(out.text, '12:01:02.345 engine/0 starting port 20000 pid 7\n12:01:02.857 engine/0 ready port 20000 pid 7\nclient: 200 requests\n');
});

test('StatusView on a terminal: the table redrawn in place; printed text goes above it', () => {
  const out = new Capture(true, 80);
  let now = T0;
  const v = new StatusView(out, { env: { NO_COLOR: '1' }, refreshMs: 0, now: () => now });
  assert.equal(v.live, true);
  assert.equal(v.color, false);
  v.update(ev({ service: 'engine', replica: 0, state: 'pending' }));
  assert.equal(out.chunks.at(-1), 'SERVICE  REPLICA  PORT  PID  STATE    TIME\nengine   0        -     -    pending  0.0s\n');
  now += 250;
  v.update(ev({ service: 'engine', replica: 0, state: 'starting', port: 20000, pid: 9 }, 250));
  assert.equal(out.chunks.at(-1), '\x1b[2A\r\x1b[J' + 'SERVICE  REPLICA  PORT   PID  STATE     TIME\nengine   0        20000  9    starting  0.0s\n');
  const other = new Capture(true);
  out.chunks = [];
  v.print('a line from the job', other);
  assert.deepEqual(out.chunks, ['\x1b[2A\r\x1b[J', 'SERVICE  REPLICA  PORT   PID  STATE     TIME\nengine   0        20000  9    starting  0.0s\n']);
  assert.deepEqual(other.chunks, ['a line from the job\n']);
  out.chunks = [];
  v.print('on the same stream\n');
  assert.equal(out.text, '\x1b[2A\r\x1b[J' + 'on the same stream\n' + 'SERVICE  REPLICA  PORT   PID  STATE     TIME\nengine   0        20000  9    starting  0.0s\n');
  now += 2000;
  out.chunks = [];
  v.close();
  assert.equal(out.text, '\x1b[2A\r\x1b[J' + 'SERVICE  REPLICA  PORT   PID  STATE     TIME\nengine   0        20000  9    starting  2.0s\n', 'the final frame stays');
  out.chunks = [];
  v.update(ev({ service: 'engine', replica: 0, state: 'exited' }, 3000));
  assert.deepEqual(out.chunks, [], 'nothing is drawn after close');
  assert.deepEqual(v.snapshot().map((r) => r.state), ['starting']);
});

test('StatusView on a terminal refreshes the time column by itself, and stops on close', async () => {
  const out = new Capture(true);
  const v = new StatusView(out, { env: {}, refreshMs: 20 });
  assert.equal(v.color, true);
  v.update({ t: new Date().toISOString(), service: 'a', replica: 0, state: 'ready' });
  const before = out.chunks.length;
  await new Promise((r) => setTimeout(r, 110));
  assert.ok(out.chunks.length >= before + 2, `redrawn ${out.chunks.length - before} times`);
  v.close();
  const closed = out.chunks.length;
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(out.chunks.length, closed);
});
