/*
 * A reader that went away (`berth up … | head -1`: EPIPE; a hung-up terminal: EIO) ends only that
 * output: Node's unheard 'error' event would kill berth and leave its services unsupervised.
 */

const guarded = new WeakSet<object>();

/** Let write errors on `w` end its output instead of berth. Idempotent. */
export function ignoreWriteErrors(w: NodeJS.WritableStream | null | undefined): void {
  const e = w as Partial<NodeJS.EventEmitter> | null | undefined;
  if (!e || guarded.has(e) || typeof e.on !== 'function') return;
  guarded.add(e);
  e.on('error', () => {});
}

let stdioGuarded = false;

/**
 * ignoreWriteErrors for process.stdout and stderr, attached on first use: creating a stdio stream costs `berth port`
 * (which writes with write(2)) about 3 ms of its start-up (docs/scale.md §2). Idempotent.
 */
export function guardStdio(): void {
  if (stdioGuarded) return;
  stdioGuarded = true;
  for (const name of ['stdout', 'stderr'] as const) {
    const d = Object.getOwnPropertyDescriptor(process, name);
    const get = d?.get;
    if (!get || !d.configurable) {
      ignoreWriteErrors(process[name]);
      continue;
    }
    Object.defineProperty(process, name, {
      configurable: true,
      enumerable: d.enumerable ?? true,
      get() {
        const stream = get.call(process) as NodeJS.WriteStream;
        ignoreWriteErrors(stream);
        return stream;
      },
    });
  }
}
