import { guardStdio } from '../util/closed-output.js';
import { SIGNALS, takeEarlySignal } from './early-signals.js';

/**
 * Runs `body` with `onSignal` taking SIGINT, SIGTERM and SIGHUP (Node's default would exit berth),
 * and a closed stdout or stderr ending only berth's writing there (EPIPE would orphan the services).
 */
export async function withSignals<T>(
  onSignal: (sig: NodeJS.Signals, cause?: 'stdin-eof') => void,
  body: () => Promise<T>,
  o: { stdinEof?: boolean } = {},
): Promise<T> {
  guardStdio();
  const onOsSignal = (sig: NodeJS.Signals) => onSignal(sig);
  for (const s of SIGNALS) process.on(s, onOsSignal);
  // One that came while the command started (early-signals.ts) is this handler's now.
  const early = takeEarlySignal();
  if (early) queueMicrotask(() => onSignal(early));
  // --stop-on-stdin-eof: EOF means the parent holding stdin open is gone, however it died: stop as
  // on SIGTERM, once, with the cause, so messages say the parent went away, not "SIGTERM".
  let eof: (() => void) | undefined;
  if (o.stdinEof) {
    eof = () => {
      process.stdin.off('end', eof!).off('close', eof!);
      onSignal('SIGTERM', 'stdin-eof');
    };
    process.stdin
      .on('data', () => {})
      .on('error', () => {})
      .on('end', eof)
      .on('close', eof);
  }
  try {
    return await body();
  } finally {
    for (const s of SIGNALS) process.off(s, onOsSignal);
    if (eof) {
      process.stdin.off('end', eof).off('close', eof);
      process.stdin.destroy();
    }
  }
}
