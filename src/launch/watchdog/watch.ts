import type { EventEmitter } from 'node:events';
import { KeptLeases } from './kept-leases.js';
import { parseMessage, type IpcMessage } from './protocol.js';
import { applyMessage, type WatchState } from './state.js';
import { stopRun, type StopReport } from './stop-run.js';

/* The watchdog's loop: reads berth's messages (protocol.ts) until end of file, then stops what is still registered. */

export interface WatchOptions {
  /** Where lease sockets arrive ('message' events with a handle); default this process's IPC channel, if any. */
  ipc?: EventEmitter;
  /** How to answer berth on that channel; default process.send. */
  reply?: (m: IpcMessage) => void;
  /** After every run is stopped: mark a stack's run directory (berth is gone); throws when it cannot. */
  markRunDir?: (dir: string) => void;
}

/** Resolves, after `input`'s end, with what was left to stop (nothing when berth ended every launch itself). */
export function watch(input: NodeJS.ReadableStream, o: WatchOptions = {}): Promise<StopReport & { runs: number }> {
  const state: WatchState = { runs: new Map(), runDirs: new Set() };
  const leases = new KeptLeases(o.reply ?? ((m: IpcMessage) => process.send?.(m, undefined, {}, () => {})));
  const ipc = o.ipc ?? ((process as unknown as { channel?: unknown }).channel ? process : undefined);
  ipc?.on('message', (m: unknown, h: unknown) => leases.receive(m, h));
  let partial = '';
  input.setEncoding?.('utf8');
  return new Promise((resolve) => {
    input.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        const m = parseMessage(line);
        if (m) applyMessage(state, m);
        if (m?.op === 'end') leases.end(m.id);
      }
    });
    // 'error' too: a reset pipe is berth gone as well.
    let ended = false;
    const onEnd = () => {
      if (ended) return;
      ended = true;
      void (async () => {
        const reports = await Promise.all(
          [...state.runs].map(async ([id, run]) => {
            const rep = await stopRun(run);
            leases.close(id);
            return rep;
          }),
        );
        leases.closeAll();
        for (const dir of state.runDirs) {
          try {
            o.markRunDir?.(dir);
          } catch {
            // a run directory that cannot be rewritten: the dead pid in it still tells readers
          }
        }
        const sum = (k: keyof StopReport) => reports.reduce((a, r) => a + r[k], 0);
        resolve({ runs: reports.length, termed: sum('termed'), killed: sum('killed'), left: sum('left') });
      })();
    };
    input.on('end', onEnd);
    input.on('close', onEnd);
    input.on('error', onEnd);
  });
}
