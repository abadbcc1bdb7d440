import type { StackHandle } from '../run/orchestrate.js';
import type { EndpointsDocument, ReplicaUpdate } from '../record/endpoints.js';
import { createRunDir } from '../record/create-stack-run-dir.js';
import type { RunDir } from '../record/stack-run-dir.js';
import type { SharedPorts } from '../record/result.js';
import { StackConsole } from '../record/stack-console.js';
import type { MultiNodeOptions } from './coordinator-options.js';

/*
 * Where the first node records a multi-node stack: the orchestrator of its own services, or,
 * for a stack of `nodes:` services only, a run directory and status view of its own.
 */
export class FirstNodeRecord {
  /** The orchestrator of the first node's own services, once started. */
  local: StackHandle | undefined;
  private own: { run: RunDir; console: StackConsole } | undefined;

  constructor(
    private readonly stackFile: string,
    private readonly runDir: string,
    private readonly o: MultiNodeOptions,
  ) {}

  /** Nothing runs here: record into a run directory and console of this record's own. */
  recordHere(): void {
    this.own = {
      run: createRunDir({ stack: this.stackFile, dir: this.runDir }),
      console: new StackConsole({
        stdout: this.o.stdout === undefined ? process.stdout : this.o.stdout,
        stderr: this.o.stderr === undefined ? process.stderr : this.o.stderr,
        status: this.o.status ?? 'off',
        ...(this.o.env ? { env: this.o.env } : {}),
      }),
    };
  }

  endpoints(): EndpointsDocument {
    if (this.local) return this.local.endpoints();
    if (this.own) return this.own.run.endpointsDocument();
    return { stack: this.stackFile, runDir: this.runDir, pid: process.pid, updated: new Date().toISOString(), replicas: [] };
  }

  say(text: string): void {
    if (this.local) this.local.say(text);
    else if (this.own) this.own.console.message(text);
    else (this.o.stderr === undefined ? process.stderr : this.o.stderr)?.write(text + '\n');
  }

  msg(text: string): void {
    if (this.o.onMessage) this.o.onMessage(text);
    else this.say(text);
  }

  record(u: ReplicaUpdate): void {
    if (this.local) return this.local.recordExternal(u);
    if (!this.own) return;
    try {
      const ev = this.own.run.update(u);
      this.own.console.event(ev);
      this.o.onEvent?.(ev);
    } catch {
      // a broken run directory: the end says so (writeEndpoints)
    }
  }

  recordShared(service: string, shared: SharedPorts): void {
    if (this.local) return this.local.recordShared(service, shared);
    if (!this.own) return;
    this.own.run.shared[service] = shared;
    try {
      this.own.run.writeEndpoints();
    } catch {
      // a broken run directory: the end says so (writeEndpoints)
    }
  }

  /** The stack ended: the last endpoints.json, then the files and the console closed. */
  close(): void {
    if (!this.own) return;
    try {
      this.own.run.writeEndpoints();
    } catch {
      // reported when it first failed
    }
    this.own.run.close();
    this.own.console.close();
  }
}
