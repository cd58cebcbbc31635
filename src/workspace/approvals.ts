import { randomUUID } from 'node:crypto';
import { WorkspaceError } from './errors.js';
import type { ApprovalDecision, ApprovalRequest, ApprovalResolution, ApprovalSource, Approver } from './types.js';

/**
 * The one place a workspace tool asks for permission: tools ask through one
 * bus, not each on its own. A request is matched to its answer by `requestId`:
 *
 * - `request` announces it (`requested` listeners: the server's `permission_requested`, the draft's
 *   "waiting for approval" block) and waits. An `approver` function given to the broker is asked at
 *   once; a client's `answer` may come first; the first answer wins, later ones are refused.
 * - With nobody to answer, the request waits: there is no timeout and no silent default. Aborting
 *   the turn (its signal) denies it.
 * - `allow_always` is remembered for the session under the request's scope (a command prefix, or
 *   the tool for edits and writes); a later request in that scope is allowed without asking.
 */
export interface ApprovalBrokerOptions {
  /** Answers every request (a library user's or a harness workflow's callback); clients may still answer first. */
  approver?: Approver;
  clock?: () => number;
  newId?: () => string;
}

/** What a tool asks; the broker adds `requestId` and `requestedAt`. `scopeKey` is what `allow_always` remembers (absent: not offered). */
export type ApprovalAsk = Omit<ApprovalRequest, 'requestId' | 'requestedAt'> & { scopeKey?: string };

interface Pending {
  request: ApprovalRequest;
  scopeKey: string | undefined;
  settle: (decision: ApprovalDecision, source: ApprovalSource) => void;
}

type Listener<T> = (value: T) => void;

export class ApprovalBroker {
  private readonly pendingById = new Map<string, Pending>();
  /** sessionId → remembered `allow_always` scopes. */
  private readonly remembered = new Map<string, Set<string>>();
  private readonly requestedListeners = new Set<Listener<ApprovalRequest>>();
  private readonly resolvedListeners = new Set<Listener<ApprovalResolution>>();
  private readonly clock: () => number;
  private readonly newId: () => string;

  constructor(private readonly options: ApprovalBrokerOptions = {}) {
    this.clock = options.clock ?? Date.now;
    this.newId = options.newId ?? randomUUID;
  }

  /** Whether `allow_always` was given for this scope in this session. */
  isRemembered(sessionId: string, scopeKey: string | undefined): boolean {
    return scopeKey !== undefined && (this.remembered.get(sessionId)?.has(scopeKey) ?? false);
  }

  /**
   * Asks for permission and resolves with the answer (`allow_always` already remembered). A scope
   * remembered earlier answers at once with source `remembered`, announcing nothing.
   */
  async request(
    ask: ApprovalAsk,
    options: { signal?: AbortSignal } = {},
  ): Promise<{ decision: ApprovalDecision; source: ApprovalSource; requestId?: string }> {
    const { scopeKey, ...fields } = ask;
    if (this.isRemembered(fields.sessionId, scopeKey)) return { decision: 'allow_once', source: 'remembered' };
    if (options.signal?.aborted) return { decision: 'deny', source: 'cancelled' };
    const request: ApprovalRequest = {
      ...fields,
      requestId: this.newId(),
      requestedAt: new Date(this.clock()).toISOString(),
    };
    return new Promise((resolve) => {
      const approverAbort = new AbortController();
      const onAbort = (): void => settle('deny', 'cancelled');
      const settle = (decision: ApprovalDecision, source: ApprovalSource): void => {
        if (!this.pendingById.delete(request.requestId)) return;
        options.signal?.removeEventListener('abort', onAbort);
        approverAbort.abort();
        if (decision === 'allow_always' && scopeKey !== undefined) {
          let scopes = this.remembered.get(request.sessionId);
          if (!scopes) this.remembered.set(request.sessionId, (scopes = new Set()));
          scopes.add(scopeKey);
        }
        const resolution: ApprovalResolution = {
          requestId: request.requestId,
          sessionId: request.sessionId,
          ...(request.conversationId !== undefined ? { conversationId: request.conversationId } : {}),
          decision,
          source,
        };
        for (const listener of this.resolvedListeners) listener(resolution);
        resolve({ decision, source, requestId: request.requestId });
      };
      this.pendingById.set(request.requestId, { request, scopeKey, settle });
      options.signal?.addEventListener('abort', onAbort, { once: true });
      for (const listener of this.requestedListeners) listener(structuredClone(request));
      const approver = this.options.approver;
      if (approver) {
        Promise.resolve()
          .then(() => approver(structuredClone(request), { signal: approverAbort.signal }))
          .then(
            (decision) => settle(isDecision(decision) ? decision : 'deny', 'approver'),
            () => settle('deny', 'approver'),
          );
      }
    });
  }

  /**
   * A client's answer. Throws NOT_FOUND for an unknown request or one already answered (the first
   * answer wins), naming it, and changes nothing.
   */
  answer(requestId: string, decision: ApprovalDecision, options: { sessionId?: string } = {}): ApprovalResolution {
    const pending = this.pendingById.get(requestId);
    if (!pending || (options.sessionId !== undefined && pending.request.sessionId !== options.sessionId)) {
      throw new WorkspaceError(
        'NOT_FOUND',
        `No pending permission request "${requestId}"${options.sessionId ? ` in session "${options.sessionId}"` : ''}: it was answered already, cancelled, or never asked.`,
        {
          fault: 'user',
          data: { requestId, ...(options.sessionId ? { sessionId: options.sessionId } : {}) },
        },
      );
    }
    if (!isDecision(decision)) {
      throw new WorkspaceError(
        'INVALID_INPUT',
        `"${String(decision)}" is not a decision; answer allow_once, allow_always or deny.`,
        { fault: 'user', data: { requestId } },
      );
    }
    pending.settle(decision, 'client');
    return {
      requestId,
      sessionId: pending.request.sessionId,
      ...(pending.request.conversationId !== undefined ? { conversationId: pending.request.conversationId } : {}),
      decision,
      source: 'client',
    };
  }

  /** Requests waiting for an answer, oldest first (all, or one session's). */
  pending(sessionId?: string): ApprovalRequest[] {
    return [...this.pendingById.values()]
      .filter((entry) => sessionId === undefined || entry.request.sessionId === sessionId)
      .map((entry) => structuredClone(entry.request));
  }

  /** Forgets a session's `allow_always` answers and denies its waiting requests (its draft closed). */
  forgetSession(sessionId: string): void {
    this.remembered.delete(sessionId);
    for (const entry of [...this.pendingById.values()])
      if (entry.request.sessionId === sessionId) entry.settle('deny', 'cancelled');
  }

  /** Called with each new request (after any remembered scope was checked). Returns the unsubscribe function. */
  onRequested(listener: Listener<ApprovalRequest>): () => void {
    this.requestedListeners.add(listener);
    return () => this.requestedListeners.delete(listener);
  }

  /** Called with each answer, whoever gave it. Returns the unsubscribe function. */
  onResolved(listener: Listener<ApprovalResolution>): () => void {
    this.resolvedListeners.add(listener);
    return () => this.resolvedListeners.delete(listener);
  }
}

function isDecision(value: unknown): value is ApprovalDecision {
  return value === 'allow_once' || value === 'allow_always' || value === 'deny';
}
