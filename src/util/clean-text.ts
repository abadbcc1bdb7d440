// C0/C1 controls, DEL, and bidi overrides/isolates: a hostile name or command line must not
// move the terminal cursor, inject escape sequences, or reorder what a reader sees.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Untrusted text (other users' lease names, owners' argv) made printable: controls become \xNN. */
export function cleanText(s: string): string {
  return s.replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}
