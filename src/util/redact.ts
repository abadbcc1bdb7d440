/*
 * Diagnostics bundles and run folders get copied into tickets and chat, so credentials stay
 * out of them. The rules (docs/run.md "What diagnostics keep, what they redact"):
 *
 *   1. names: an environment variable, a flag (`--api-key X`, `--token=X`) or a NAME=VALUE
 *      word whose name looks like a credential has its whole value hidden (isSecretName);
 *   2. anywhere in any text: the userinfo of a URL (`postgres://u:pw@db/x`), the value of an
 *      Authorization/Cookie/API-key header, a `Bearer` token, the value of `secret=` /
 *      `"secret": "…"` pairs (query strings, ODBC strings, JSON);
 *   3. command lines: also `-p VALUE` / `-pVALUE` unless VALUE is a port number (mysql's
 *      password flag; `-p 8080` stays), and the password of `-u USER:PASSWORD` (curl).
 *
 * Everything else is kept: a bundle that hides too much cannot explain a failure. The rules
 * are heuristics over names and shapes, so a secret in an innocently named variable
 * (`FOO=hunter2`) is kept; the docs say so.
 */

export const REDACTED = '<redacted>';

/** Whole words (split at `_`, `-`, `.`, camelCase) that name a credential. */
const SECRET_WORDS = new Set([
  'key', 'keys', 'apikey', 'token', 'tokens', 'secret', 'secrets', 'pass', 'passwd', 'password', 'passwords',
  'passphrase', 'pwd', 'pw', 'pat', 'jwt', 'cookie', 'cookies', 'cred', 'creds', 'credential', 'credentials',
  'auth', 'authorization', 'bearer', 'dsn', 'otp', 'pin', 'salt', 'hmac', 'signature', 'privkey', 'sessionid',
]);

/** Fragments that name a credential wherever they stand (`DBPASSWORD`, `MYTOKEN`, `OAUTH2`). */
const SECRET_FRAGMENTS = /token|secret|passw|passphrase|credential|apikey|privkey|privatekey|cookie|jwt|bearer|oauth/i;

/** Names that contain a secret word but hold none: the working directories the shell keeps. */
const NOT_SECRET = new Set(['PWD', 'OLDPWD']);

function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== '');
}

/** True for names such as GITHUB_PAT, MYSQL_PWD, apiKey, --db-password, X-Auth-Token. */
export function isSecretName(name: string): boolean {
  const bare = name.replace(/^-+/, '');
  if (bare === '' || NOT_SECRET.has(bare)) return false;
  if (SECRET_FRAGMENTS.test(bare)) return true;
  return nameWords(bare).some((w) => SECRET_WORDS.has(w));
}

// ---- rule 2: shapes that are secret in any text ----------------------------------------------

