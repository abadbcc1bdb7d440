/** Small statistics and formatting helpers shared by the benchmarks. */

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

/** Nearest-rank percentile, p in 0..100. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const rank = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[rank] as number;
}

export function min(xs: readonly number[]): number {
  return xs.length === 0 ? NaN : Math.min(...xs);
}

export function max(xs: readonly number[]): number {
  return xs.length === 0 ? NaN : Math.max(...xs);
}

/** Milliseconds since an arbitrary origin, sub-ms resolution. */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** "12.3" / "0.412" / "1,234": enough digits to compare, no more. */
export function fmt(x: number, digits?: number): string {
  if (!Number.isFinite(x)) return 'n/a';
  const d = digits ?? (Math.abs(x) >= 100 ? 0 : Math.abs(x) >= 10 ? 1 : Math.abs(x) >= 1 ? 2 : 3);
  return x.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
}

/** "1.23×", with more digits for ratios far below 1 so they never print as 0.00×. */
export function ratio(a: number, b: number): string {
  if (!(b > 0) || !Number.isFinite(a)) return 'n/a';
  const r = a / b;
  return `${fmt(r, r >= 0.1 || r === 0 ? 2 : r >= 0.01 ? 3 : 4)}×`;
}

/** "met" / "missed" against a target, for the tables (benchmarks are reported, never asserted). */
export function verdict(ok: boolean): string {
  return ok ? 'met' : '**missed**';
}
