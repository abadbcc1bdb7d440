/**
 * Reads a V8 .cpuprofile (node --cpu-prof) and says where the time went: self time by
 * function, and inclusive time of the functions whose names are asked for (a sample counts
 * once for a function however often it is on the stack). Used by bench/scale-up.ts and by
 * hand: `node --import tsx bench/lib/cpu-profile.ts FILE [name,name…]`.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileSummary {
  totalMs: number;
  /** Self time by "function file:line", largest first. */
  self: { fn: string; ms: number }[];
  /** Inclusive time of each asked name (matched against the function name). */
  inclusive: Record<string, number>;
}

const label = (n: Node) => `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.split('/').slice(-1)[0] ?? ''}:${n.callFrame.lineNumber + 1}`;

export function summarizeProfile(path: string, names: readonly string[] = []): ProfileSummary {
  const p = JSON.parse(readFileSync(path, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map<number, number>();
  // timeDeltas[i] is the gap before sample i: it belongs to the sample before it.
  for (let i = 0; i < p.samples.length; i++) {
    const dt = p.timeDeltas[i + 1] ?? 0;
    selfUs.set(p.samples[i]!, (selfUs.get(p.samples[i]!) ?? 0) + dt);
  }
  const self = new Map<string, number>();
  const inclusive: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));
  for (const [id, us] of selfUs) {
    const n = byId.get(id)!;
    self.set(label(n), (self.get(label(n)) ?? 0) + us);
    if (names.length === 0) continue;
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const fn = byId.get(at)!.callFrame.functionName;
      for (const want of names) if (fn === want && !seen.has(want)) {
        seen.add(want);
        inclusive[want]! += us;
      }
    }
  }
  const totalUs = [...selfUs.values()].reduce((a, b) => a + b, 0);
  return {
    totalMs: totalUs / 1000,
    self: [...self].map(([fn, us]) => ({ fn, ms: us / 1000 })).sort((a, b) => b.ms - a.ms),
    inclusive: Object.fromEntries(Object.entries(inclusive).map(([k, us]) => [k, us / 1000])),
  };
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const names = (process.argv[3] ?? '').split(',').filter((s) => s !== '');
  const s = summarizeProfile(process.argv[2]!, names);
  console.log(`total sampled ${s.totalMs.toFixed(0)} ms`);
  for (const { fn, ms } of s.self.slice(0, Number(process.env.TOP ?? 40))) console.log(`${ms.toFixed(1).padStart(9)} ms ${((ms / s.totalMs) * 100).toFixed(1).padStart(5)}%  ${fn}`);
  for (const [k, ms] of Object.entries(s.inclusive)) console.log(`incl ${ms.toFixed(1).padStart(9)} ms ${((ms / s.totalMs) * 100).toFixed(1).padStart(5)}%  ${k}`);
}
