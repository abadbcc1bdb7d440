import { readFileSync } from 'node:fs';

// From /etc/passwd only: an NSS/LDAP lookup could hang a command that must answer at once.

let table: Map<number, string> | undefined;

/** uid -> name of an /etc/passwd text (later duplicates do not override the first). */
export function parsePasswd(text: string): Map<number, string> {
  const names = new Map<number, string>();
  for (const line of text.split('\n')) {
    const f = line.split(':');
    if (f.length < 3 || f[0] === '' || !/^\d+$/.test(f[2]!)) continue;
    const uid = Number(f[2]);
    if (!names.has(uid)) names.set(uid, f[0]!);
  }
  return names;
}

/** The login name of `uid`, or undefined when /etc/passwd does not list it. */
export function userName(uid: number, passwdPath = '/etc/passwd'): string | undefined {
  if (table === undefined) {
    try {
      table = parsePasswd(readFileSync(passwdPath, 'utf8'));
    } catch {
      table = new Map();
    }
  }
  return table.get(uid);
}

/** "alice (uid 1001)", or "uid 1001" when the name is unknown. */
export function userText(uid: number): string {
  const name = userName(uid);
  return name === undefined ? `uid ${uid}` : `${name} (uid ${uid})`;
}
