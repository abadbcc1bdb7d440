import { ignoreWriteErrors } from '../util/closed-output.js';

/** What `berth run` and `berth up` pass on to their services instead of dying at once. */
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * Runs `body` with `onSignal` taking SIGINT, SIGTERM and SIGHUP (Node's default would exit
 * berth), and with a closed stdout or stderr ending only berth's writing there (EPIPE
 * would otherwise kill berth and orphan its services): supervision goes on.
 */
export async function withSignals<T>(onSignal: (sig: NodeJS.Signals) => void, body: () => Promise<T>): Promise<T> {
  ignoreWriteErrors(process.stdout);
  ignoreWriteErrors(process.stderr);
  for (const s of SIGNALS) process.on(s, onSignal);
  try {
    return await body();
  } finally {
    for (const s of SIGNALS) process.off(s, onSignal);
  }
}
