import type { AgentInfo } from './types.js';

/**
 * The agent pool: every drafted agent (registered from draft to undraft) and every worker
 * (registered on dispatch, released when it ends). In memory: after a restart, drafts are
 * registered again by `recover`; workers do not survive a restart (their threads say so).
 */
export class AgentPool {
  private readonly agents = new Map<string, AgentInfo>();

  register(agent: AgentInfo): void {
    this.agents.set(agent.agentId, { ...agent });
  }

  update(agentId: string, changes: Partial<AgentInfo>): AgentInfo | undefined {
    const current = this.agents.get(agentId);
    if (!current) return undefined;
    const next = { ...current, ...changes };
    this.agents.set(agentId, next);
    return { ...next };
  }

  release(agentId: string): void {
    this.agents.delete(agentId);
  }

  get(agentId: string): AgentInfo | undefined {
    const agent = this.agents.get(agentId);
    return agent ? { ...agent } : undefined;
  }

  list(filter: (agent: AgentInfo) => boolean = () => true): AgentInfo[] {
    return [...this.agents.values()].filter(filter).map((agent) => ({ ...agent }));
  }
}

/**
 * A cap on running workers with a FIFO queue beyond it. `acquire` resolves with a release
 * function once a slot is free; an aborted waiter leaves the queue without taking a slot.
 */
export class WorkerSlots {
  private running = 0;
  private readonly waiting: Array<{ grant: () => void; signal?: AbortSignal; onAbort?: () => void }> = [];

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`maxConcurrentWorkers must be a positive integer, got ${capacity}.`);
  }

  get active(): number {
    return this.running;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /** Resolves with `release` when a slot is free, or with undefined when `signal` aborts first. */
  acquire(signal?: AbortSignal): Promise<(() => void) | undefined> {
    if (signal?.aborted) return Promise.resolve(undefined);
    if (this.running < this.capacity) {
      this.running += 1;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve) => {
      const entry: { grant: () => void; signal?: AbortSignal; onAbort?: () => void } = {
        grant: () => {
          if (entry.onAbort) signal?.removeEventListener('abort', entry.onAbort);
          resolve(this.releaser());
        },
      };
      if (signal) {
        entry.signal = signal;
        entry.onAbort = () => {
          const index = this.waiting.indexOf(entry);
          if (index !== -1) this.waiting.splice(index, 1);
          resolve(undefined);
        };
        signal.addEventListener('abort', entry.onAbort, { once: true });
      }
      this.waiting.push(entry);
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      // The slot passes straight to the next waiter, so the count never dips and lets a newcomer jump the queue.
      if (next) next.grant();
      else this.running -= 1;
    };
  }
}
