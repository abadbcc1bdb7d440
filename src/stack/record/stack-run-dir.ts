import { closeSync, constants, fstatSync, ftruncateSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { BerthError, EXIT } from '../../errors.js';
import { openForAppend } from '../../util/safe-file.js';
import { applyUpdate, formatEvent, portsRecord, type EndpointRecord, type EndpointsDocument, type ReplicaUpdate, type StackEvent } from './endpoints.js';
import type { SharedPorts } from './result.js';
import type { WriteFailures } from './write-failures.js';

/*
 * The run directory of one `berth up`:
 *   endpoints.json   every replica's host, port, url, pid, state; replaced atomically soon after every change
 *   events.jsonl     every state change, one JSON object a line, appended (O_APPEND: whole lines)
 *   logs/<service>-<replica>[.g<N>].out|.err, diagnostics/<service>-<replica>[.g<N>]/  (.g<N>: a job rank's generation)
 */

function writeError(file: string, e: unknown): BerthError {
  const why = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
  return new BerthError(EXIT.IOERR, `cannot write ${file} (${why}); check free space and permissions of the run directory`, { path: file });
}

/*
 * endpoints.json is O(replicas) and changes O(replicas) times while a stack starts: written on
 * every change that was a quarter of berth's time at 128 replicas (ext4's auto_da_alloc writes
 * back on each rename). So the first change after a quiet spell is written at the end of the
 * turn; while changes keep coming, the next write waits FLUSH_GAP_FACTOR times the last write's
 * time (clamped), so writing takes about a tenth of the time. events.jsonl lines go out at the
 * end of their turn, always before the endpoints.json that includes them. endpointsDocument(),
 * flush() and close() write what is pending first: the document printed is what the file holds.
 */
const FLUSH_GAP_FACTOR = 10;
const FLUSH_GAP_MIN_MS = 10;
const FLUSH_GAP_MAX_MS = 250;

export class RunDir {
  readonly logsDir: string;
  readonly endpointsFile: string;
  readonly eventsFile: string;
  private readonly tmpFile: string;
  private readonly table: EndpointRecord[] = [];
  private eventsFd: number | undefined;
  /** Changes not written to endpoints.json yet: the time of the latest (its `updated`). */
  private pending: string | undefined;
  private flushTimer: NodeJS.Timeout | undefined;
  private flushImmediate: NodeJS.Immediate | undefined;
  /** When the last write of endpoints.json ended, and how long it took (performance.now() ms). */
  private lastWriteEnd = -Infinity;
  private lastWriteMs = 0;
  /** Without `failures`: a batched write that failed, thrown by the next update(). */
  private writeFailure: BerthError | undefined;
  /** Where a failed write is reported (a running stack's): the run goes on. Without it a failed write throws. */
  failures: WriteFailures | undefined;
  /** Writes of endpoints.json so far (for benchmarks and tests). */
  endpointsWrites = 0;
  /** events.jsonl lines of this turn, not written yet. */
  private eventLines: string[] = [];
  private eventsImmediate: NodeJS.Immediate | undefined;

  constructor(
    /** Absolute path. */
    readonly path: string,
    private readonly stack: string,
  ) {
    this.logsDir = join(path, 'logs');
    this.endpointsFile = join(path, 'endpoints.json');
    this.eventsFile = join(path, 'events.jsonl');
    this.tmpFile = join(path, `.endpoints.json.${process.pid}.tmp`);
  }

  /** logs/<service>-<replica>.out and .err; of a generation: <service>-<replica>.g<N>.out and .err */
  logFiles(service: string, replica: number, generation?: number): { out: string; err: string } {
    const base = join(this.logsDir, `${service}-${replica}${generation === undefined ? '' : `.g${generation}`}`);
    return { out: `${base}.out`, err: `${base}.err` };
  }

  /** Where a failed launch of this replica writes its bundle (created by the launcher); a generation's has its own. */
  diagDir(service: string, replica: number, attempt = 0, generation?: number): string {
    if (generation !== undefined) return join(this.path, 'diagnostics', `${service}-${replica}.g${generation}`);
    return join(this.path, 'diagnostics', attempt === 0 ? `${service}-${replica}` : `${service}-${replica}.restart-${attempt}`);
  }

  /** The job's generation (a job of many ranks that restarts as a group): in every document from now on. */
  generation: number | undefined;

  /** The current table (copies). */
  replicas(): EndpointRecord[] {
    return this.table.map((r) => ({ ...r }));
  }

  /** Records a state change (batched, see above). Throws BerthError(74) when a write failed, this one or an earlier one. */
  update(u: ReplicaUpdate): StackEvent {
    if (this.writeFailure) throw this.writeFailure;
    const ev = applyUpdate(this.table, u);
    // A rank's generation is the document's too (also another node's rank, mirrored by berth up).
    if (u.generation !== undefined && u.generation > (this.generation ?? -1)) this.generation = u.generation;
    this.appendEvent(ev);
    this.pending = ev.t;
    this.scheduleFlush();
    return ev;
  }

  /** The current document; a change not yet in endpoints.json is written first. */
  endpointsDocument(updated?: string): EndpointsDocument {
    if (this.pending !== undefined) quietly(() => this.flush());
    return this.document(updated ?? new Date().toISOString());
  }

  /** Shared ports of the stack's services (once leased); in every document from now on. */
  shared: Record<string, SharedPorts> = {};

  private document(updated: string): EndpointsDocument {
    const entries = Object.entries(this.shared).map(([svc, s]) => [svc, { host: s.host, ports: portsRecord(s.ports) }]);
    const shared = entries.length > 0 ? { shared: Object.fromEntries(entries) } : {};
    const failed = this.failures?.any ? { writeFailures: [...this.failures.list] } : {};
    const gen = this.generation !== undefined ? { generation: this.generation } : {};
    return { stack: this.stack, runDir: this.path, pid: process.pid, updated, replicas: this.replicas(), ...gen, ...shared, ...failed };
  }

  /** A write that failed: reported (failures), else kept and thrown. */
  private failed(file: string, e: unknown, what: string): void {
    if (this.failures) return this.failures.report(file, e, what);
    this.writeFailure = writeError(file, e);
    throw this.writeFailure;
  }

  /** Writes pending changes now (nothing when events.jsonl and endpoints.json are current). */
  flush(): void {
    this.flushEvents();
    if (this.pending !== undefined) this.writeEndpoints(this.pending);
  }

  /**
   * Replaces endpoints.json with the current table now. `final`: the run's last word; on a full
   * disk (no room for the temporary file) it is then written over the old one in place: a reader
   * might catch it half written, but it no longer claims replicas that have stopped.
   */
  writeEndpoints(updated?: string, final = false): void {
    this.flushEvents();
    this.cancelFlush();
    this.pending = undefined;
    const t0 = performance.now();
    const text = () => JSON.stringify(this.document(updated ?? new Date().toISOString()), null, 2) + '\n';
    try {
      replaceFile(this.endpointsFile, text(), this.tmpFile);
    } catch (e) {
      const full = ['ENOSPC', 'EDQUOT'].includes((e as NodeJS.ErrnoException).code ?? '');
      // Reported first: the document written in place then lists the failure too.
      this.failed(this.endpointsFile, e, final ? 'it may hold an older state' : 'it may lag behind the stack');
      if (final && full) {
        try {
          overwriteFile(this.endpointsFile, text());
        } catch {
          // said above
        }
      }
    } finally {
      this.lastWriteEnd = performance.now();
      this.lastWriteMs = this.lastWriteEnd - t0;
      this.endpointsWrites++;
    }
  }

  private scheduleFlush(): void {
    if (this.flushTimer || this.flushImmediate) return;
    const gap = Math.min(FLUSH_GAP_MAX_MS, Math.max(FLUSH_GAP_MIN_MS, this.lastWriteMs * FLUSH_GAP_FACTOR));
    const wait = this.lastWriteEnd + gap - performance.now();
    const write = () => {
      this.flushTimer = undefined;
      this.flushImmediate = undefined;
      quietly(() => this.flush());
    };
    if (wait <= 0) this.flushImmediate = setImmediate(write);
    else this.flushTimer = setTimeout(write, wait);
  }

  private cancelFlush(): void {
    clearTimeout(this.flushTimer);
    if (this.flushImmediate) clearImmediate(this.flushImmediate);
    this.flushTimer = undefined;
    this.flushImmediate = undefined;
  }

  private appendEvent(ev: StackEvent): void {
    try {
      // Opened now: a run directory that cannot take events fails the first change, not later.
      this.eventsFd ??= openForAppend(this.eventsFile);
    } catch (e) {
      if (!this.failures) throw writeError(this.eventsFile, e);
      this.failures.report(this.eventsFile, e, 'state changes from here on are not in it');
      return;
    }
    this.eventLines.push(formatEvent(ev));
    this.eventsImmediate ??= setImmediate(() => {
      this.eventsImmediate = undefined;
      quietly(() => this.flushEvents());
    });
  }

  private flushEvents(): void {
    if (this.eventsImmediate) clearImmediate(this.eventsImmediate);
    this.eventsImmediate = undefined;
    if (this.eventLines.length === 0 || this.eventsFd === undefined) return;
    const buf = Buffer.from(this.eventLines.join(''));
    this.eventLines = [];
    let off = 0;
    try {
      // O_APPEND: each write lands whole at the end; a short write continues where it stopped.
      while (off < buf.length) off += writeSync(this.eventsFd, buf, off);
    } catch (e) {
      // Half a line (a disk that filled mid-write) would spoil the lines written after it:
      // cut back to where this write began (berth is the log's only writer).
      if (off > 0) {
        try {
          ftruncateSync(this.eventsFd, fstatSync(this.eventsFd).size - off);
        } catch {
          // it stays as it is
        }
      }
      this.failed(this.eventsFile, e, 'state changes from here on may be missing');
    }
  }

  /** Writes a pending change of endpoints.json (best effort: a failure was reported by update()) and closes events.jsonl. */
  close(): void {
    quietly(() => this.flush());
    this.cancelFlush();
    if (this.eventsFd !== undefined) closeSync(this.eventsFd);
    this.eventsFd = undefined;
  }
}

/** A batched write: its failure was reported, or is kept in writeFailure for the next update() to throw. */
function quietly(write: () => void): void {
  try {
    write();
  } catch {
    // already reported, or kept in writeFailure
  }
}

/**
 * Written whole under a temporary name, then renamed over the old one: a reader sees one
 * document or the other. No fsync: one per state change made the disk the pace of a big stack
 * (a crash loses at most the latest states). berth is the only, synchronous writer: one tmp name.
 */
function replaceFile(path: string, text: string, tmp: string): void {
  let fd: number | undefined = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o600);
  try {
    const buf = Buffer.from(text);
    let off = 0;
    while (off < buf.length) off += writeSync(fd, buf, off);
    closeSync(fd);
    fd = undefined;
    renameSync(tmp, path);
  } catch (e) {
    // A half-written temporary file (a full disk) must not stay behind either.
    if (fd !== undefined) closeSync(fd);
    try {
      unlinkSync(tmp);
    } catch {
      // already gone
    }
    throw e;
  }
}

/** Writes `text` over the file at `path` in place (no temporary file: a full disk's last resort). */
function overwriteFile(path: string, text: string): void {
  const fd = openSync(path, constants.O_WRONLY | constants.O_NOFOLLOW);
  try {
    ftruncateSync(fd, 0);
    const buf = Buffer.from(text);
    for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off);
  } finally {
    closeSync(fd);
  }
}

