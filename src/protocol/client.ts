import type { StreamEvent } from '../conversation/index.js';
import { canonicalResultChecks } from './canonical-results.js';
import { ProtocolClientError, RpcError } from './errors.js';
import { classifyInbound, JSONRPC_VERSION, type NotificationEnvelope, type ResponseEnvelope } from './json-rpc.js';
import { methods, type MethodName, type MethodParams, type MethodResult } from './methods.js';
import { isNotificationName, notifications, type NotificationName, type NotificationParams } from './notifications.js';
import type { Transport, TransportFactory } from './transport.js';

/** The TUI's dot: `connected`, `reconnecting` after a drop, `disconnected` before connecting, after `close()` or after giving up. */
export type ConnectionState = 'disconnected' | 'connecting' | 'connected' | 'reconnecting';

/** How the client reconnects after a dropped connection: attempts and back-off. */
export interface ReconnectOptions {
  /** First wait after a drop (default 250 ms); doubles (`factor`) up to `maxDelayMs` (default 10 s). */
  initialDelayMs?: number;
  maxDelayMs?: number;
  factor?: number;
  /** Fraction of each delay drawn at random, so many clients do not reconnect in step (default 0.2). */
  jitter?: number;
  /** Give up after this many failed attempts in a row (default: never). */
  maxAttempts?: number;
}

/** Options of `ProtocolClient`: the transport, reconnection and request timeouts. */
export interface ProtocolClientOptions {
  transport: TransportFactory;
  /** Per-request timeout (default 30 s; 0: none). A request may set its own. */
  requestTimeoutMs?: number;
  /** Reconnect with backoff after a drop (default on); `false` turns it off. */
  reconnect?: ReconnectOptions | false;
  /** Parse results and notifications with their schemas (default true): the server is another process. */
  validate?: boolean;
  /** A notification handler threw, or the server sent something unreadable. Default: `console.warn`. */
  onError?: (error: unknown) => void;
  /** Random numbers for jitter; injectable for deterministic tests. */
  random?: () => number;
}

/** Options of one client request: a timeout and an `AbortSignal`. */
export interface RequestOptions {
  /** Overrides the client's default; 0: none (e.g. a long `submit_prompt` dispatch). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

type EventKind = 'channel_message' | 'session_event';

interface Pending {
  method: string;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  cleanup(): void;
}

interface Outgoing {
  id: number;
  frame: string;
}

/**
 * A typed JSON-RPC client over any transport. It owns ids, pending responses, timeouts and one
 * ordered write queue; it reconnects with backoff and resumes: it remembers the last `seq` it
 * delivered per session and, after a reconnect, re-subscribes, asks `get_events` for what came
 * after and hands it on as the notifications it missed, so no event is missed or delivered twice.
 * Only stream events are replayed: other notifications sent while the link was down (`draft_status`,
 * `agent_status`, `draft_closed`…) are gone, so refresh that state (`get_draft_status`,
 * `list_agents`) when `onStateChange` reports `connected` again.
 */
export class ProtocolClient {
  private transport: Transport | undefined;
  private stateValue: ConnectionState = 'disconnected';
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  /** Requests not yet written, in call order; written when connected. */
  private readonly outbox: Outgoing[] = [];
  private readonly handlers = new Map<string, Set<(params: never) => void>>();
  private readonly stateHandlers = new Set<(state: ConnectionState) => void>();
  /** Last delivered `seq` per kind and session. */
  private readonly lastSeqs = new Map<
    string,
    { kind: EventKind; sessionId: string; channelId?: string; seq: number }
  >();
  private subscriptions: Subscriptions = {
    all: false,
    sessionIds: new Set(),
    notices: { all: false, sessionIds: new Set() },
  };
  private runSubscriptions: { all: boolean; runIds: Set<string>; events: boolean } = {
    all: false,
    runIds: new Set(),
    events: false,
  };
  /** Notifications held while a reconnect replays what was missed. */
  private held: NotificationEnvelope[] | undefined;
  private closedByUser = false;
  /** Between open and the end of the handshake: a drop then fails the handshake instead of scheduling a reconnect. */
  private handshaking = false;
  private attempts = 0;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  private connecting: Promise<void> | undefined;
  private channel: string | undefined;
  private readonly options: Required<Pick<ProtocolClientOptions, 'requestTimeoutMs' | 'validate'>> &
    ProtocolClientOptions;

