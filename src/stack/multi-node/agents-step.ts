import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { agentStepArgv } from '../../slurm/agent-step.js';
import { formatControl, type ControlLine } from './agent-control.js';
import { tasksEnded } from './task-ended.js';

/*
 * The agents' srun step: one `berth up STACK --agent RUN_DIR` per node, their output in
 * RUN_DIR/agents.log. They are stopped by "stop" (or EOF) on the step's stdin, never by signals:
 * Slurm signals every process of a step, hitting services before their dependents are stopped.
 * An agent exits only after that EOF, even one that ended on its own: stdin forwarded to a node
 * whose agent has just exited makes srun abort the step ("step_launch_notify_io_failure"),
 * killing every other agent before it writes its final node file.
 */

const AGENT_STOP_GRACE_MS = 5_000;

export class AgentsStep {
  readonly log: string;
  private child: ChildProcess | undefined;
  private exit: Promise<number | null> = Promise.resolve(null);
  /** srun's exit status once it ended (null: killed or could not start). */
  code: number | null | undefined;
  /** Why srun could not start. */
  startError: string | undefined;
  private stopped: Promise<void> | undefined;
  private offset = 0;
  private partial = '';
  private readonly decoder = new StringDecoder('utf8');
  /** Lines read by scan() and not yet taken by lines() (kept only when `keepLines`). */
  private kept: string[] = [];
  /** Nodes whose agent srun reported ended, with srun's words, in the order reported. */
  readonly ended = new Map<string, string>();

  constructor(
    runDir: string,
    private readonly nodes: readonly string[],
    /** The agent's argv without the srun part. */
    private readonly agent: readonly string[],
    private readonly env: NodeJS.ProcessEnv,
    /** Called when srun ends or cannot start. */
    private readonly onExit: () => void,
    /** Keep the log's lines for lines() (`--follow`). */
    private readonly keepLines = false,
  ) {
    this.log = join(runDir, 'agents.log');
  }

  /** A later step (a job's next generation): the log's earlier lines are an earlier step's, not read again. */
  skipLogSoFar(): void {
    try {
      this.offset = statSync(this.log).size;
    } catch {
      this.offset = 0;
    }
  }

  start(): void {
    const argv = agentStepArgv({ nodes: this.nodes, agent: this.agent });
    // --input=all: every agent reads the coordinator's stop request (and EOF) from its stdin.
    argv.splice(1, 0, '--input=all');
    const log = openSync(this.log, 'a', 0o600);
    try {
      this.child = spawn(argv[0]!, argv.slice(1), { env: this.env, stdio: ['pipe', log, log] });
    } finally {
      closeSync(log);
    }
    const child = this.child;
    this.exit = new Promise((res) => {
      child.on('error', (e) => {
        this.code = null;
        this.startError = `cannot start srun: ${e.message} (is this a Slurm allocation with srun on PATH?)`;
        this.onExit();
        res(null);
      });
      child.on('exit', (code, signal) => {
        this.code = code ?? (signal ? 128 : null);
        this.onExit();
        res(this.code);
      });
    });
    child.stdin?.on('error', () => {}); // srun gone: its exit says why
  }

  /** A word to every agent (agent-control.ts); nothing once the step is stopping or gone. */
  send(c: ControlLine): void {
    if (this.stopped === undefined && this.code === undefined) this.child?.stdin?.write(formatControl(c));
  }

  get running(): boolean {
    return this.child !== undefined && this.code === undefined;
  }

  /** "stop" to every agent, then EOF; srun is killed if they outlive `graceMs` (0: at once). Idempotent. */
  stop(graceMs: number): Promise<void> {
    if (graceMs === 0) this.child?.kill('SIGKILL');
    this.stopped ??= (async () => {
      const child = this.child;
      if (!child || this.code !== undefined) return;
      child.stdin?.end(formatControl({ kind: 'stop' }));
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs + AGENT_STOP_GRACE_MS);
      await this.exit;
      clearTimeout(timer);
    })();
    return this.stopped;
  }

  /** Reads what the log gained: srun's reports of ended agents into `ended`; the lines for lines(). */
  scan(): void {
    for (const line of this.readNew()) {
      const t = tasksEnded(line);
      // After berth up asked them to stop, agents end: that is no news.
      if (t && this.stopped === undefined) for (const n of t.nodes) if (this.nodes.includes(n) && !this.ended.has(n)) this.ended.set(n, t.how);
      if (this.keepLines) this.kept.push(line);
    }
  }

  /** Whole lines scanned since the last call (with keepLines). */
  lines(): string[] {
    this.scan();
    const out = this.kept;
    this.kept = [];
    return out;
  }

  private readNew(): string[] {
    let fd: number;
    try {
      fd = openSync(this.log, 'r');
    } catch {
      return [];
    }
    try {
      const buf = Buffer.alloc(65_536);
      let text = '';
      for (;;) {
        const n = readSync(fd, buf, 0, buf.length, this.offset);
        if (n <= 0) break;
        this.offset += n;
        text += this.decoder.write(buf.subarray(0, n));
      }
      const lines = (this.partial + text).split('\n');
      this.partial = lines.pop() ?? '';
      return lines;
    } finally {
      closeSync(fd);
    }
  }
}
