import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BerthError } from '../src/errors.js';
import { compressHostlist, expandHostlist } from '../src/slurm/hostlist.js';

// Expected values are what Slurm 22.05's `scontrol show hostnames` / `show hostlist` print
// (test/slurm-cluster.test.ts compares with the real commands on the local cluster).

test('expansion: ranges, lists, zero padding, several groups, separators, duplicates', () => {
  const cases: [string, string[]][] = [
    ['node[01-03,07]', ['node01', 'node02', 'node03', 'node07']],
    ['gpu-a[1-2],gpu-b3', ['gpu-a1', 'gpu-a2', 'gpu-b3']],
    ['c[001-3]', ['c001', 'c002', 'c003']],
    ['d[8-11]', ['d8', 'd9', 'd10', 'd11']],
    ['a[9-011]', ['a9', 'a10', 'a11']], // the padding is LO's width
    ['a[01-1]', ['a01']],
    ['a[1-2]b[3-4]', ['a1b3', 'a1b4', 'a2b3', 'a2b4']],
    ['rack[1-2]-node[01-02]', ['rack1-node01', 'rack1-node02', 'rack2-node01', 'rack2-node02']],
    ['n[1-2][3-4]', ['n13', 'n14', 'n23', 'n24']],
    ['n[01-02],,n5', ['n01', 'n02', 'n5']],
    ['n1 n2', ['n1', 'n2']],
    ['a[1-2,1]', ['a1', 'a2', 'a1']],
    ['1[1-2]', ['11', '12']],
    ['a[0-0]', ['a0']],
    ['node', ['node']],
  ];
  for (const [text, want] of cases) assert.deepEqual(expandHostlist(text), want, text);
  assert.deepEqual(expandHostlist(''), []);
});

test('expansion: malformed lists are BerthError 65 naming the list (and the variable)', () => {
  const bad: [string, RegExp][] = [
    ['a[]', /\[\] holds ""/],
    ['a[x]', /holds "x"/],
    ['x[5-3]', /range 5-3 runs backwards/],
    ['a[1-2', /"\[" without "\]"/],
    ['a1]', /"\]" without "\["/],
    ['a[1-2]-x', /text after its last bracket/],
    ['a[1-3,5]b', /text after its last bracket/],
    ['a[1-2000000]', /more than 1000000 hosts/],
    ['a[1-1000]b[1-1001]', /more than 1000000 hosts/],
    ['a[[1]]', /cannot nest/],
  ];
  for (const [text, re] of bad) {
    assert.throws(() => expandHostlist(text), (e: unknown) => e instanceof BerthError && e.exitCode === 65 && re.test(e.message) && e.message.includes(JSON.stringify(text)), text);
  }
  assert.throws(() => expandHostlist('n[2-1]', 'SLURM_JOB_NODELIST'), /^BerthError: SLURM_JOB_NODELIST="n\[2-1\]": range 2-1 runs backwards/);
});

test('compression keeps order and padding, like scontrol show hostlist', () => {
  const cases: [string[], string][] = [
    [['n3', 'n1', 'n2', 'n2'], 'n[3,1-2,2]'],
    [['a09', 'a10'], 'a[09-10]'],
    [['b9', 'b10'], 'b[9-10]'],
    [['c1x'], 'c1x'],
    [['a1', 'a01'], 'a[1,01]'],
    [['a099', 'a100'], 'a[099-100]'],
    [['a1', 'a2', 'b1', 'a3'], 'a[1-2],b1,a3'],
    [['n5'], 'n5'],
    [['x', 'y1', 'y2'], 'x,y[1-2]'],
    [['a01b3', 'a01b4'], 'a01b[3-4]'],
    [['1', '2', '3'], '[1-3]'],
    [['n1', 'n3', 'n5'], 'n[1,3,5]'],
    [['a008', 'a9', 'a010'], 'a[008,9,010]'],
    [['a-1', 'a-2'], 'a-[1-2]'],
    [[], ''],
  ];
  for (const [hosts, want] of cases) {
    assert.equal(compressHostlist(hosts), want, hosts.join(','));
    assert.deepEqual(expandHostlist(want), hosts, `round trip of ${want}`);
  }
});

test('compress(expand(x)) round-trips generated lists', () => {
  let seed = 7;
  const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
  for (let i = 0; i < 300; i++) {
    const hosts = Array.from({ length: 1 + rnd(12) }, () => {
      const width = 1 + rnd(3);
      return ['n', 'gpu-a', 'x1y', ''][rnd(4)]! + String(rnd(120)).padStart(width, '0');
    });
    assert.deepEqual(expandHostlist(compressHostlist(hosts)), hosts, hosts.join(','));
  }
});
