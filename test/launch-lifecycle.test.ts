/**
 * The launch's state machine on fixtures (src/launch/lifecycle.ts): every state against the
 * events that matter, the first-stop-wins and first-failure-wins rules, and the phase each
 * state reports as LaunchHandle.phase. Pure: no process, no port.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  cleanedUp,
  exitedWhileAsking,
  failed,
  finishing,
  phaseOf,
  settled,
  START,
  starting,
  stopSignal,
  transition,
  wasReady,
  type Life,
  type LifeEvent,
} from '../src/launch/lifecycle.js';

const F = {
  preparing: START,
  held: { at: 'held' },
  spawned: { at: 'spawned', phase: 'spawn' },
  owning: { at: 'spawned', phase: 'ownership' },
  learning: { at: 'spawned', phase: 'learn' },
  probing: { at: 'spawned', phase: 'probe' },
  asking: { at: 'spawned', phase: 'probe', asking: 'now' },
  askingExited: { at: 'spawned', phase: 'probe', asking: 'exited' },
  answered: { at: 'answered', phase: 'ownership' },
  answeredProbe: { at: 'answered', phase: 'probe' },
  ready: { at: 'ready' },
  stoppingEarly: { at: 'stopping', signal: 'SIGTERM', ready: false },
  stoppingReady: { at: 'stopping', signal: 'SIGINT', ready: true },
  failing: { at: 'failing', exitCode: 69, phase: 'ownership', ready: false },
  failingStopped: { at: 'failing', exitCode: 70, phase: 'stopping', ready: false, stop: 'SIGTERM' },
  failingReady: { at: 'failing', exitCode: 70, phase: 'ready', ready: true },
  ending: { at: 'ending', phase: 'ready', cleaned: false, ready: true },
  endingStopped: { at: 'ending', phase: 'stopping', cleaned: false, ready: false, stop: 'SIGTERM' },
  cleaned: { at: 'ending', phase: 'ready', cleaned: true, ready: true },
  ended: { at: 'ended', ready: true },
} satisfies Record<string, Life>;

type Name = keyof typeof F;
const ALL = Object.keys(F) as Name[];

const E = {
  reserved: { kind: 'reserved' },
  spawned: { kind: 'spawned' },
  waitOwnership: { kind: 'waiting', phase: 'ownership' },
  waitProbe: { kind: 'waiting', phase: 'probe' },
  asking: { kind: 'asking' },
  asked: { kind: 'asked' },
  childExited: { kind: 'child-exited' },
  answered: { kind: 'answered' },
  ready: { kind: 'ready' },
  stopTerm: { kind: 'stop', signal: 'SIGTERM' },
  stopKill: { kind: 'stop', signal: 'SIGKILL' },
  fail: { kind: 'fail', exitCode: 75, afterReady: false },
  failAfterReady: { kind: 'fail', exitCode: 70, afterReady: true },
  finish: { kind: 'finish' },
  cleaned: { kind: 'cleaned' },
  ended: { kind: 'ended' },
} satisfies Record<string, LifeEvent>;

type Ev = keyof typeof E;

/** One row: from a state, an event, the state after it (or 'same': not taken, the same object). */
type Row = [Name, Ev, Life | 'same'];

