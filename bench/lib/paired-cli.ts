/**
 * By hand: `node --import tsx bench/lib/paired-cli.ts PAIRS -- A… -- B…` times A and B in
 * alternating pairs (paired.ts) and prints the medians and the median of per-pair ratios B/A.
 * How each start-up change of issue 31 was measured before it was kept (docs/scale.md).
 */
import { paired } from './paired.js';

const args = process.argv.slice(2);
const seps = args.flatMap((x, i) => (x === '--' ? [i] : []));
if (seps.length !== 2) {
  process.stderr.write('usage: paired-cli.ts PAIRS -- A… -- B…\n');
  process.exit(64);
}
const pairs = Number(args[0]);
const a = args.slice(seps[0]! + 1, seps[1]);
const b = args.slice(seps[1]! + 1);
const r = paired(a, b, pairs);
const f = (x: number) => x.toFixed(1);
process.stdout.write(`A ${f(r.aWallMs)} ms wall ${f(r.aCpuMs)} ms CPU | B ${f(r.bWallMs)} ms wall ${f(r.bCpuMs)} ms CPU | B/A per-pair median: wall ${r.wallRatio.toFixed(3)}× CPU ${r.cpuRatio.toFixed(3)}× (${r.pairs} pairs)\n`);
