/*
 * Diagnostics bundles get copied into tickets and chat, so secrets stay out: environment
 * values whose names look like tokens, keys or passwords, and the same in the command line
 * (`--api-key X`, `--token=X`, `PASSWORD=x`).
 */

const SECRET_NAME = /token|secret|key|pass|cred|auth/i;
const REDACTED = '<redacted>';

function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}

export function redactEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.keys(env).sort()) {
    const v = env[name];
    if (v === undefined) continue;
    out[name] = isSecretName(name) ? REDACTED : v;
  }
  return out;
}

/** argv with the values of secret-looking flags and NAME=value words hidden. */
export function redactArgv(argv: readonly string[]): string[] {
  const out: string[] = [];
  let hideNext = false;
  for (const a of argv) {
    if (hideNext) {
      out.push(REDACTED);
      hideNext = false;
      continue;
    }
    const eq = a.indexOf('=');
    if (eq > 0 && isSecretName(a.slice(0, eq))) {
      out.push(`${a.slice(0, eq + 1)}${REDACTED}`);
      continue;
    }
    if (a.startsWith('-') && eq < 0 && isSecretName(a)) hideNext = true;
    out.push(a);
  }
  return out;
}