const ROWS: Row[] = [
  // The start-up, step by step.
  ['preparing', 'reserved', { at: 'held' }],
  ['held', 'spawned', { at: 'spawned', phase: 'spawn' }],
  ['spawned', 'waitOwnership', { at: 'spawned', phase: 'ownership' }],
  ['owning', 'waitProbe', { at: 'spawned', phase: 'probe' }],
  ['probing', 'asking', { at: 'spawned', phase: 'probe', asking: 'now' }],
  ['asking', 'asked', { at: 'spawned', phase: 'probe' }],
  ['owning', 'answered', { at: 'answered', phase: 'ownership' }],
  ['spawned', 'answered', { at: 'answered', phase: 'spawn' }],
  ['answered', 'ready', { at: 'ready' }],
  // Steps out of order, or after the start-up ended, change nothing.
  ['preparing', 'spawned', 'same'],
  ['preparing', 'answered', 'same'],
  ['held', 'reserved', 'same'],
  ['held', 'waitOwnership', 'same'],
  ['spawned', 'ready', 'same'],
  ['asking', 'asking', 'same'],
  ['probing', 'asked', 'same'],
  ['stoppingEarly', 'spawned', 'same'],
  ['stoppingEarly', 'waitOwnership', 'same'],
  ['stoppingEarly', 'answered', 'same'],
  ['stoppingEarly', 'ready', 'same'],
  ['stoppingEarly', 'reserved', 'same'],
  ['failing', 'answered', 'same'],
  ['failing', 'ready', 'same'],
  ['ready', 'answered', 'same'],
  ['ended', 'ready', 'same'],
  // The child exits while a probe asks: the answer decides; at any other time the state does not change.
  ['asking', 'childExited', { at: 'spawned', phase: 'probe', asking: 'exited' }],
  ['askingExited', 'asked', { at: 'spawned', phase: 'probe' }],
  ['askingExited', 'childExited', 'same'],
  ['probing', 'childExited', 'same'],
  ['owning', 'childExited', 'same'],
  ['answered', 'childExited', 'same'],
  ['ready', 'childExited', 'same'],
  ['stoppingEarly', 'childExited', 'same'],
  // A stop: before the spawn, while waiting, after ready.
  ['preparing', 'stopTerm', { at: 'stopping', signal: 'SIGTERM', ready: false }],
  ['held', 'stopTerm', { at: 'stopping', signal: 'SIGTERM', ready: false }],
  ['asking', 'stopTerm', { at: 'stopping', signal: 'SIGTERM', ready: false }],
  ['answered', 'stopKill', { at: 'stopping', signal: 'SIGKILL', ready: false }],
  ['ready', 'stopTerm', { at: 'stopping', signal: 'SIGTERM', ready: true }],
  // The first stop wins; no stop after a failure or once finishing began.
  ['stoppingEarly', 'stopKill', 'same'],
  ['stoppingReady', 'stopTerm', 'same'],
  ['failing', 'stopTerm', 'same'],
  ['failingReady', 'stopTerm', 'same'],
  ['ending', 'stopTerm', 'same'],
  ['ended', 'stopTerm', 'same'],
  // A failure before ready, in the phase it happened in.
  ['preparing', 'fail', { at: 'failing', exitCode: 75, phase: 'reserve', ready: false }],
  ['held', 'fail', { at: 'failing', exitCode: 75, phase: 'spawn', ready: false }],
  ['owning', 'fail', { at: 'failing', exitCode: 75, phase: 'ownership', ready: false }],
  ['learning', 'fail', { at: 'failing', exitCode: 75, phase: 'learn', ready: false }],
  ['asking', 'fail', { at: 'failing', exitCode: 75, phase: 'probe', ready: false }],
  ['answeredProbe', 'fail', { at: 'failing', exitCode: 75, phase: 'probe', ready: false }],
  ['answered', 'failAfterReady', { at: 'failing', exitCode: 70, phase: 'ownership', ready: false }],
  // A failure after a stop is taken, and remembers the stop.
  ['stoppingEarly', 'fail', { at: 'failing', exitCode: 75, phase: 'stopping', ready: false, stop: 'SIGTERM' }],
  ['stoppingEarly', 'failAfterReady', { at: 'failing', exitCode: 70, phase: 'stopping', ready: false, stop: 'SIGTERM' }],
  // After ready only a failure berth decides itself (afterReady), stopping or not.
  ['ready', 'fail', 'same'],
  ['ready', 'failAfterReady', { at: 'failing', exitCode: 70, phase: 'ready', ready: true }],
  ['stoppingReady', 'fail', 'same'],
  ['stoppingReady', 'failAfterReady', { at: 'failing', exitCode: 70, phase: 'stopping', ready: true, stop: 'SIGINT' }],
  // The first failure wins; none once finishing began.
  ['failing', 'fail', 'same'],
  ['failing', 'failAfterReady', 'same'],
  ['failingReady', 'failAfterReady', 'same'],
  ['ending', 'fail', 'same'],
  ['ending', 'failAfterReady', 'same'],
  ['endingStopped', 'fail', 'same'],
  ['ended', 'fail', 'same'],
  // finish from every way of ending: the verdict is kept, the phase it came in too.
  ['preparing', 'finish', { at: 'ending', phase: 'reserve', cleaned: false, ready: false }],
  ['spawned', 'finish', { at: 'ending', phase: 'spawn', cleaned: false, ready: false }],
  ['ready', 'finish', { at: 'ending', phase: 'ready', cleaned: false, ready: true }],
  ['stoppingEarly', 'finish', { at: 'ending', phase: 'stopping', cleaned: false, ready: false, stop: 'SIGTERM' }],
  ['stoppingReady', 'finish', { at: 'ending', phase: 'stopping', cleaned: false, ready: true, stop: 'SIGINT' }],
  ['failing', 'finish', { at: 'ending', phase: 'ownership', cleaned: false, ready: false, failed: 69 }],
  ['failingStopped', 'finish', { at: 'ending', phase: 'stopping', cleaned: false, ready: false, failed: 70, stop: 'SIGTERM' }],
  ['failingReady', 'finish', { at: 'ending', phase: 'ready', cleaned: false, ready: true, failed: 70 }],
  ['ending', 'finish', 'same'],
  ['ended', 'finish', 'same'],
  ['ending', 'cleaned', { at: 'ending', phase: 'ready', cleaned: true, ready: true }],
  ['cleaned', 'cleaned', 'same'],
  ['ready', 'cleaned', 'same'],
  ['cleaned', 'ended', { at: 'ended', ready: true }],
  ['endingStopped', 'ended', { at: 'ended', ready: false, stop: 'SIGTERM' }],
  ['ready', 'ended', 'same'],
  ['ended', 'ended', 'same'],
];