  constructor(options: ProtocolClientOptions) {
    this.options = { requestTimeoutMs: 30_000, validate: true, ...options };
  }

  get state(): ConnectionState {
    return this.stateValue;
  }

  /** The channel this client is on (known after the first connect). */
  get channelId(): string | undefined {
    return this.channel;
  }

  /** Connects (once); resolves when the first connection is up. Rejects with CONNECT_FAILED. */
  connect(options: { signal?: AbortSignal } = {}): Promise<void> {
    if (this.stateValue === 'connected') return Promise.resolve();
    this.closedByUser = false;
    this.connecting ??= this.open('connecting', options.signal).finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  /** Calls a method. Resolves with its (validated) result; rejects with `RpcError` or `ProtocolClientError`. */
  request<M extends MethodName>(
    method: M,
    ...args: {} extends MethodParams<M>
      ? [params?: MethodParams<M>, options?: RequestOptions]
      : [params: MethodParams<M>, options?: RequestOptions]
  ): Promise<MethodResult<M>> {
    const [params, options = {}] = args as [MethodParams<M> | undefined, RequestOptions | undefined];
    return this.call(method, params ?? {}, options) as Promise<MethodResult<M>>;
  }

  /** Listens to a notification. Returns the unsubscribe function. */
  on<N extends NotificationName>(name: N, handler: (params: NotificationParams<N>) => void): () => void {
    let set = this.handlers.get(name);
    if (!set) {
      set = new Set();
      this.handlers.set(name, set);
    }
    set.add(handler as (params: never) => void);
    return () => set.delete(handler as (params: never) => void);
  }

  onStateChange(handler: (state: ConnectionState) => void): () => void {
    this.stateHandlers.add(handler);
    return () => this.stateHandlers.delete(handler);
  }

  /**
   * Follows sessions (or all); with `events: false`, their notices only, not every `session_event`.
   * Remembered and renewed after every reconnect.
   */
  async subscribe(
    sessionIds?: string[],
    options: RequestOptions & { events?: boolean } = {},
  ): Promise<MethodResult<'subscribe'>> {
    const { events, ...requestOptions } = options;
    const result = await this.request(
      'subscribe',
      { ...(sessionIds ? { sessionIds } : {}), ...(events === false ? { events } : {}) },
      requestOptions,
    );
    this.subscriptions = subscriptionsOf(result);
    return result;
  }

  async unsubscribe(sessionIds?: string[], options: RequestOptions = {}): Promise<MethodResult<'unsubscribe'>> {
    const result = await this.request('unsubscribe', sessionIds ? { sessionIds } : {}, options);
    this.subscriptions = subscriptionsOf(result);
    return result;
  }

  // ---- durable runs ----
  // Run notifications are not replayed after a reconnect: `listRuns` again when the state is `connected`.

  /**
   * Follows runs (or all): `run_updated` and `run_prompt`, and `run_event` with `events: true`;
   * remembered and renewed after every reconnect.
   */
  async subscribeRuns(
    runIds?: string[],
    subscription: { events?: boolean } = {},
    options: RequestOptions = {},
  ): Promise<MethodResult<'subscribe_runs'>> {
    const result = await this.request(
      'subscribe_runs',
      { ...(runIds ? { runIds } : {}), ...(subscription.events !== undefined ? { events: subscription.events } : {}) },
      options,
    );
    this.runSubscriptions = { all: result.all, runIds: new Set(result.runIds), events: result.events };
    return result;
  }

  async unsubscribeRuns(runIds?: string[], options: RequestOptions = {}): Promise<MethodResult<'unsubscribe_runs'>> {
    const result = await this.request('unsubscribe_runs', runIds ? { runIds } : {}, options);
    this.runSubscriptions = { all: result.all, runIds: new Set(result.runIds), events: result.events };
    return result;
  }

  /** Runs, newest first. */
  async listRuns(
    filter: MethodParams<'list_runs'> = {},
    options: RequestOptions = {},
  ): Promise<MethodResult<'list_runs'>['runs']> {
    return (await this.request('list_runs', filter, options)).runs;
  }

  async getRun(runId: string, options: RequestOptions = {}): Promise<MethodResult<'get_run'>['run']> {
    return (await this.request('get_run', { runId }, options)).run;
  }

  /** Starts a workflow as a durable run; resolves with its stored record. */
  async startRun(
    params: MethodParams<'start_run'>,
    options: RequestOptions = {},
  ): Promise<MethodResult<'start_run'>['run']> {
    return (await this.request('start_run', params, options)).run;
  }

  /** `{ accepted: false, message }` when the prompt's choices or validator refuse the answer (it keeps waiting). */
  answerPrompt(
    runId: string,
    promptId: string,
    response: string,
    options: RequestOptions = {},
  ): Promise<MethodResult<'answer_prompt'>> {
    return this.request('answer_prompt', { runId, promptId, response }, options);
  }

  async sendToRun(runId: string, message: string, agent?: string, options: RequestOptions = {}): Promise<void> {
    await this.request('send_to_run', { runId, message, ...(agent !== undefined ? { agent } : {}) }, options);
  }

  /** Schedules, oldest first. */
  async listSchedules(options: RequestOptions = {}): Promise<MethodResult<'list_schedules'>['schedules']> {
    return (await this.request('list_schedules', {}, options)).schedules;
  }

  /** Stores a schedule; a bad cron, time zone or target is refused with nothing stored. */
  async addSchedule(
    params: MethodParams<'add_schedule'>,
    options: RequestOptions = {},
  ): Promise<MethodResult<'add_schedule'>['schedule']> {
    return (await this.request('add_schedule', params, options)).schedule;
  }

  async pauseSchedule(
    scheduleId: string,
    options: RequestOptions = {},
  ): Promise<MethodResult<'pause_schedule'>['schedule']> {
    return (await this.request('pause_schedule', { scheduleId }, options)).schedule;
  }

  async resumeSchedule(
    scheduleId: string,
    options: RequestOptions = {},
  ): Promise<MethodResult<'resume_schedule'>['schedule']> {
    return (await this.request('resume_schedule', { scheduleId }, options)).schedule;
  }

  async removeSchedule(scheduleId: string, options: RequestOptions = {}): Promise<void> {
    await this.request('remove_schedule', { scheduleId }, options);
  }

  async pauseRun(runId: string, options: RequestOptions = {}): Promise<MethodResult<'pause_run'>['run']> {
    return (await this.request('pause_run', { runId }, options)).run;
  }

  async resumeRun(runId: string, options: RequestOptions = {}): Promise<MethodResult<'resume_run'>['run']> {
    return (await this.request('resume_run', { runId }, options)).run;
  }

  async abortRun(
    runId: string,
    reason?: string,
    options: RequestOptions = {},
  ): Promise<MethodResult<'abort_run'>['run']> {
    return (await this.request('abort_run', { runId, ...(reason !== undefined ? { reason } : {}) }, options)).run;
  }

  /** Forks a run at a step of its journal, with another answer to the question there if `answer` is given. */
  async forkRun(
    runId: string,
    options: { atStep: number; answer?: string },
    requestOptions: RequestOptions = {},
  ): Promise<MethodResult<'fork_run'>['run']> {
    return (await this.request('fork_run', { runId, ...options }, requestOptions)).run;
  }

  /**
   * Declares what the caller already has (e.g. history it loaded with `get_events`): events of the
   * session at or below `seq` are not delivered again, and a reconnect replays from there.
   */
  resumeFrom(kind: EventKind, sessionId: string, seq: number, channelId?: string): void {
    const key = `${kind}\u0000${sessionId}`;
    const known = this.lastSeqs.get(key);
    if (known && known.seq >= seq) return;
    this.lastSeqs.set(key, {
      kind,
      sessionId,
      seq,
      ...(channelId !== undefined
        ? { channelId }
        : known?.channelId !== undefined
          ? { channelId: known.channelId }
          : {}),
    });
  }

  /** The last `seq` delivered for the session through `kind`, or -1. */
  lastSeq(sessionId: string, kind: EventKind = 'channel_message'): number {
    return this.lastSeqs.get(`${kind}\u0000${sessionId}`)?.seq ?? -1;
  }

  /** Closes the connection for good: pending and queued requests reject with CONNECTION_CLOSED. */
  close(): void {
    this.closedByUser = true;
    clearTimeout(this.reconnectTimer);
    const transport = this.transport;
    this.transport = undefined;
    transport?.close(1000, 'client closed');
    this.failPending('The client was closed.');
    this.failOutbox('The client was closed.');
    this.setState('disconnected');
  }

  // ---- internals ---------------------------------------------------------------------------------

  private call(method: string, params: unknown, options: RequestOptions): Promise<unknown> {
    if (this.closedByUser)
      return Promise.reject(
        new ProtocolClientError('CONNECTION_CLOSED', `Cannot call ${method}: the client is closed.`),
      );
    if (options.signal?.aborted)
      return Promise.reject(new ProtocolClientError('ABORTED', `${method} was aborted before it was sent.`));
    // Queued while (re)connecting; refused when no connection is coming.
    if (this.stateValue === 'disconnected')
      return Promise.reject(
        new ProtocolClientError('CONNECTION_CLOSED', `Cannot call ${method}: not connected (call connect()).`),
      );
    const id = this.nextId++;
    const frame = JSON.stringify({ jsonrpc: JSONRPC_VERSION, id, method, params });
    return new Promise<unknown>((resolve, reject) => {
      const timeoutMs = options.timeoutMs ?? this.options.requestTimeoutMs;
      const timer =
        timeoutMs > 0
          ? setTimeout(
              () =>
                this.settle(
                  id,
                  new ProtocolClientError('TIMEOUT', `${method} got no answer within ${timeoutMs} ms.`, {
                    data: { method, timeoutMs },
                  }),
                ),
              timeoutMs,
            )
          : undefined;
      const onAbort = () =>
        this.settle(id, new ProtocolClientError('ABORTED', `${method} was aborted.`, { data: { method } }));
      options.signal?.addEventListener('abort', onAbort, { once: true });
      this.pending.set(id, {
        method,
        resolve,
        reject,
        cleanup: () => {
          clearTimeout(timer);
          options.signal?.removeEventListener('abort', onAbort);
        },
      });
      this.outbox.push({ id, frame });
      this.flush();
    });
  }

  /** Writes queued requests in order while connected and not replaying. */
  private flush(): void {
    if (!this.transport || this.stateValue !== 'connected') return;
    this.write(this.outbox);
  }

  private write(queue: Outgoing[]): void {
    const transport = this.transport;
    while (transport && queue.length > 0) {
      const next = queue[0]!;
      if (!this.pending.has(next.id)) {
        queue.shift();
        continue;
      }
      try {
        transport.send(next.frame);
      } catch {
        // The link broke under us: the request stays queued for the next connection.
        return;
      }
      queue.shift();
    }
  }

  private settle(id: number, error: unknown, value?: unknown): void {
    const entry = this.pending.get(id);
    if (!entry) return;
    this.pending.delete(id);
    entry.cleanup();
    if (error !== undefined) entry.reject(error);
    else entry.resolve(value);
  }

  private async open(state: 'connecting' | 'reconnecting', signal?: AbortSignal): Promise<void> {
    this.setState(state);
    try {
      await this.handshake(state, signal);
    } catch (error) {
      if (state === 'connecting' && !this.closedByUser) this.setState('disconnected');
      throw error instanceof ProtocolClientError || error instanceof RpcError
        ? error
        : new ProtocolClientError('CONNECT_FAILED', `Could not connect: ${String(error)}`, { cause: error });
    }
    this.attempts = 0;
    this.setState('connected');
    this.flush();
  }

  private async handshake(state: 'connecting' | 'reconnecting', signal?: AbortSignal): Promise<void> {
    const transport = await this.options.transport({
      ...(this.channel !== undefined ? { channel: this.channel } : {}),
      ...(signal ? { signal } : {}),
    });
    if (this.closedByUser) {
      transport.close(1000, 'client closed');
      throw new ProtocolClientError('CONNECTION_CLOSED', 'The client was closed while connecting.');
    }
    this.transport = transport;
    this.handshaking = true;
    // Live events can arrive as soon as the server accepts us: hold them until the replay is done,
    // or one of them would move the resumption point past events not replayed yet.
    if (state === 'reconnecting') this.held = [];
    transport.start({
      onMessage: (frame) => this.receive(frame),
      onClose: (event) => this.dropped(transport, event),
    });
    // Control requests go out before queued user requests: learn the channel, then resume.
    const control: Outgoing[] = [];
    const controlCall = (method: MethodName, params: unknown) => {
      const promise = this.callDirect(method, params, control);
      this.write(control);
      return promise;
    };
    try {
      const info = (await controlCall('server_info', {})) as MethodResult<'server_info'>;
      this.channel = info.channelId;
      if (state === 'reconnecting') await this.resync(controlCall);
    } catch (error) {
      this.held = undefined;
      if (this.transport === transport) {
        this.transport = undefined;
        transport.close(1011, 'handshake failed');
      }
      throw error;
    } finally {
      this.handshaking = false;
    }
    if (this.transport !== transport)
      throw new ProtocolClientError('CONNECTION_CLOSED', 'The connection closed while it was being set up.');
  }

  /** A request that bypasses the user queue (handshake and replay). */
  private callDirect(method: MethodName, params: unknown, queue: Outgoing[]): Promise<unknown> {
    const id = this.nextId++;
    const frame = JSON.stringify({ jsonrpc: JSONRPC_VERSION, id, method, params });
    return new Promise((resolve, reject) => {
      const timeoutMs = this.options.requestTimeoutMs;
      const timer =
        timeoutMs > 0
          ? setTimeout(
              () =>
                this.settle(id, new ProtocolClientError('TIMEOUT', `${method} got no answer within ${timeoutMs} ms.`)),
              timeoutMs,
            )
          : undefined;
      this.pending.set(id, { method, resolve, reject, cleanup: () => clearTimeout(timer) });
      queue.push({ id, frame });
    });
  }

  /** Renews subscriptions, then replays every followed session from its last delivered `seq`. */
  private async resync(call: (method: MethodName, params: unknown) => Promise<unknown>): Promise<void> {
    this.held ??= [];
    try {
      const { notices } = this.subscriptions;
      if (this.subscriptions.all) await call('subscribe', {});
      else if (this.subscriptions.sessionIds.size > 0)
        await call('subscribe', { sessionIds: [...this.subscriptions.sessionIds] });
      if (notices.all) await call('subscribe', { events: false });
      else if (notices.sessionIds.size > 0)
        await call('subscribe', { sessionIds: [...notices.sessionIds], events: false });
      const events = this.runSubscriptions.events ? { events: true } : {};
      if (this.runSubscriptions.all) await call('subscribe_runs', events);
      if (this.runSubscriptions.runIds.size > 0)
        await call('subscribe_runs', { runIds: [...this.runSubscriptions.runIds], ...events });
      for (const [key, entry] of [...this.lastSeqs.entries()]) {
        let afterSeq = entry.seq;
        for (;;) {
          let page: MethodResult<'get_events'>;
          try {
            page = (await call('get_events', { sessionId: entry.sessionId, afterSeq })) as MethodResult<'get_events'>;
          } catch (error) {
            // A session that no longer exists has nothing more to replay.
            if (error instanceof RpcError && error.reason === 'SESSION_NOT_FOUND') {
              this.lastSeqs.delete(key);
              break;
            }
            throw error;
          }
          for (const event of page.events) this.deliverEvent(entry.kind, entry.sessionId, event, entry.channelId);
          const last = page.events.at(-1);
          if (!page.hasMore || !last) break;
          afterSeq = last.seq;
        }
      }
    } catch (error) {
      // A partial replay must not let later live events move the resumption point past a gap.
      this.held = undefined;
      throw error;
    }
    const held = this.held ?? [];
    this.held = undefined;
    for (const notification of held) this.dispatchNotification(notification);
  }

  private dropped(transport: Transport, event: { code: number; reason: string }): void {
    if (this.transport !== transport) return;
    this.transport = undefined;
    this.held = undefined;
    // Sent requests may or may not have run: they fail rather than being sent twice.
    this.failPending(
      `The connection closed (code ${event.code}${event.reason ? `: ${event.reason}` : ''}) before the answer came.`,
    );
    if (this.closedByUser || this.handshaking) return;
    if (this.options.reconnect === false) {
      this.failOutbox('The connection closed and reconnecting is off.');
      this.setState('disconnected');
      return;
    }
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    const options = this.options.reconnect === false ? {} : (this.options.reconnect ?? {});
    const maxAttempts = options.maxAttempts ?? Number.POSITIVE_INFINITY;
    if (this.attempts >= maxAttempts) {
      this.failOutbox(`Gave up reconnecting after ${this.attempts} attempts.`);
      this.setState('disconnected');
      return;
    }
    const initial = options.initialDelayMs ?? 250;
    const base = Math.min(options.maxDelayMs ?? 10_000, initial * (options.factor ?? 2) ** this.attempts);
    const jitter = options.jitter ?? 0.2;
    const delay = base * (1 - jitter + jitter * 2 * (this.options.random ?? Math.random)());
    this.attempts += 1;
    this.setState('reconnecting');
    this.reconnectTimer = setTimeout(() => {
      if (this.closedByUser) return;
      this.open('reconnecting').catch(() => {
        if (!this.closedByUser && !this.transport) this.scheduleReconnect();
      });
    }, delay);
  }

  private failPending(message: string): void {
    for (const id of [...this.pending.keys()]) {
      const method = this.pending.get(id)?.method;
      const queued = this.outbox.some((entry) => entry.id === id);
      if (queued && !this.closedByUser) continue;
      this.settle(
        id,
        new ProtocolClientError('CONNECTION_CLOSED', `${method ?? 'request'}: ${message}`, { data: { method } }),
      );
    }
  }

  private failOutbox(message: string): void {
    for (const entry of this.outbox.splice(0)) {
      this.settle(entry.id, new ProtocolClientError('CONNECTION_CLOSED', message));
    }
  }

  private receive(frame: string): void {
    let value: unknown;
    try {
      value = JSON.parse(frame);
    } catch (error) {
      this.report(
        new ProtocolClientError('INVALID_RESPONSE', `The server sent a frame that is not JSON: ${frame.slice(0, 80)}`, {
          cause: error,
        }),
      );
      return;
    }
    const inbound = classifyInbound(value);
    if (inbound.kind === 'invalid') {
      this.report(
        new ProtocolClientError('INVALID_RESPONSE', `The server sent ${inbound.reason}: ${frame.slice(0, 80)}`),
      );
      return;
    }
    if (inbound.kind === 'response') this.answer(inbound.response);
    // Every notification waits behind the replay, so a turn's `draft_status` still follows its events.
    else if (this.held) this.held.push(inbound.notification);
    else this.dispatchNotification(inbound.notification);
  }

  private answer(response: ResponseEnvelope): void {
    if (typeof response.id !== 'number') {
      if ('error' in response) this.report(RpcError.fromWire(response.error));
      return;
    }
    const entry = this.pending.get(response.id);
    if (!entry) return;
    if ('error' in response) {
      this.settle(response.id, RpcError.fromWire(response.error, entry.method));
      return;
    }
    const spec = (
      methods as Record<
        string,
        { result: { safeParse(value: unknown): { success: boolean; data?: unknown; error?: { message: string } } } }
      >
    )[entry.method];
    if (!this.options.validate || !spec) {
      this.learn(entry.method, response.result);
      this.settle(response.id, undefined, response.result);
      return;
    }
    // A page of history the schema would return unchanged is taken as it is (canonical-results.ts).
    if (canonicalResultChecks[entry.method as MethodName]?.(response.result)) {
      this.learn(entry.method, response.result);
      this.settle(response.id, undefined, response.result);
      return;
    }
    const parsed = spec.result.safeParse(response.result);
    if (parsed.success) {
      this.learn(entry.method, parsed.data);
      this.settle(response.id, undefined, parsed.data);
    } else
      this.settle(
        response.id,
        new ProtocolClientError(
          'INVALID_RESPONSE',
          `The result of ${entry.method} does not match its schema: ${parsed.error?.message ?? ''}`,
          { data: { method: entry.method } },
        ),
      );
  }

  /**
   * A new draft, or a turn just accepted, names the channel's session before any of its events
   * arrive: follow it from there, so a link that drops before the first event still resumes.
   */
  private learn(method: string, result: unknown): void {
    if (typeof result !== 'object' || result === null) return;
    const answer = result as { sessionId?: unknown; mode?: unknown; seq?: unknown };
    if (typeof answer.sessionId !== 'string') return;
    // Only a session not followed yet: a known one already has its resumption point.
    if (this.lastSeqs.has(`channel_message\u0000${answer.sessionId}`)) return;
    if (method === 'draft') this.resumeFrom('channel_message', answer.sessionId, -1, this.channel);
    else if (method === 'submit_prompt' && answer.mode === 'draft' && typeof answer.seq === 'number') {
      this.resumeFrom('channel_message', answer.sessionId, answer.seq - 1, this.channel);
    }
  }

  private dispatchNotification(notification: NotificationEnvelope): void {
    const name = notification.method;
    if (!isNotificationName(name)) return;
    let params: unknown = notification.params;
    if (this.options.validate) {
      const parsed = notifications[name].params.safeParse(params);
      if (!parsed.success) {
        this.report(
          new ProtocolClientError(
            'INVALID_RESPONSE',
            `The server sent a ${name} notification that does not match its schema: ${parsed.error.message}`,
          ),
        );
        return;
      }
      params = parsed.data;
    }
    if (name === 'channel_message') {
      const message = params as NotificationParams<'channel_message'>;
      this.deliverEvent('channel_message', message.sessionId, message.event, message.channelId);
      return;
    }
    if (name === 'session_event') {
      const message = params as NotificationParams<'session_event'>;
      this.deliverEvent('session_event', message.sessionId, message.event);
      return;
    }
    this.emit(name, params);
  }

  /** Delivers an event once: anything at or below the last delivered `seq` of its session is a duplicate. */
  private deliverEvent(kind: EventKind, sessionId: string, event: StreamEvent, channelId?: string): void {
    const key = `${kind}\u0000${sessionId}`;
    const known = this.lastSeqs.get(key);
    if (known && event.seq <= known.seq) return;
    this.lastSeqs.set(key, {
      kind,
      sessionId,
      seq: event.seq,
      ...(channelId !== undefined
        ? { channelId }
        : known?.channelId !== undefined
          ? { channelId: known.channelId }
          : {}),
    });
    if (kind === 'channel_message')
      this.emit(kind, { channelId: channelId ?? known?.channelId ?? this.channel ?? '', sessionId, event });
    else this.emit(kind, { sessionId, event });
  }

  private emit(name: string, params: unknown): void {
    const set = this.handlers.get(name);
    if (!set) return;
    for (const handler of [...set]) {
      try {
        (handler as (params: unknown) => void)(params);
      } catch (error) {
        this.report(error);
      }
    }
  }

  private setState(state: ConnectionState): void {
    if (this.stateValue === state) return;
    this.stateValue = state;
    for (const handler of [...this.stateHandlers]) {
      try {
        handler(state);
      } catch (error) {
        this.report(error);
      }
    }
  }

  private report(error: unknown): void {
    if (this.options.onError) this.options.onError(error);
    else console.warn('parley protocol client:', error);
  }
}

/** What this client follows, as the server last said: sessions with their events, and notices only. */
interface Subscriptions {
  all: boolean;
  sessionIds: Set<string>;
  notices: { all: boolean; sessionIds: Set<string> };
}

function subscriptionsOf(result: MethodResult<'subscribe'>): Subscriptions {
  return {
    all: result.all,
    sessionIds: new Set(result.sessionIds),
    notices: { all: result.notices?.all ?? false, sessionIds: new Set(result.notices?.sessionIds ?? []) },
  };
}
