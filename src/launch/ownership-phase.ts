import { EXIT } from '../errors.js';
import { checkOwnership, describeStranger, readPortListenersAsync, type Ownership } from './ownership.js';
import { tablePoller } from './port-watch.js';
import { watchElsewhere } from './elsewhere.js';
import { DEFAULT_READY_TIMEOUT_MS, iso, type LaunchState } from './state.js';
import { fail, failIfTreeGone } from './stop.js';

/** Ownership polling: fast at first (most services bind within a second), then ~10/s; one read per tick serves every launch (port-watch.ts). */
const OWN_POLL_FIRST_MS = 2;
const OWN_POLL_MAX_MS = 100;
/** A same-uid listener we cannot see is "stolen" only after this many looks in a row. */
const INVISIBLE_CONFIRMATIONS = 3;

/**
 * Phase 3: the service's process tree, and nobody else, listens on the port. Release
 * handoff polls until it does (a stranger: 69 "stolen"); with fd handoff the inherited
 * socket is the service's from its first instruction. false: the launch ended meanwhile.
 */
export async function waitOwnership(s: LaunchState): Promise<boolean> {
  const port = s.port!;
  if (s.handoff === 'release') {
    s.happen({ kind: 'waiting', phase: 'ownership' });
    const poller = tablePoller(s.procRoot);
    let interval = OWN_POLL_FIRST_MS;
    let within = 0; // the first look: now
    let invisible = 0;
    const unwatch = watchElsewhere(s, s.o.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS);
    try {
      for (;;) {
        if (s.settled || failIfTreeGone(s)) return false;
        const rows = await s.look(poller, port, within);
        if (s.settled) return false;
        const own = checkOwnership(s.procRoot, port, s.tree!, rows);
        s.lastOwnership = own;
        if (own.state === 'owned') {
          s.listening = own.listening;
          s.ownerPids = own.ownerPids;
          break;
        }
        if (own.state === 'foreign') {
          const uid = process.getuid?.();
          const hidden = own.strangers.every((x) => x.owners.length === 0 && x.row.uid === uid);
          if (!hidden || ++invisible >= INVISIBLE_CONFIRMATIONS) {
            failStolen(s, own);
            return false;
          }
        } else invisible = 0;
        // A service that died is reported by the exit handler; one still alive but silent keeps us polling.
        within = Math.min(interval, Math.max(1, s.remainingMs()));
        interval = Math.min(interval * 1.5, OWN_POLL_MAX_MS);
      }
    } finally {
      unwatch();
    }
  } else {
    // The inherited socket is the service's from the first instruction it runs.
    const rows = await readPortListenersAsync(s.procRoot, port);
    if (s.settled) return false;
    const own = checkOwnership(s.procRoot, port, s.tree!, rows);
    s.lastOwnership = own;
    if (own.state !== 'waiting') s.listening = own.listening;
    s.ownerPids = own.state === 'owned' ? own.ownerPids : [s.child!.pid!];
  }
  s.mark('ownedMs');
  s.emit({ type: 'owned', pid: s.child!.pid!, port, owners: s.ownerPids, t: iso() });
  return true;
}

function failStolen(s: LaunchState, own: Extract<Ownership, { state: 'foreign' }>): void {
  const who = own.strangers.map(describeStranger).join('; ');
  fail(s, EXIT.UNAVAILABLE, `${s.name}: port ${s.port} was stolen before the service bound it: ${who}`, { strangers: own.strangers });
}

/** One more look when the service died before ready: a stranger on the port explains it. */
export function reportStolen(s: LaunchState): boolean {
  if (!s.tree || s.port === undefined) return false;
  const own = checkOwnership(s.procRoot, s.port, s.tree);
  if (own.state !== 'foreign') return false;
  s.lastOwnership = own;
  failStolen(s, own);
  return true;
}
