import { didYouMean } from '../../util/did-you-mean.js';

/*
 * A list placeholder's per-entry format: {LIST|PATTERN} or {LIST|PATTERN|SEP}. A program
 * rarely takes the bare comma-joined list: nats-server's --routes wants
 * nats://h:p,nats://h:p, etcd's --initial-cluster m0=http://h:p,…. PATTERN is written once
 * per entry (replica, in the list's order) with the entry's fields in braces, the entries
 * joined with SEP (default ","):
 *   {nats.ports.cluster.hostports|nats://{}}        nats://h:p,nats://h:p,…
 *   {etcd.ports.peer|m{index}=http://{hostport}}   m0=http://h:p,m1=…
 * Unambiguous beside the rest of the grammar: no placeholder name holds "|", so the first
 * "|" before the first "}" starts a format (before this, such text was always an error).
 * Inside it "{{" is a literal "{", "{FIELD}" an entry field, "|" starts the separator and
 * the first "}" outside a field ends the placeholder: a pattern holds no literal "|" or "}".
 */

/** The fields of one entry; "" is `{}`, the entry's value as the bare list gives it. */
export const ENTRY_FIELDS = ['index', 'name', 'host', 'port', 'hostport', 'node'] as const;
export type EntryField = '' | (typeof ENTRY_FIELDS)[number];

export interface ListFormat {
  pattern: (string | { field: EntryField })[];
  sep: string;
}

/** One entry of a list: its value as the bare list writes it, and its fields. */
export interface ListEntry {
  value: string;
  index: number;
  /** The service's name. */
  name: string;
  /** Where the entry's port is reached (a wildcard bind: loopback), and that port. */
  host: string;
  port: number;
  hostport: string;
  node: string;
}

export const KNOWN_ENTRY_FIELDS = `{} (the entry as the list writes it), ${ENTRY_FIELDS.map((f) => `{${f}}`).join(', ')}`;

export interface FormatScan {
  format: ListFormat;
  /** The offset of the "}" that ends the placeholder. */
  end: number;
  problems: string[];
  /** A spread list takes no separator. */
  sepGiven: boolean;
}

/**
 * Reads a format from `from` (right after the "|"); undefined when no "}" ends it. Never
 * throws: a problem is reported and the scan goes on, so every one is said at once.
 */
export function scanListFormat(t: string, from: number): FormatScan | undefined {
  const pattern: ListFormat['pattern'] = [];
  const problems: string[] = [];
  let literal = '';
  let sep: string | undefined;
  const push = (s: string) => {
    if (sep !== undefined) sep += s;
    else literal += s;
  };
  let i = from;
  while (i < t.length) {
    const c = t[i]!;
    if (c === '}') {
      if (literal !== '') pattern.push(literal);
      return { format: { pattern, sep: sep ?? ',' }, end: i, problems, sepGiven: sep !== undefined };
    }
    if (c === '{' && t[i + 1] === '{') {
      push('{');
      i += 2;
      continue;
    }
    if (c === '{') {
      const close = t.indexOf('}', i + 1);
      if (close < 0) return undefined;
      const name = t.slice(i + 1, close);
      if (sep !== undefined) problems.push(`its separator is plain text, but holds {${name}} (write {{ for a literal "{")`);
      else if (name !== '' && !(ENTRY_FIELDS as readonly string[]).includes(name)) {
        problems.push(
          `{${name}} is not a field of a list entry${didYouMean(name, ENTRY_FIELDS, { anyLength: true })}; an entry has ${KNOWN_ENTRY_FIELDS} (write {{ for ` +
            `a literal "{")`,
        );
      } else {
        if (literal !== '') pattern.push(literal);
        literal = '';
        pattern.push({ field: name as EntryField });
      }
      i = close + 1;
      continue;
    }
    if (c === '|') {
      if (sep !== undefined) problems.push('has a third "|": a format is {LIST|PATTERN} or {LIST|PATTERN|SEPARATOR}, and neither holds a "|"');
      else {
        if (literal !== '') pattern.push(literal);
        literal = '';
        sep = '';
      }
      i++;
      continue;
    }
    push(c);
    i++;
  }
  return undefined;
}

export function formatEntries(entries: readonly ListEntry[], f: ListFormat): string[] {
  return entries.map((e) => f.pattern.map((p) => (typeof p === 'string' ? p : p.field === '' ? e.value : String(e[p.field]))).join(''));
}
