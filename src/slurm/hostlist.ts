import { BerthError, EXIT } from '../errors.js';

/*
 * Slurm hostlists ("n[01-03,07],gpu-b3"), expanded and compressed the way Slurm 22.05's
 * `scontrol show hostnames` / `show hostlist` do (the tests compare with the real ones):
 *   - items are separated by commas or whitespace (CR too: a list read from a CRLF file);
 *     empty items are skipped; any other blank or control character is an error, since no
 *     host name has one and Slurm would pass it on as part of the name;
 *   - a bracket holds comma-separated numbers and LO-HI ranges; the width of LO is the
 *     zero padding of every number of the range ("[001-3]" → 001 002 003, "[9-011]" → 9 10 11);
 *   - several bracket groups multiply out, the first one varying slowest
 *     ("r[1-2]-n[1-2]" → r1-n1 r1-n2 r2-n1 r2-n2); text after the last bracket is invalid;
 *   - order and duplicates are kept, by compression too (neighbours with one prefix share a bracket).
 */

/** More hosts than any cluster has: a typo such as n[1-1000000000] must not exhaust memory. */
export const MAX_HOSTS = 1_000_000;

function invalid(text: string, why: string, variable?: string): BerthError {
  const what = variable === undefined ? `hostlist ${JSON.stringify(text)}` : `${variable}=${JSON.stringify(text)}`;
  return new BerthError(EXIT.DATAERR, `${what}: ${why}`, { hostlist: text, ...(variable !== undefined ? { variable } : {}) });
}

const isDigits = (s: string): boolean => s.length > 0 && /^[0-9]+$/.test(s);

/** The numbers of one bracket's inside, already padded: "01-03,7" → ["01","02","03","7"]. */
function bracketValues(inner: string, text: string, variable: string | undefined): string[] {
  const out: string[] = [];
  for (const part of inner.split(',')) {
    const dash = part.indexOf('-');
    const loText = dash < 0 ? part : part.slice(0, dash);
    const hiText = dash < 0 ? part : part.slice(dash + 1);
    if (!isDigits(loText) || !isDigits(hiText)) {
      throw invalid(text, `[${inner}] holds ${JSON.stringify(part)}; a bracket lists numbers and LO-HI ranges, e.g. [01-03,07]`, variable);
    }
    if (loText.length > 15 || hiText.length > 15) throw invalid(text, `[${inner}]: numbers of more than 15 digits are not supported`, variable);
    const lo = Number(loText);
    const hi = Number(hiText);
    if (lo > hi) throw invalid(text, `range ${part} runs backwards; write ${hiText}-${loText}`, variable);
    if (hi - lo + 1 + out.length > MAX_HOSTS) throw invalid(text, `more than ${MAX_HOSTS} hosts`, variable);
    for (let n = lo; n <= hi; n++) out.push(String(n).padStart(loText.length, '0'));
  }
  return out;
}

const BLANK_OR_CONTROL = /[\s\x00-\x1f\x7f-\x9f]/u;

/** One item ("r[1-2]-n[01-02]") into its hosts. */
function expandItem(item: string, text: string, variable: string | undefined, room: number): string[] {
  const bad = BLANK_OR_CONTROL.exec(item);
  if (bad) throw invalid(text, `${JSON.stringify(item)} holds ${JSON.stringify(bad[0])}; host names have no blanks or control characters`, variable);
  // Segments: literal, bracket, literal, bracket, … — the cartesian product in order.
  let hosts = [''];
  let i = 0;
  while (i < item.length) {
    const open = item.indexOf('[', i);
    const close = item.indexOf(']', i);
    if (open < 0) {
      if (close >= 0) throw invalid(text, `"]" without "[" in ${JSON.stringify(item)}`, variable);
      const tail = item.slice(i);
      if (i > 0) throw invalid(text, `${JSON.stringify(item)} has text after its last bracket ("${tail}"); Slurm accepts none`, variable);
      hosts = hosts.map((h) => h + tail);
      break;
    }
    if (close >= 0 && close < open) throw invalid(text, `"]" without "[" in ${JSON.stringify(item)}`, variable);
    const end = item.indexOf(']', open + 1);
    if (end < 0) throw invalid(text, `"[" without "]" in ${JSON.stringify(item)}`, variable);
    const prefix = item.slice(i, open);
    const values = bracketValues(item.slice(open + 1, end), text, variable);
    if (hosts.length * values.length > room) throw invalid(text, `more than ${MAX_HOSTS} hosts`, variable);
    const next: string[] = [];
    for (const h of hosts) for (const v of values) next.push(h + prefix + v);
    hosts = next;
    i = end + 1;
  }
  return hosts;
}

function splitItems(text: string, variable: string | undefined): string[] {
  const items: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of text) {
    if (ch === '[') depth++;
    else if (ch === ']') depth--;
    if (depth > 1) throw invalid(text, 'brackets cannot nest', variable);
    if (depth === 0 && (ch === ',' || ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r')) {
      if (cur !== '') items.push(cur);
      cur = '';
    } else cur += ch;
  }
  if (cur !== '') items.push(cur);
  return items;
}

/** Host names of a Slurm hostlist; throws BerthError(DATAERR) naming the list (and `variable`, from the environment) when malformed. */
export function expandHostlist(text: string, variable?: string): string[] {
  const out: string[] = [];
  for (const item of splitItems(text, variable)) {
    for (const h of expandItem(item, text, variable, MAX_HOSTS - out.length)) out.push(h);
  }
  return out;
}

/** A name's trailing digits as written (padding kept); past 15 digits a double loses precision, so the name is kept whole. */
function splitHost(host: string): { prefix: string; digits?: string } {
  let i = host.length;
  while (i > 0 && host.charCodeAt(i - 1) >= 48 && host.charCodeAt(i - 1) <= 57) i--;
  return i === host.length || host.length - i > 15 ? { prefix: host } : { prefix: host.slice(0, i), digits: host.slice(i) };
}

/** A hostlist naming `hosts` in order (consecutive numbers of one padding become LO-HI), as `scontrol show hostlist` gives. */
export function compressHostlist(hosts: readonly string[]): string {
  const items: string[] = [];
  let i = 0;
  while (i < hosts.length) {
    const first = splitHost(hosts[i]!);
    if (first.digits === undefined) {
      items.push(first.prefix);
      i++;
      continue;
    }
    // Ranges of this prefix group: [lo as written, hi number].
    const ranges: { lo: string; hi: number }[] = [];
    while (i < hosts.length) {
      const s = splitHost(hosts[i]!);
      if (s.digits === undefined || s.prefix !== first.prefix) break;
      const last = ranges[ranges.length - 1];
      const n = Number(s.digits);
      // Joins the range only when the range's padding writes it exactly as given.
      if (last && n === last.hi + 1 && String(n).padStart(last.lo.length, '0') === s.digits) last.hi = n;
      else ranges.push({ lo: s.digits, hi: n });
      i++;
    }
    const inner = ranges.map((r) => (Number(r.lo) === r.hi ? r.lo : `${r.lo}-${String(r.hi).padStart(r.lo.length, '0')}`));
    items.push(inner.length === 1 && !inner[0]!.includes('-') ? first.prefix + inner[0] : `${first.prefix}[${inner.join(',')}]`);
  }
  return items.join(',');
}
