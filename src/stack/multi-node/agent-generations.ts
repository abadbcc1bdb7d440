/* An agent's side of a job restarted as a group across nodes: generations asked to end, and waiting for `start G`. */

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
