/**
 * `berth port --block N` and `berth port --ports SPEC` as a user runs them (the built CLI),
 * inside network namespaces made for the test: outputs, exit codes, 32 allocators at once
 * (test/fixtures/scripts/port-block-driver.ts), and signals mid-allocation.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BERTH, berth } from './helpers/cli.js';
import { netnsUnavailable, requireNetns, runInNetns, tsNode } from './helpers/netns.js';

let work: string;
before(() => {
  work = mkdtempSync(join(tmpdir(), 'berth-port-block-'));
});
after(() => rmSync(work, { recursive: true, force: true }));

const NS = { ephemeral: '40000 60999' };
const range = (lo: number, hi: number) => Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
let stateN = 0;
const state = () => ({ BERTH_STATE_DIR: join(work, `state-${stateN++}`) });

/** Run several berth commands in sequence in one namespace (one shell), separated by a marker line. */
async function inOneNetns(cmds: string[][]): Promise<{ out: string; code: number; err: string }[]> {
  const script = cmds.map((c) => `"$NODE" "$BERTH" ${c.map((a) => `'${a}'`).join(' ')} >"$W/out" 2>"$W/err"; echo "--- $?"; cat "$W/out"; echo "--- err"; cat "$W/err"`).join('\n');
  const w = mkdtempSync(join(work, 'sh-'));
  const r = await runInNetns(NS, ['sh', '-c', script], { env: { ...process.env, ...state(), NODE: process.execPath, BERTH, W: w } });
  assert.equal(r.code, 0, r.stderr);
  const parts = r.stdout.split(/^--- (\d+)\n/m).slice(1);
  const res: { out: string; code: number; err: string }[] = [];
  for (let i = 0; i < parts.length; i += 2) {
    const [out, err] = parts[i + 1]!.split('--- err\n') as [string, string];
    res.push({ code: Number(parts[i]), out, err });
  }
  return res;
}

