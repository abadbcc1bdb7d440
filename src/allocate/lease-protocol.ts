/*
 * The lease protocol, version 1, as names in the network namespace's abstract Unix socket
 * space (docs/leases.md is the specification; keep the two in step). Pure: the names only.
 *
 * Every name is the 107 bytes of sun_path after its leading NUL: the text below, then NUL
 * bytes up to the end (Node.js binds abstract names that way, so every implementation must,
 * or its names are different names). /proc/net/unix and `ss -xl` print each NUL as "@".
 *
 *   berth/v1/p/<port>                        the port's lease: exclusive, bound atomically
 *   berth/v1/a/<uid>/<pid>/<lo>-<hi>/<rand>  an allocator at work in ports lo-hi
 *   berth/v1/r/<id>/<i>/<n>/<chunk>          part i of n of a lease record
 *
 * A record's payload (its chunks joined in order) is "key=value" fields joined by "/":
 * uid, pid (allocator), owner, pidns, exp (ms since epoch), at (ms), job, step, kind (single or
 * block), ports ("20000-20015,20020"), name, set. Values are percent-encoded UTF-8 over
 * [A-Za-z0-9._~:+,-] ("@" never appears unescaped: it is how NUL padding prints).
 *
 * Names are data, not trust: any local user can bind any name. A malformed name is
 * ignored; a port name of any shape that names a port makes that port taken.
 */

export const PREFIX = 'berth/v1/';
/** Bytes of an abstract name after its leading NUL (sizeof sun_path - 1). */
export const NAME_BYTES = 107;
/** Longest lease name stored (a stack's "file:service/replica/port" included); longer ones are cut. */
export const STORED_NAME_CHARS = 128;
/** Longest name a user may give (--name, a --ports entry): longer ones are refused. */
export const USER_NAME_CHARS = 64;
/** Records longer than this many parts are not read (a block is one range: one part). */
export const MAX_PARTS = 999;

export function portName(port: number): string {
  return `${PREFIX}p/${port}`;
}

/** Random [0-9a-z] text: names only need to differ from a live one (a clash is retried). */
export function randomId(chars: number): string {
  let s = '';
  while (s.length < chars) s += Math.floor(Math.random() * 36 ** 6).toString(36).padStart(6, '0');
  return s.slice(0, chars);
}

export function allocatorName(uid: number, pid: number, lo: number, hi: number, rand = randomId(6)): string {
  return `${PREFIX}a/${uid}/${pid}/${lo}-${hi}/${rand}`;
}

/** A name cut to `max` characters (whole code points), with "…" when cut. */
export function capName(name: string, max = STORED_NAME_CHARS): string {
  const cps = [...name];
  return cps.length <= max ? name : `${cps.slice(0, max - 1).join('')}…`;
}