for (const [from, ev, to] of ROWS) {
  test(`${from} + ${ev} → ${to === 'same' ? 'the same state' : JSON.stringify(to)}`, () => {
    const before = structuredClone(F[from]) as Life;
    const after = transition(before, E[ev]);
    if (to === 'same') assert.equal(after, before);
    else {
      assert.deepEqual(after, to);
      assert.notEqual(after, before);
    }
    assert.deepEqual(before, F[from], 'the state given is not changed');
  });
}

test('every state answers every event with a state of the union (nothing throws, nothing undefined)', () => {
  for (const name of ALL) for (const ev of Object.keys(E) as Ev[]) assert.ok(transition(F[name], E[ev]).at, `${name} + ${ev}`);
});

test('once finishing began, only cleaned and ended move the state', () => {
  for (const name of ['ending', 'endingStopped', 'cleaned', 'ended'] as Name[])
    for (const ev of Object.keys(E) as Ev[]) {
      if (ev === 'cleaned' || ev === 'ended') continue;
      assert.equal(transition(F[name], E[ev]), F[name], `${name} + ${ev}`);
    }
});

test('the phase each state reports (LaunchHandle.phase)', () => {
  const phases: Record<Name, string> = {
    preparing: 'reserve',
    held: 'spawn',
    spawned: 'spawn',
    owning: 'ownership',
    learning: 'learn',
    probing: 'probe',
    asking: 'probe',
    askingExited: 'probe',
    answered: 'ownership',
    answeredProbe: 'probe',
    ready: 'ready',
    stoppingEarly: 'stopping',
    stoppingReady: 'stopping',
    failing: 'ownership',
    failingStopped: 'stopping',
    failingReady: 'ready',
    ending: 'ready',
    endingStopped: 'stopping',
    cleaned: 'ready',
    ended: 'exited',
  };
  for (const name of ALL) assert.equal(phaseOf(F[name]), phases[name], name);
});

test('the predicates the phases decide by', () => {
  const is = (p: (l: Life) => boolean) => ALL.filter((n) => p(F[n]));
  assert.deepEqual(is(starting), ['preparing', 'held', 'spawned', 'owning', 'learning', 'probing', 'asking', 'askingExited', 'answered', 'answeredProbe']);
  assert.deepEqual(is(settled), ALL.filter((n) => !is(starting).includes(n)));
  assert.deepEqual(is(failed), ['failing', 'failingStopped', 'failingReady']);
  assert.deepEqual(is(finishing), ['ending', 'endingStopped', 'cleaned', 'ended']);
  assert.deepEqual(is(cleanedUp), ['cleaned', 'ended']);
  assert.deepEqual(is(wasReady), ['ready', 'stoppingReady', 'failingReady', 'ending', 'cleaned', 'ended']);
  assert.deepEqual(is(exitedWhileAsking), ['askingExited']);
  assert.deepEqual(
    ALL.flatMap((n) => (stopSignal(F[n]) ? [`${n}:${stopSignal(F[n])}`] : [])),
    ['stoppingEarly:SIGTERM', 'stoppingReady:SIGINT', 'failingStopped:SIGTERM', 'endingStopped:SIGTERM'],
  );
});

test('a whole launch: stopped before it was ready, then a failure while stopping, then the cleanup', () => {
  const events: LifeEvent[] = [E.reserved, E.spawned, E.waitOwnership, E.stopTerm, E.stopKill, E.fail, E.fail, E.finish, E.stopTerm, E.cleaned, E.ended];
  const end = events.reduce(transition, START);
  assert.deepEqual(end, { at: 'ended', ready: false, failed: 75, stop: 'SIGTERM' });
});

test('a whole launch: ready, a foreign listener under strict (afterReady), the first failure wins', () => {
  const events: LifeEvent[] = [E.reserved, E.spawned, E.waitProbe, E.asking, E.asked, E.answered, E.ready, E.fail, E.failAfterReady, E.fail, E.finish];
  const end = events.reduce(transition, START);
  assert.deepEqual(end, { at: 'ending', phase: 'ready', cleaned: false, ready: true, failed: 70 });
});
