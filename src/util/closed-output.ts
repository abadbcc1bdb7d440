/*
 * A stream berth writes to whose reader went away (`berth up … | head -1`: EPIPE; a hung-up
 * terminal: EIO) is, for berth, what SIGPIPE is for a shell tool that ignores it: nothing
 * more is written there, and berth goes on supervising. Node reports such a failure as an
 * 'error' event, which kills the process when nobody listens; this listens. A destroyed
 * stream drops later writes quietly.
 */

const guarded = new WeakSet<object>();

/** Let write errors on `w` end its output instead of berth. Idempotent. */
export function ignoreWriteErrors(w: NodeJS.WritableStream | null | undefined): void {
  const e = w as Partial<NodeJS.EventEmitter> | null | undefined;
  if (!e || guarded.has(e) || typeof e.on !== 'function') return;
  guarded.add(e);
  e.on('error', () => {});
}
