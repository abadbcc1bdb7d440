/*
 * Line numbers of offsets in one text, for messages that name "FILE:LINE" for many places
 * (every tag of a template). Scanning from the start for each offset made checking N tags
 * O(N × size): 40,000 tags took over a minute. The newlines are found once; each look-up
 * is then a binary search.
 */

/** A function from an offset of `text` to its 1-based line. */
export function lineIndex(text: string): (offset: number) => number {
  const starts: number[] = [0];
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return (offset: number) => {
    // The last line start at or before the offset (an offset past the end is on the last line).
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
}
