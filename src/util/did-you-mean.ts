/** Levenshtein distance. */
function distance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j]!;
      prev[j] = Math.min(up + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length]!;
}

/**
 * ` (did you mean "x"?)` for the allowed word nearest to `word`, at most 2 edits away, or ''. The edits must also be
 * fewer than half the word ("zz" is 2 edits from "p2"), unless `anyLength` (long fixed keys: "wind" suggests "window").
 */
export function didYouMean(word: string, allowed: Iterable<string>, opts: { anyLength?: boolean } = {}): string {
  let best: string | undefined;
  let bestD = 3;
  for (const k of allowed) {
    const d = distance(word.toLowerCase(), k.toLowerCase());
    if (d < bestD && (opts.anyLength || d * 2 < word.length)) {
      best = k;
      bestD = d;
    }
  }
  return best === undefined ? '' : ` (did you mean "${best}"?)`;
}
