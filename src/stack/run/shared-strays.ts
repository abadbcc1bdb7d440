import type { AuditFinding } from '../../launch/launch-api.js';
import type { Replica } from './replica.js';

/*
 * Replicas that listen on one port outside their sets (Caddy's admin API on 127.0.0.1:2019):
 * with SO_REUSEPORT every bind succeeds and the kernel splits connections between them. Each
 * replica's audit sees only its own listener, so its lines wait until the stack is ready (or a
 * few seconds) and replicas on one port are named in one line; the rest are said as launch would.
 */

/** How long after the first pending finding the lines are said even if the stack is not ready. */
const MAX_WAIT_MS = 5_000;
/** After the stack is ready: the last replicas' first audit read comes within ~100 ms. */
const SETTLE_MS = 300;

interface Holder {
  label: string;
  service: string;
  address: string;
}

interface Pending {
  rep: Replica;
  found: AuditFinding[];
  message: string;
}

function names(list: readonly string[]): string {
  return list.length === 1 ? list[0]! : `${list.slice(0, -1).join(', ')} and ${list[list.length - 1]}`;
}

/** The one line for replicas that all listen on `port` outside their sets (pure). */
export function sharedStrayLine(port: number, holders: readonly Holder[]): string {
  const addrs = [...new Set(holders.map((h) => h.address))];
  const where = addrs.length === 1 ? `${addrs[0]!.includes(':') ? `[${addrs[0]}]` : addrs[0]}:${port}` : `port ${port} (${addrs.join(', ')})`;
  const how =
    addrs.length === 1
      ? 'and share it through SO_REUSEPORT: the kernel splits new connections between them, so each may answer the others\' requests'
      : 'so a client of that port reaches one of them, not the one it means';
  const services = [...new Set(holders.map((h) => h.service))];
  const entry = `p${port}: 1`;
  const fix = `give each replica its own: add a port entry to ` +
    `${services.length === 1 ? `service ${services[0]}` : `services ${names(services)}`} (ports: { …, ${entry} }, or learn if the program picks it) and ` +
      `pass {ports.p${port}} to the program's setting for port ${port}`;
  // In replica order, whichever replica's audit came first.
  const labels = holders.map((h) => h.label).sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  return `${names(labels)} all listen on ${where}, outside their ports, ${how}; ${fix}`;
}

export class SharedStrays {
  private pending: Pending[] = [];
  private timer: NodeJS.Timeout | undefined;
  private firstAt = 0;
  /** Ports reported so far, with the replicas that listen on them. */
  private readonly said = new Map<number, Holder[]>();

  constructor(
    private readonly warn: (message: string) => void,
    private readonly stackReady: () => boolean,
  ) {}

  /** A replica's audit pass had findings to warn about (LaunchOptions.onAuditWarning). */
  add(rep: Replica, found: AuditFinding[], message: string): void {
    if (this.pending.length === 0) this.firstAt = performance.now();
    this.pending.push({ rep, found, message });
    this.arm(SETTLE_MS);
  }

  private arm(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.due(), ms);
    this.timer.unref();
  }

  private due(): void {
    if (!this.stackReady() && performance.now() - this.firstAt < MAX_WAIT_MS) return this.arm(SETTLE_MS);
    this.flush();
  }

  /** Say every pending line now (also at the stack's end). */
  flush(): void {
    clearTimeout(this.timer);
    const batch = this.pending;
    this.pending = [];
    const byPort = new Map<number, Holder[]>();
    for (const p of batch) for (const f of p.found) {
      const list = byPort.get(f.port) ?? [];
      if (!list.some((h) => h.label === p.rep.label)) list.push({ label: p.rep.label, service: p.rep.svc.spec.name, address: f.address });
      byPort.set(f.port, list);
    }
    const shared = new Set<number>();
    for (const [port, holders] of [...byPort].sort((a, b) => a[0] - b[0])) {
      // A replica joining a port reported before is named with the ones it joins.
      const before = this.said.get(port) ?? [];
      const all = [...before, ...holders.filter((h) => !before.some((b) => b.label === h.label))];
      this.said.set(port, all);
      if (all.length < 2) continue;
      shared.add(port);
      this.warn(sharedStrayLine(port, all));
    }
    for (const p of batch) {
      const rest = p.found.filter((f) => !shared.has(f.port));
      if (rest.length === p.found.length) this.warn(p.message);
      else for (const f of rest) this.warn(f.message);
    }
  }
}
