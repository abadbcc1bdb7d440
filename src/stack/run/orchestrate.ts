import { endGenerationElsewhere } from './generation.js';
import { next } from './next.js';
import { restartsAsGroup } from './replica.js';
import { reserveStackPorts } from './reserve-ports.js';
import type { StackSpec } from '../file/spec.js';
import { StackRun } from './stack-run.js';
import type { RunStackOptions, StackHandle } from './stack-handle.js';
import { stop } from './teardown.js';

/* `berth up`: every replica of every service is one launch(), on ports reserved up front (reserve-ports.ts). */

export type { RunStackOptions, StackFailure, StackHandle, StackResult } from './stack-handle.js';

/** Starts a stack. Throws BerthError for a stack it refuses (65) or a run directory it cannot make (64/74). */
export function runStack(spec: StackSpec, opts: RunStackOptions = {}): StackHandle {
  const st: StackRun = new StackRun(spec, opts, (h) => next(st, h));
  const handle: StackHandle = {
    spec,
    runDir: st.run.path,
    ready: st.whenReady.promise,
    done: st.whenDone.promise,
    endpoints: () => st.run.endpointsDocument(),
    stop: (so) => stop(st, so?.signal, so?.force === true, so?.cause),
    say: (text) => st.console.message(text),
    setExternal: (service, endpoints, statuses) => {
      st.external.set(service, {
        endpoints: [...endpoints],
        statuses: statuses ? [...statuses] : endpoints.length > 0 ? endpoints.map(() => ({ state: 'ready' })) : [{ state: 'ready' }],
      });
      // Only once the ports are reserved: main() asks what may start for the first time itself.
      if (st.reserved) next(st, { kind: 'progress' });
    },
    setPeers: (service, endpoints) => {
      st.peers.set(service, [...endpoints]);
      if (st.reserved) next(st, { kind: 'progress' });
    },
    recordExternal: (u) => st.record(u),
    endGeneration: (service, generation, why) => {
      const svc = st.byName.get(service);
      if (svc && restartsAsGroup(svc) && st.o.generationGate) endGenerationElsewhere(st, svc, generation, why);
    },
    recordShared: (service, shared) => {
      st.run.shared[service] = shared;
      try {
        if (!st.closed) st.run.writeEndpoints();
      } catch {
        // kept by the run directory: the next state change reports it
      }
    },
  };
  // After the caller has its handle (a stack without ports could otherwise be ready before runStack() returns).
  queueMicrotask(() => void main(st));
  return handle;
}

async function main(st: StackRun): Promise<void> {
  try {
    if (await reserveStackPorts(st)) {
      st.reserved = true;
      next(st, { kind: 'progress' });
    }
  } catch (e) {
    st.internalError(e);
  }
}
