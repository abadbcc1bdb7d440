import type { StackEvent } from './endpoints.js';
import type { ReplicaState } from '../file/spec.js';

/*
 * What `berth up` shows while it runs: on a terminal a table of every replica redrawn in place;
 * anywhere else (a Slurm log, a pipe) one plain line per state change. Rendering is pure.
 */

export interface StatusRow {
  service: string;
  replica: number;
  /** Another node's replica (multi-node stack): shown as service/replica@node. */
  node?: string;
  port?: number;
  pid?: number;
  /** A job's rank that restarts as a group: its generation (GEN column). */
  generation?: number;
  state: ReplicaState;
  /** ms since epoch when it entered the state. */
  since: number;
}

export interface RenderOptions {
  color: boolean;
  /** Terminal width: longer lines are cut, since a wrapped line breaks the redraw. */
  width?: number;
}

const ESC = '\x1b[';
const COLORS: Record<ReplicaState, string> = {
  pending: '2', // dim
  starting: '33', // yellow
  owned: '33',
  ready: '32', // green
  stopping: '35', // magenta
  exited: '2',
  failed: '1;31', // bold red
};

const pad2 = (n: number) => String(n).padStart(2, '0');

/** HH:MM:SS.mmm in local time (the clock the user reads). */
export function formatClock(d: Date): string {
  return `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, '0')}`;
}

/** Time in state: 0.4s, 12s, 3m05s, 1h02m. */
export function formatAge(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  if (s < 10) return `${s.toFixed(1)}s`;
  if (s < 60) return `${Math.floor(s)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${pad2(Math.floor(s % 60))}s`;
  return `${Math.floor(m / 60)}h${pad2(m % 60)}m`;
}

/** `12:01:02.345 engine/0 ready port 20000 pid 123` */
export function formatEventLine(e: StackEvent): string {
  let line = `${formatClock(new Date(e.t))} ${replicaLabel(e)} ${e.state}`;
  if (e.generation !== undefined) line += ` generation ${e.generation}`;
  if (e.port !== undefined) line += ` port ${e.port}`;
  if (e.pid !== undefined) line += ` pid ${e.pid}`;
  if (e.code !== undefined && e.code !== null) line += ` code ${e.code}`;
  if (e.signal !== undefined) line += ` signal ${e.signal}`;
  if (e.detail !== undefined && e.detail !== '') line += `: ${e.detail}`;
  return line;
}

/** "engine/0", or "engine/0@n2" for a replica on another node (replica numbers are per node). */
export function replicaLabel(r: { service: string; replica: number; node?: string }): string {
  return r.node === undefined ? `${r.service}/${r.replica}` : `${r.service}/${r.replica}@${r.node}`;
}

const HEADER = ['SERVICE', 'REPLICA', 'PORT', 'PID', 'STATE', 'TIME'];

/** The table's lines (no newlines). Columns fit the widest cell; the state cell is coloured; a job's generation follows its replica ("1 g2"). */
export function renderTable(rows: readonly StatusRow[], now: number, opts: RenderOptions): string[] {
  const replicaCell = (r: StatusRow) =>
    (r.node === undefined ? String(r.replica) : `${r.replica}@${r.node}`) + (r.generation !== undefined ? ` g${r.generation}` : '');
  const cells = rows.map((r) => [
    r.service,
    replicaCell(r),
    r.port === undefined ? '-' : String(r.port),
    r.pid === undefined ? '-' : String(r.pid),
    r.state,
    formatAge(now - r.since),
  ]);
  const widths = HEADER.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[], state?: ReplicaState): string => {
    const plain = c.map((x, i) => (i === c.length - 1 ? x : x.padEnd(widths[i]!))).join('  ');
    if (opts.width !== undefined && plain.length > opts.width - 1) return plain.slice(0, Math.max(0, opts.width - 1));
    if (!opts.color) return plain;
    if (state === undefined) return `${ESC}1m${plain}${ESC}0m`;
    const before = c.slice(0, 4).map((x, i) => x.padEnd(widths[i]!)).join('  ') + '  ';
    return `${before}${ESC}${COLORS[state]}m${c[4]!.padEnd(widths[4]!)}${ESC}0m  ${c[5]}`;
  };
  return [line(HEADER), ...cells.map((c, i) => line(c, rows[i]!.state))];
}

/** Moves the cursor up over a frame of `lines` lines and clears from there down. */
export function eraseFrame(lines: number): string {
  return lines > 0 ? `${ESC}${lines}A\r${ESC}J` : '';
}

/** The part of a stream StatusView needs (process.stderr fits). */
export interface StatusStream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface StatusViewOptions {
  /** Default: stream.isTTY and a TERM that can move the cursor (canRedraw). */
  live?: boolean;
  /** Default: live and NO_COLOR unset or empty and TERM is not "dumb". */
  color?: boolean;
  /** Redraw interval on a terminal, for the time column (default 1000 ms; 0: only on changes). */
  refreshMs?: number;
  env?: NodeJS.ProcessEnv;
  now?: () => number;
}

