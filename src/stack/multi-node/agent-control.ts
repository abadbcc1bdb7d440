/*
 * What berth up tells its agents, one line each on the agents step's stdin; EOF means stop too:
 *   stop                   stop this node's services, dependents first
 *   end G SERVICE WHY      a rank elsewhere ended generation G of the job SERVICE: stop its ranks here
 *   start G                every node's generation G-1 is gone: generation G may start
 */

export type ControlLine =
  | { kind: 'stop' }
  | { kind: 'end'; generation: number; service: string; why: string }
  | { kind: 'start'; generation: number };

export function formatControl(c: ControlLine): string {
  if (c.kind === 'stop') return 'stop\n';
  if (c.kind === 'start') return `start ${c.generation}\n`;
  return `end ${c.generation} ${c.service} ${c.why.replace(/[\r\n]+/g, ' ')}\n`;
}

export function parseControl(line: string): ControlLine | undefined {
  const t = line.trim();
  if (t === 'stop') return { kind: 'stop' };
  const start = /^start (\d{1,6})$/.exec(t);
  if (start) return { kind: 'start', generation: Number(start[1]) };
  const end = /^end (\d{1,6}) (\S+) (.*)$/.exec(t);
  if (end) return { kind: 'end', generation: Number(end[1]), service: end[2]!, why: end[3]! };
  return undefined;
}

/** Whole lines of a stream, each parsed (unknown lines are ignored: a newer berth up's words). */
export function controlLines(onLine: (c: ControlLine) => void): (d: Buffer | string) => void {
  let buf = '';
  return (d) => {
    buf += d.toString();
    const lines = buf.split('\n');
    buf = lines.pop() ?? '';
    for (const l of lines) {
      const c = parseControl(l);
      if (c) onLine(c);
    }
  };
}

/** An agent's side of a job restarted as a group across nodes: generations asked to end, and waiting for `start G`. */
export class AgentGenerations {
  private endedUpTo = -1;
  private startedUpTo = -1;
  private stopped = false;
  private waiters: { generation: number; wake: (go: boolean) => void }[] = [];

  /** berth up ended `generation` (a rank elsewhere failed). */
  endAsked(generation: number): void {
    this.endedUpTo = Math.max(this.endedUpTo, generation);
  }

  ended(generation: number): boolean {
    return this.endedUpTo >= generation;
  }

  started(generation: number): void {
    this.startedUpTo = Math.max(this.startedUpTo, generation);
    this.settle();
  }

  /** The agent stops: nothing starts any more. */
  stop(): void {
    this.stopped = true;
    this.settle();
  }

  /** Resolves true once `generation` may start, false if the agent stops first. */
  startOf(generation: number): Promise<boolean> {
    return new Promise((wake) => {
      this.waiters.push({ generation, wake });
      this.settle();
    });
  }

  private settle(): void {
    this.waiters = this.waiters.filter((w) => {
      if (this.stopped) w.wake(false);
      else if (this.startedUpTo >= w.generation) w.wake(true);
      else return true;
      return false;
    });
  }
}
