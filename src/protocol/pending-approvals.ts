import type { ProtocolClient } from './client.js';
import type { z } from 'zod';
import type { PermissionDecisionSchema, PermissionRequest } from './schemas.js';

/** A person's answer to a permission request. */
export type PermissionDecision = z.infer<typeof PermissionDecisionSchema>;

/** What `PendingApprovals` needs of a client (a `ProtocolClient` has it all). */
export type ApprovalClient = Pick<ProtocolClient, 'on' | 'onStateChange' | 'request' | 'state'>;

export interface PendingApprovalsState {
  /** Requests waiting in the channel, oldest first: a UI shows the first. */
  requests: readonly PermissionRequest[];
  /** A request whose answer is on its way (keys pressed again do nothing meanwhile). */
  answering?: string;
  /** Why the last answer or refresh failed, worded for a person. */
  error?: string;
}

/**
 * The approval requests waiting in a client's channel (or in every channel), for a UI to show and answer: filled from
 * `get_permissions` on every (re)connection (a request made while away is not replayed), kept
 * current by `permission_requested` and `permission_resolved` (whoever answered). Shared by the
 * TUI and the web UI so both ask the same way.
 */
export class PendingApprovals {
  private current: PendingApprovalsState = { requests: [] };
  private readonly listeners = new Set<() => void>();
  private readonly unsubscribe: Array<() => void> = [];

  /**
   * `all`: every channel's requests (`get_permissions { all: true }`), as a phone shows everything
   * that waits for its person; default: this client's channel only.
   */
  constructor(
    private readonly client: ApprovalClient,
    private readonly options: { all?: boolean } = {},
  ) {}

  readonly getState = (): PendingApprovalsState => this.current;

  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  start(): void {
    this.unsubscribe.push(
      this.client.on('permission_requested', ({ request }) => this.add(request)),
      this.client.on('permission_resolved', ({ requestId }) => this.remove(requestId)),
      this.client.onStateChange((state) => {
        if (state === 'connected') void this.refresh();
      }),
    );
    if (this.client.state === 'connected') void this.refresh();
  }

  stop(): void {
    for (const off of this.unsubscribe.splice(0)) off();
  }

  /** Re-reads the waiting requests (what a client does when it attaches). */
  async refresh(): Promise<void> {
    try {
      const { requests } = await this.client.request('get_permissions', this.options.all === true ? { all: true } : {});
      this.set({ ...this.current, requests });
    } catch (error) {
      this.set({ ...this.current, error: `Could not read the waiting approvals: ${messageOf(error)}` });
    }
  }

  /**
   * Answers a request. It leaves the list when the answer is taken (or when `permission_resolved`
   * says another client answered first, which makes this answer fail harmlessly).
   */
  async answer(requestId: string, decision: PermissionDecision): Promise<void> {
    const request = this.current.requests.find((entry) => entry.requestId === requestId);
    if (!request || this.current.answering === requestId) return;
    this.set({ requests: this.current.requests, answering: requestId });
    try {
      await this.client.request('answer_permission', { sessionId: request.sessionId, requestId, decision });
      this.remove(requestId);
    } catch (error) {
      const stillWaiting = this.current.requests.some((entry) => entry.requestId === requestId);
      // Answered elsewhere first: the resolved notice already took it away, nothing to report.
      if (!stillWaiting) return;
      const { answering: _answering, ...rest } = this.current;
      this.set({ ...rest, error: `Could not answer "${request.title}": ${messageOf(error)}` });
    }
  }

  private add(request: PermissionRequest): void {
    if (this.current.requests.some((entry) => entry.requestId === request.requestId)) return;
    this.set({ ...this.current, requests: [...this.current.requests, request] });
  }

  private remove(requestId: string): void {
    if (!this.current.requests.some((entry) => entry.requestId === requestId)) return;
    const { answering, error: _error, ...rest } = this.current;
    this.set({
      ...rest,
      requests: rest.requests.filter((entry) => entry.requestId !== requestId),
      ...(answering !== undefined && answering !== requestId ? { answering } : {}),
    });
  }

  private set(next: PendingApprovalsState): void {
    this.current = next;
    for (const listener of [...this.listeners]) listener();
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