/** Whether a terminal can be redrawn in place: TERM=dumb (Emacs shell buffers, some CI consoles) cannot. */
export function canRedraw(isTTY: boolean, env: NodeJS.ProcessEnv = process.env): boolean {
  return isTTY && env.TERM !== 'dumb';
}

export function wantColor(live: boolean, env: NodeJS.ProcessEnv = process.env): boolean {
  return live && (env.NO_COLOR === undefined || env.NO_COLOR === '') && env.TERM !== 'dumb';
}

/** A live table is redrawn at most this often while states change (and once more after the last change). */
const REDRAW_GAP_MS = 50;

export class StatusView {
  readonly live: boolean;
  readonly color: boolean;
  private readonly rows: StatusRow[] = [];
  /** "service/replica" → its row: a big stack's every event must not search the table. */
  private readonly byKey = new Map<string, StatusRow>();
  private drawn = 0;
  /** Plain lines of this turn, written together at its end (see update). */
  private lines: string[] = [];
  private linesImmediate: NodeJS.Immediate | undefined;
  /** Live: when the table was last drawn (this.now() ms), and a redraw waiting for its turn. */
  private lastDraw = -Infinity;
  private redrawTimer: NodeJS.Timeout | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly now: () => number;

  constructor(
    private readonly out: StatusStream,
    opts: StatusViewOptions = {},
  ) {
    this.live = opts.live ?? canRedraw(out.isTTY === true, opts.env);
    this.color = opts.color ?? wantColor(this.live, opts.env);
    this.now = opts.now ?? Date.now;
    const every = opts.refreshMs ?? 1000;
    if (this.live && every > 0) {
      this.timer = setInterval(() => this.redraw(), every);
      this.timer.unref();
    }
  }

  /**
   * A state change: a plain line, or the table redrawn. Neither per event (a big stack changes
   * hundreds of states a second): plain lines go out together at the end of the turn (each write
   * that wakes a reader can cost a time slice), the whole-table frame at most every REDRAW_GAP_MS.
   */
  update(e: StackEvent): void {
    if (this.closed) return;
    const key = replicaLabel(e);
    let row = this.byKey.get(key);
    if (!row) {
      row = { service: e.service, replica: e.replica, ...(e.node !== undefined ? { node: e.node } : {}), state: e.state, since: Date.parse(e.t) };
      this.rows.push(row);
      this.byKey.set(key, row);
    }
    if (row.state !== e.state) row.since = Date.parse(e.t);
    row.state = e.state;
    for (const k of ['port', 'pid', 'generation'] as const) if (e[k] !== undefined) row[k] = e[k];
    if (this.live) this.redrawSoon();
    else {
      this.lines.push(formatEventLine(e) + '\n');
      this.linesImmediate ??= setImmediate(() => this.flush());
    }
  }

  /** Plain lines not written yet go out now (before anything else is written to the stream). */
  flush(): void {
    if (this.linesImmediate) clearImmediate(this.linesImmediate);
    this.linesImmediate = undefined;
    if (this.lines.length === 0) return;
    const text = this.lines.join('');
    this.lines = [];
    this.out.write(text);
  }

  private redrawSoon(): void {
    const wait = this.lastDraw + REDRAW_GAP_MS - this.now();
    if (wait <= 0) return this.redraw();
    this.redrawTimer ??= setTimeout(() => {
      this.redrawTimer = undefined;
      this.redraw();
    }, wait);
  }

  /** Text that must appear above the table (a job's output, a message), written to `to`. */
  print(text: string, to: StatusStream = this.out): void {
    if (text === '') return;
    const t = text.endsWith('\n') ? text : text + '\n';
    this.flush();
    if (!this.live || this.closed) {
      to.write(t);
      return;
    }
    this.out.write(eraseFrame(this.drawn));
    this.drawn = 0;
    to.write(t);
    this.redraw();
  }

  /** Rows as last drawn (copies). */
  snapshot(): StatusRow[] {
    return this.rows.map((r) => ({ ...r }));
  }

  private redraw(): void {
    if (!this.live || this.closed || this.rows.length === 0) return;
    clearTimeout(this.redrawTimer);
    this.redrawTimer = undefined;
    this.lastDraw = this.now();
    const lines = renderTable(this.rows, this.now(), { color: this.color, ...(this.out.columns ? { width: this.out.columns } : {}) });
    this.out.write(eraseFrame(this.drawn) + lines.join('\n') + '\n');
    this.drawn = lines.length;
  }

  /** Final frame stays on screen; nothing is drawn after this. */
  close(): void {
    if (this.closed) return;
    this.flush();
    this.redraw();
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