/** scheme://USERINFO@host: everything up to the last "@" before the path. */
const URL_USERINFO = /(?<![a-z0-9+.-])([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@'"]*(?:@[^\s/?#@'"]*)*@(?=[^\s@])/gi;

/**
 * Where a named value starts: `NAME:` (an HTTP header, a YAML line) or `NAME=` (a query or
 * ODBC string, an env word). The lookbehind starts a match only at the start of a name, so a
 * long run of name characters costs linear time, not quadratic.
 */
const NAME_COLON = /(?<![A-Za-z0-9_.-])([A-Za-z_][A-Za-z0-9_.-]*)[ \t]*:[ \t]*/g;
const NAME_EQ = /(?<![A-Za-z0-9_.-])([A-Za-z_][A-Za-z0-9_.-]*)=/g;

/** End of a quoted value starting at text[i] (a quote), or the text's end when unclosed. */
function quotedEnd(text: string, i: number): number {
  const close = text.indexOf(text[i]!, i + 1);
  return close < 0 ? text.length : close + 1;
}

/** A header or YAML value: to the line's end or a quote; a quoted one is its quotes' inside. */
function colonValue(text: string, i: number): [number, number] {
  const c = text[i];
  if (c === '"' || c === "'") return [i + 1, Math.max(i + 1, quotedEnd(text, i) - 1)];
  let e = i;
  while (e < text.length && !`'"\r\n`.includes(text[e]!)) e++;
  return [i, e];
}

/** A NAME=VALUE value: up to whitespace or & ; , (quoted parts included). */
function eqValue(text: string, i: number): [number, number] {
  let e = i;
  while (e < text.length && !' \t\r\n&;,'.includes(text[e]!)) e = text[e] === '"' || text[e] === "'" ? quotedEnd(text, e) : e + 1;
  return [i, e];
}

/**
 * The value after every secret NAME (found by `head`) replaced. A name that is not secret is
 * stepped over, not its value: `X=PASSWORD=y` and `a: b Authorization: c` are both caught.
 */
function redactNamedValues(text: string, head: RegExp, valueAt: (text: string, i: number) => [number, number]): string {
  let out = '';
  let copied = 0;
  head.lastIndex = 0;
  for (let m = head.exec(text); m !== null; m = head.exec(text)) {
    const after = m.index + m[0].length;
    if (!isSecretName(m[1]!)) continue;
    const [vs, ve] = valueAt(text, after);
    if (ve <= vs || text.slice(vs, ve) === REDACTED) continue;
    out += text.slice(copied, vs) + REDACTED;
    copied = ve;
    head.lastIndex = ve;
  }
  return out + text.slice(copied);
}

/** `Bearer abc.def` anywhere (a bare scheme word followed by something token-shaped). */
const BEARER = /\b(bearer\s+)(?!<redacted>)[A-Za-z0-9._~+/-]{8,}=*/gi;

/** "name": "value" inside JSON text; judged by name. */
const JSON_PAIR = /("([^"\\]*)"\s*:\s*)"(?:[^"\\]|\\.)*"/g;

function redactShapes(text: string): string {
  let t = text.replace(URL_USERINFO, `$1${REDACTED}@`);
  t = redactNamedValues(t, NAME_COLON, colonValue);
  t = redactNamedValues(t, NAME_EQ, eqValue);
  t = t.replace(BEARER, `$1${REDACTED}`);
  return t.replace(JSON_PAIR, (all, head: string, name: string) => (isSecretName(name) ? `${head}"${REDACTED}"` : all));
}

// ---- rules 1 and 3: words of a command line ---------------------------------------------------

/** A flag that may take the next word as its value (`--token`, `-password`, `-p`). */
const FLAG = /^--?[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/** A port or a port mapping (`8080`, `{port}`, `127.0.0.1:{port}:80/tcp`): what `-p` means to most servers. */
const PORTISH = /^(?:[\d.:[\]-]|\{port\}|\{host\})+(?:\/(?:tcp|udp|sctp))?$/i;

/**
 * What to do with an argv word, given the one before: hide it whole, hide what follows a
 * prefix of it, or keep it (then only the shapes of rule 2 apply).
 */
function judgeWord(word: string, prev: string | undefined, commandLine: boolean): { hide: true } | { keep: string } | undefined {
  // A flag after a secret flag is the next flag (`--no-auth --verbose`), not its value.
  if (prev !== undefined && FLAG.test(prev) && !word.startsWith('--')) {
    if (isSecretName(prev)) return { hide: true };
    if (commandLine && prev === '-p' && !PORTISH.test(word)) return { hide: true };
    if (commandLine && (prev === '-u' || prev === '--user')) {
      const colon = word.indexOf(':');
      if (colon >= 0) return { keep: word.slice(0, colon + 1) };
    }
  }
  if (word.startsWith('-')) {
    const eq = word.indexOf('=');
    if (eq > 0 && isSecretName(word.slice(0, eq))) return { keep: word.slice(0, eq + 1) };
    // mysql -pSECRET; short clusters such as -pv are left alone.
    if (commandLine && /^-p[^\s=]{3,}$/.test(word) && !PORTISH.test(word.slice(2)) && !word.includes(REDACTED)) return { keep: '-p' };
  }
  return undefined;
}

function redactWord(word: string, prev: string | undefined, commandLine: boolean): string {
  const j = judgeWord(word, prev, commandLine);
  return j === undefined ? redactShapes(word) : 'hide' in j ? REDACTED : j.keep + REDACTED;
}

/** argv with secret flag values, NAME=value words and secret shapes hidden. */
export function redactArgv(argv: readonly string[]): string[] {
  return argv.map((a, i) => redactWord(a, argv[i - 1], true));
}

/** Unquoted value of a shell word, and where it stands in the text. */
interface Word {
  start: number;
  end: number;
  value: string;
  /** Text index of each character of `value`. */
  at: number[];
}

/** Words of shell-like text: whitespace outside quotes separates; quotes are removed from `value`. */
function shellWords(text: string): Word[] {
  const words: Word[] = [];
  let i = 0;
  while (i < text.length) {
    while (i < text.length && /\s/.test(text[i]!)) i++;
    if (i >= text.length) break;
    const start = i;
    let value = '';
    const at: number[] = [];
    let quote: string | undefined;
    for (; i < text.length; i++) {
      const c = text[i]!;
      if (quote === undefined && (c === "'" || c === '"')) quote = c;
      else if (quote !== undefined && c === quote) quote = undefined;
      else if (quote === undefined && /\s/.test(c)) break;
      else {
        value += c;
        at.push(i);
      }
    }
    words.push({ start, end: i, value, at });
  }
  return words;
}

/** The quote left open at the end of a word's start ('' when none). */
function openQuote(part: string): string {
  let quote = '';
  for (const c of part) {
    if (quote === '' && (c === "'" || c === '"')) quote = c;
    else if (c === quote) quote = '';
  }
  return quote;
}

/**
 * Shell-like text (a `cmd:` ready probe, a command line joined with spaces, a message):
 * the argv rules on its words, then the shapes of rule 2 on the whole. `commandLine` adds
 * the rules that only make sense in a command (`-p VALUE`, `-u USER:PASSWORD`); they also
 * apply from a word starting with `cmd:` on (a message quoting a probe).
 */
export function redactText(text: string, opts: { commandLine?: boolean } = {}): string {
  let commandLine = opts.commandLine === true;
  const words = shellWords(text);
  let out = '';
  let at = 0;
  for (let k = 0; k < words.length; k++) {
    const w = words[k]!;
    // A message that quotes a `cmd:` probe: the rest is that probe's command line.
    if (w.value.startsWith('cmd:')) commandLine = true;
    const j = judgeWord(w.value, words[k - 1]?.value, commandLine);
    if (j === undefined) continue;
    // A kept prefix is copied as written, and a quote it leaves open is closed, so the rest
    // of the text reads as before and a second pass judges the word alike.
    const keptEnd = 'hide' in j || j.keep.length === 0 ? w.start : w.at[j.keep.length - 1]! + 1;
    out += text.slice(at, keptEnd) + REDACTED + openQuote(text.slice(w.start, keptEnd));
    at = w.end;
  }
  return redactShapes(out + text.slice(at));
}

/** A ready spec as shown: the command of `cmd:` read as a command line. */
export function redactReadySpec(spec: string): string {
  return spec.startsWith('cmd:') ? `cmd:${redactText(spec.slice(4), { commandLine: true })}` : redactText(spec);
}

export function redactEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.keys(env).sort()) {
    const v = env[name];
    if (v === undefined) continue;
    out[name] = isSecretName(name) ? REDACTED : redactShapes(v);
  }
  return out;
}

/**
 * Every string of a JSON-able value through redactText (Maps become objects, as JSON.stringify
 * would show them): the last pass over a whole bundle, so error messages and anything added
 * later are covered too. Structured fields (argv, env) are redacted by their own rules first.
 */
export function redactJson(_key: string, value: unknown): unknown {
  if (typeof value === 'string') return redactText(value);
  if (value instanceof Map) return Object.fromEntries(value);
  return value;
}