describe('berth port --block / --ports', () => {
  test('--block: LO-HI, env FIRST/LAST/COUNT, json; contiguous, next block after the first', async (t) => {
    if (!requireNetns(t)) return;
    const [plain, env, json] = await inOneNetns([
      ['port', '--range', '20000-20099', '--block', '8', '--ttl', '1m'],
      ['port', '--range', '20000-20099', '--block', '4', '--ttl', '1m', '--format', 'env'],
      ['port', '--range', '20000-20099', '--block', '3', '--ttl', '1m', '--json'],
    ]);
    assert.equal(plain!.code, 0, plain!.err);
    assert.equal(plain!.out, '20000-20007\n');
    assert.equal(env!.out, 'BERTH_PORT=20008\nBERTH_PORT_FIRST=20008\nBERTH_PORT_LAST=20011\nBERTH_PORT_COUNT=4\n');
    const j = JSON.parse(json!.out) as { ports: number[]; first: number; last: number; count: number; leases: { port: number; pending?: unknown }[] };
    assert.deepEqual(j.ports, [20012, 20013, 20014]);
    assert.deepEqual([j.first, j.last, j.count], [20012, 20014, 3]);
    assert.deepEqual(
      j.leases.map((l) => l.port),
      [20012, 20013, 20014],
    );
    assert.ok(j.leases.every((l) => l.pending === undefined));
  });

  test('--ports: NAME PORT / NAME LO-HI lines, BERTH_PORT_<NAME> env, json ports/set/leases', async (t) => {
    if (!requireNetns(t)) return;
    const [plain, env, json] = await inOneNetns([
      ['port', '--range', '20000-20099', '--ports', 'http,dist=block:32,nccl', '--ttl', '1m', '--name', 'eng'],
      ['port', '--range', '20000-20099', '--ports', 'api,internal=block:16', '--ttl', '1m', '--format', 'env'],
      ['port', '--range', '20000-20099', '--ports', 'gcs,workers=block:5', '--ttl', '1m', '--json'],
    ]);
    assert.equal(plain!.code, 0, plain!.err);
    assert.equal(plain!.out, 'http 20000\ndist 20001-20032\nnccl 20033\n');
    assert.equal(env!.out, 'BERTH_PORT_API=20034\nBERTH_PORT_INTERNAL=20035\nBERTH_PORT_INTERNAL_FIRST=20035\nBERTH_PORT_INTERNAL_LAST=20050\nBERTH_PORT_INTERNAL_COUNT=16\n');
    const j = JSON.parse(json!.out) as { ports: Record<string, unknown>; set: { name: string; kind: string; ports: number[] }[]; leases: { port: number; name?: string }[] };
    assert.deepEqual(j.ports, { gcs: 20051, workers: { first: 20052, last: 20056, count: 5 } });
    assert.deepEqual(j.set, [
      { name: 'gcs', kind: 'single', ports: [20051] },
      { name: 'workers', kind: 'block', ports: range(20052, 20056) },
    ]);
    assert.deepEqual(
      j.leases.map((l) => [l.port, l.name]),
      [[20051, 'gcs'], ...range(20052, 20056).map((p) => [p, 'workers'])],
    );
  });

  test('--ports with a band instance window; a block that cannot fit is 69 naming the entry', async (t) => {
    if (!requireNetns(t)) return;
    const layout = join(work, 'layout.yaml');
    (await import('node:fs')).writeFileSync(layout, 'bands:\n  engines: { range: 21000-21399, window: 100 }\n');
    const [win, tooBig] = await inOneNetns([
      ['port', '--layout', layout, '--band', 'engines', '--instance', '2', '--ports', 'http,dist=window', '--ttl', '1m'],
      ['port', '--range', '20000-20009', '--ports', 'http,dist=block:10', '--ttl', '1m'],
    ]);
    assert.equal(win!.code, 0, win!.err);
    assert.equal(win!.out, 'http 21200\ndist 21201-21299\n');
    assert.equal(tooBig!.code, 69);
    assert.match(tooBig!.err, /^berth: port "dist" \(a block of 10\): no 10 contiguous usable ports in range 20000-20009 \(10 considered, 9 usable\)/);
    assert.match(tooBig!.err, /the longest run of usable ports is 20001-20009 \(9\)\n  1 taken by this set's other ports: 20000\n/);
  });

  test('a block costs a descriptor per port: 2000 ports under a soft limit of 1024 (Node raises it), and a clean 74 under a hard one', async (t) => {
    if (!requireNetns(t)) return;
    const env = { ...process.env, ...state(), NODE: process.execPath, BERTH };
    const soft = await runInNetns(NS, ['sh', '-c', 'ulimit -Sn 1024 && exec "$NODE" "$BERTH" port --range 20000-29999 --block 2000 --ttl 1m'], { env, timeoutMs: 120_000 });
    assert.equal(soft.code, 0, soft.stderr);
    assert.equal(soft.stdout, '20000-21999\n');
    const hard = await runInNetns(NS, ['sh', '-c', 'ulimit -n 1024 && "$NODE" "$BERTH" port --range 20000-29999 --block 2000 --ttl 1m; echo "RC=$?"; echo "LEFT=$(grep -c @berth/v1/ /proc/net/unix)"'], { env, timeoutMs: 120_000 });
    assert.match(hard.stdout, /RC=74\nLEFT=0\n/, hard.stderr);
    assert.match(hard.stderr, /out of file descriptors .*EMFILE; RLIMIT_NOFILE soft 1024, hard 1024.*raise the limit \(ulimit -n/);
    assert.doesNotMatch(hard.stderr, /\n\s+at /);
  });

  test('berth leases shows a block as one row', async (t) => {
    if (!requireNetns(t)) return;
    const [, , leases] = await inOneNetns([
      ['port', '--range', '20000-20099', '--ports', 'http,dist=block:32', '--ttl', '1m', '--name', 'eng'],
      ['port', '--range', '20000-20099', '--block', '5', '--ttl', '1m'],
      ['leases'],
    ]);
    assert.equal(leases!.code, 0, leases!.err);
    const lines = leases!.out.trim().split('\n');
    assert.match(lines[1]!, /^20000 +live +\S+ +\d+ +expires in \d+s +eng\/http$/);
    assert.match(lines[2]!, /^20001-20032 +live +\S+ +\d+ +expires in \d+s +eng\/dist \(32 ports\)$/);
    assert.match(lines[3]!, /^20033-20037 +live +\S+ +\d+ +expires in \d+s +\(5 ports\)$/);
    assert.equal(lines.length, 4);
  });

  test('usage errors exit 64 and say why', async () => {
    const cases: [string[], RegExp][] = [
      [['--block', '8', '--count', '2'], /--count 2 and --block: give one/],
      [['--block', '0'], /--block "0": expected an integer ≥ 1/],
      [['--block', '5000'], /--block 5000: a block has at most 4096 ports/],
      [['--block', '4', '--ports', 'a'], /--block and --ports: give one/],
      [['--ports', 'a,b=block:x'], /"b=block:x" is not NAME, NAME=block:N or NAME=window/],
      [['--ports', 'a,a'], /port name "a" appears twice/],
      [['--ports', 'w=window'], /"w" is "window".*the source is a range/],
    ];
    for (const [args, re] of [
      [['--port', '20000', '--block', '4'], /block 4 from port 20000: a block needs a range or a band.*give range 20000-20003/],
      [['--port', '20000', '--ports', 'a=block:3'], /a block of 3 from the one port 20000: a set needs a range or a band/],
    ] as [string[], RegExp][]) {
      const r = await berth(['port', '--ttl', '1m', ...args], { env: state() });
      assert.equal(r.code, 64, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, re);
    }
    for (const [args, re] of cases) {
      const r = await berth(['port', '--range', '20000-20099', '--ttl', '1m', ...args], { env: state() });
      assert.equal(r.code, 64, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, re);
      assert.match(r.stderr, /Run 'berth port --help' for usage/);
      assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
      assert.equal(r.stdout, '');
    }
    // In a namespace of its own: a lease in the host's would be seen by everyone for its ttl.
    if (netnsUnavailable() === undefined) {
      const ok = await berth(['port', '--range', '20000-20099', '--ttl', '1m', '--block', '2', '--count', '1'], { env: state(), netns: {} });
      assert.equal(ok.code, 0, '--count 1 is what a block is anyway');
    }
  });

  test('--help shows --block and --ports with vLLM, SGLang and Ray examples', async () => {
    const r = await berth(['port', '--help']);
    assert.equal(r.code, 0);
    for (const s of ['--block N', '--ports SPEC', 'VLLM_PORT=$BERTH_PORT_INTERNAL', 'sglang.launch_server', '--min-worker-port $BERTH_PORT_WORKERS_FIRST', '--max-worker-port $BERTH_PORT_WORKERS_LAST']) {
      assert.ok(r.stdout.includes(s), `help mentions ${s}`);
    }
  });
});

interface SwarmRun {
  pid: number;
  code: number | null;
  stdout: string;
  stderr: string;
}

async function swarm(lohi: string, n: number, block: number, strategy?: string) {
  const script = join(import.meta.dirname, 'fixtures', 'scripts', 'port-block-driver.ts');
  const r = await runInNetns(NS, tsNode(script, 'swarm', BERTH, join(work, `swarm-${stateN++}`), lohi, String(n), String(block), ...(strategy ? [strategy] : [])), { timeoutMs: 180_000 });
  assert.equal(r.code, 0, `driver failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as { runs: SwarmRun[]; leases: { port: number; createdBy: number; pending: boolean; live: boolean }[]; others: string[] };
}

function checkSwarm(out: Awaited<ReturnType<typeof swarm>>, block: number, lo: number, hi: number): number {
  const ok = out.runs.filter((r) => r.code === 0);
  for (const r of out.runs) {
    if (r.code === 0) continue;
    assert.equal(r.code, 69, `a failure is a clean 69: ${r.stderr}`);
    assert.match(r.stderr, /^berth: (no 8 contiguous usable ports|could not get a block of 8)/);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  }
  const owner = new Map<number, number>();
  for (const r of ok) {
    const ports = (JSON.parse(r.stdout) as { ports: number[] }).ports;
    assert.equal(ports.length, block);
    assert.deepEqual(ports, range(ports[0]!, ports[0]! + block - 1), 'contiguous');
    assert.ok(ports[0]! >= lo && ports.at(-1)! <= hi);
    for (const p of ports) {
      assert.equal(owner.get(p), undefined, `port ${p} in two blocks (pids ${owner.get(p)} and ${r.pid})`);
      owner.set(p, r.pid);
    }
  }
  // One lease per port, each the one of the process that printed the port, none of a failed one.
  assert.equal(out.leases.length, ok.length * block, 'a lease for every port of every block, and nothing else');
  for (const l of out.leases) {
    assert.equal(owner.get(l.port), l.createdBy, `lease of ${l.port} is its block's`);
    assert.equal(l.pending, false, 'committed: its record is bound');
    assert.equal(l.live, true);
  }
  return ok.length;
}

describe('32 concurrent berth port --block 8 in one namespace', () => {
  test('a band with room for all (300 ports): blocks pairwise disjoint, every failure a clean 69', async (t) => {
    if (!requireNetns(t)) return;
    const out = await swarm('20000-20299', 32, 8);
    const got = checkSwarm(out, 8, 20000, 20299);
    assert.ok(got >= 16, `most get a block (${got} of 32)`);
  });

  test('a band with room for 25 at most (200 ports), lowest and random: all or none per process, never a port twice', async (t) => {
    if (!requireNetns(t)) return;
    for (const strategy of ['lowest', 'random']) {
      const out = await swarm('20000-20199', 32, 8, strategy);
      const got = checkSwarm(out, 8, 20000, 20199);
      assert.ok(got >= 1 && got <= 25, `${strategy}: ${got} blocks`);
      assert.ok(out.runs.some((r) => r.code === 69), `${strategy}: some must fail, the band is too small for 32`);
    }
  });
});

describe('signals during berth port --block', () => {
  for (const signal of ['SIGKILL', 'SIGTERM']) {
    test(`${signal} at any point of a 200-port block leaves all or none of it`, async (t) => {
      if (!requireNetns(t)) return;
      const script = join(import.meta.dirname, 'fixtures', 'scripts', 'port-block-driver.ts');
      const r = await runInNetns(NS, tsNode(script, 'kill', BERTH, join(work, `kill-${signal}`), '20000-20999', '200', signal, '10', '300'), { timeoutMs: 180_000 });
      assert.equal(r.code, 0, r.stderr);
      const { trials } = JSON.parse(r.stdout) as { trials: { code: number | null; printed: boolean; live: number }[] };
      for (const tr of trials) {
        assert.ok(tr.live === 0 || tr.live === 200, `all or none: ${JSON.stringify(tr)}`);
        if (tr.printed) assert.equal(tr.live, 200, 'printed means leased');
        if (signal === 'SIGTERM' && !tr.printed) assert.equal(tr.code, 143, 'interrupted before printing: 128+15, nothing leased');
        if (signal === 'SIGTERM' && !tr.printed) assert.equal(tr.live, 0);
      }
      assert.ok(
        trials.some((x) => x.live === 0),
        'some trials were interrupted mid-allocation',
      );
    });
  }
});
