import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { MAIN_CONVERSATION, type StreamEvent, type StreamEventDraft, type SystemBlock } from '../conversation/index.js';
import type { AgentBackend, AgentProfile } from '../backends/index.js';
import { createSessionManager, runTurn, type SessionManager, type TurnHandle } from '../sessions/index.js';
import { createMemoryStore } from '../store/index.js';
import { AbortedError, AgentTurnError, describeError, HarnessError, OutputValidationError, TimeoutError, truncate } from './errors.js';
import { EventLog } from './event-log.js';
import type { InjectedMessage, SessionEvent, SessionEventDraft, UserReply, UserResponse } from './events.js';
import { parseOutput, toJsonSchema } from './json-output.js';
import type { RecordedInputDraft, RecordedTurn } from './recording.js';
import type {
  AgentDefinition,
  AgentMap,
  AgentRunOptions,
  AgentSessionTarget,
  ExecuteContext,
  HarnessAgent,
  HarnessCreateOptions,
  HarnessDefinition,
  InteractiveSessionStatus,
  ParallelOptions,
  PendingPrompt,
  ReplyOutcome,
  RetryOptions,
  SessionContext,
  WaitOptions,
} from './types.js';

/** The `parallel` branch code runs in (`name#index`, nested joined by `/`); events carry it. */
const branches = new AsyncLocalStorage<string>();

/** Watches a run from outside: the recorder writes what it sees, and replay feeds it. */
export interface RuntimeObserver {
  /** The run begins (before its first event). */
  start?(): void;
  /** An outside action (reply, send, abort…) at `at`: the number of events dispatched before it took effect. */
  input?(at: number, input: RecordedInputDraft): void;
  /** An agent turn's back-end output, once the turn ended. */
  turn?(turn: Omit<RecordedTurn, 'kind'>): void;
}

export type Outcome = { kind: 'complete'; result: unknown } | { kind: 'aborted'; result: unknown } | { kind: 'failed'; error: unknown };

interface PromptEntry {
  info: PendingPrompt;
  options: WaitOptions;
  branch: string | undefined;
  state: 'pending' | 'answered' | 'timed_out' | 'cancelled';
  resolve: (response: UserResponse) => void;
  reject: (error: unknown) => void;
  timer?: ReturnType<typeof setTimeout>;
}

interface WaitingMessage {
  message: InjectedMessage;
  /** The agent whose next turn takes it; undefined: the next turn of any agent. */
  agent?: string;
}

export type AnyHarnessDefinition = HarnessDefinition<AgentMap, unknown, unknown, unknown>;

const noop = (): void => {};

/**
 * One execution of a harness: the event log, the agents, the prompts and messages of an
 * interactive session, and the abort controller whose signal reaches every agent turn.
 */
export class HarnessRuntime {
  readonly log = new EventLog((error) => process.emitWarning(`A harness event handler threw: ${String(error)}`));
  readonly controller = new AbortController();
  readonly agents = new Map<string, AgentRuntime>();
  readonly observers: RuntimeObserver[] = [];
  /** Replay answers timeouts from the recording instead of the clock. */
  armTimers = true;
  interactive = false;
  started = false;
  finished = false;
  aborted = false;
  abortReason: string | undefined;
  duration = 0;
  outcome: Promise<Outcome> | undefined;
  private paused = false;
  private readonly pauseWaiters = new Set<() => void>();
  private readonly running: AgentRuntime[] = [];
  private waiting: WaitingMessage[] = [];
  private readonly prompts = new Map<string, PromptEntry>();
  private promptCounter = 0;
  private managerPromise: Promise<SessionManager> | undefined;
  private startedAt = 0;
  private removeExternalListener: () => void = noop;

  constructor(
    readonly definition: AnyHarnessDefinition,
    readonly input: unknown,
    readonly state: unknown,
    readonly options: HarnessCreateOptions,
  ) {
    for (const [key, agent] of Object.entries(definition.agents)) {
      this.agents.set(key, new AgentRuntime(this, key, agent, options.backends?.[key] ?? agent.backend));
    }
  }

  get name(): string {
    return this.definition.name;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get status(): InteractiveSessionStatus {
    if (this.aborted) return 'aborted';
    if (this.finished) return 'complete';
    if (this.paused) return 'paused';
    return this.pendingPrompts().length > 0 ? 'waiting' : 'running';
  }

  sessionManager(): Promise<SessionManager> {
    const given = this.options.sessionManager;
    this.managerPromise ??= given ? Promise.resolve(given) : createSessionManager({ store: createMemoryStore() });
    return this.managerPromise;
  }

  /**
   * Appends an event and returns its index. Its branch is the parallel branch the caller runs in,
   * unless one is given: events of prompts keep their prompt's branch, and the user's own actions
   * (given as `undefined`) have none, whichever code happened to call them.
   */
  emit(draft: SessionEventDraft, ...given: [branch: string | undefined] | []): number {
    const branch = given.length > 0 ? given[0] : branches.getStore();
    const event = { ...draft, timestamp: draft.timestamp ?? new Date(), ...(branch !== undefined ? { branch } : {}) } as SessionEvent;
    const index = this.log.events.length;
    this.log.emit(event);
    return index;
  }

  // ---- lifecycle --------------------------------------------------------------------------------

  /**
   * Starts the workflow in a microtask, so handlers attached right after `startSession()` returns
   * see every event from `harness:start` on. `signal` (besides the create option's) aborts it too.
   */
  start(signal?: AbortSignal): Promise<Outcome> {
    if (this.started) {
      throw new HarnessError('ALREADY_STARTED', `This "${this.name}" instance has already run; call create() again for another run.`, { fault: 'user' });
    }
    this.started = true;
    this.outcome = Promise.resolve().then(() => this.begin(signal));
    return this.outcome;
  }

  private begin(signal: AbortSignal | undefined): Promise<Outcome> {
    this.startedAt = performance.now();
    for (const observer of this.observers) observer.start?.();
    this.emit({ type: 'harness:start', harness: this.name }, undefined);
    const removers: Array<() => void> = [];
    for (const external of [this.options.signal, signal]) {
      if (!external) continue;
      const onAbort = (): void => this.abort(reasonOf(external.reason) ?? 'the caller aborted');
      if (external.aborted) onAbort();
      else {
        external.addEventListener('abort', onAbort, { once: true });
        removers.push(() => external.removeEventListener('abort', onAbort));
      }
    }
    this.removeExternalListener = () => removers.forEach((remove) => remove());
    return this.execute();
  }

  private async execute(): Promise<Outcome> {
    let outcome: Outcome;
    try {
      const manager = await this.sessionManager();
      this.throwIfStopped();
      const result = await this.definition.run(this.context(manager));
      outcome = this.aborted ? { kind: 'aborted', result } : { kind: 'complete', result };
    } catch (error) {
      outcome = this.aborted ? { kind: 'aborted', result: undefined } : { kind: 'failed', error };
    }
    this.finish(outcome);
    return outcome;
  }

  private finish(outcome: Outcome): void {
    this.duration = performance.now() - this.startedAt;
    this.finished = true;
    this.removeExternalListener();
    this.cancelPrompts(new HarnessError('SESSION_ENDED', 'The workflow ended before this prompt was answered.', { fault: 'user' }));
    this.wakePaused();
    if (this.interactive) {
      if (outcome.kind === 'failed') {
        this.emit({ type: 'session:error', error: describeError(outcome.error), duration: this.duration }, undefined);
      } else {
        this.emit(
          {
            type: 'session:complete',
            result: outcome.result,
            duration: this.duration,
            aborted: outcome.kind === 'aborted',
            ...(outcome.kind === 'aborted' && this.abortReason !== undefined ? { abortReason: this.abortReason } : {}),
          },
          undefined,
        );
      }
    }
    this.log.close();
    // Turns the workflow started and did not wait for would outlive it: stop them.
    if (!this.controller.signal.aborted) this.controller.abort(new HarnessError('SESSION_ENDED', 'The workflow ended.', { fault: 'user' }));
  }

  abort(reason?: string): void {
    if (this.finished || this.aborted) return;
    this.notify({ action: 'abort', ...(reason !== undefined ? { reason } : {}) });
    this.aborted = true;
    this.abortReason = reason;
    this.emit({ type: 'session:abort', ...(reason !== undefined ? { reason } : {}) }, undefined);
    const error = new AbortedError(reason);
    this.cancelPrompts(error);
    this.wakePaused();
    this.controller.abort(error);
  }

  pause(): void {
    if (this.finished || this.aborted || this.paused) return;
    this.notify({ action: 'pause' });
    this.paused = true;
    this.emit({ type: 'session:paused' }, undefined);
  }

  resume(): void {
    if (!this.paused) return;
    this.notify({ action: 'resume' });
    this.paused = false;
    this.emit({ type: 'session:resumed' }, undefined);
    this.wakePaused();
  }

  /** Where the workflow may stop: throws once aborted, waits while paused. */
  async checkpoint(): Promise<void> {
    this.throwIfStopped();
    while (this.paused && !this.aborted && !this.finished) {
      await new Promise<void>((resolve) => this.pauseWaiters.add(resolve));
    }
    this.throwIfStopped();
  }

  throwIfStopped(): void {
    if (this.aborted) throw new AbortedError(this.abortReason);
    if (this.finished) throw new HarnessError('SESSION_ENDED', `The "${this.name}" workflow has ended; nothing more can run in it.`, { fault: 'user' });
  }

  abortError(signal: AbortSignal): AbortedError {
    if (this.aborted) return new AbortedError(this.abortReason);
    return signal.reason instanceof AbortedError ? signal.reason : new AbortedError(reasonOf(signal.reason));
  }

  private wakePaused(): void {
    for (const waiter of [...this.pauseWaiters]) waiter();
    this.pauseWaiters.clear();
  }

  notify(input: RecordedInputDraft): void {
    for (const observer of this.observers) observer.input?.(this.log.dispatched, input);
  }

  recordTurn(turn: Omit<RecordedTurn, 'kind'>): void {
    for (const observer of this.observers) observer.turn?.(turn);
  }

  // ---- the execute context -----------------------------------------------------------------------

  private context(manager: SessionManager): ExecuteContext<AgentMap, unknown, unknown> {
    const agents: Record<string, HarnessAgent<unknown>> = {};
    for (const [key, agent] of this.agents) agents[key] = agent.handle;
    return {
      agents,
      state: this.state,
      input: this.input,
      signal: this.controller.signal,
      sessionManager: manager,
      phase: (name, fn) => this.step('phase', name, fn),
      task: (id, fn) => this.step('task', id, fn),
      emit: (name, data = {}) => {
        if (typeof name !== 'string' || name === '') throw new HarnessError('INVALID_INPUT', 'emit(name, data) needs a non-empty event name.', { fault: 'user' });
        this.emit({ type: 'custom', name, data });
      },
      retry: (name, fn, options) => this.retry(name, fn, options),
      parallel: (name, fns, options) => this.parallel(name, fns, options),
      ...(this.interactive ? { session: this.sessionContext() } : {}),
    };
  }

  private async step<T>(kind: 'phase' | 'task', name: string, fn: () => Promise<T>): Promise<T> {
    await this.checkpoint();
    const started = performance.now();
    this.emit(kind === 'phase' ? { type: 'phase:start', name } : { type: 'task:start', id: name });
    try {
      const result = await fn();
      const duration = performance.now() - started;
      this.emit(kind === 'phase' ? { type: 'phase:complete', name, duration } : { type: 'task:complete', id: name, duration });
      return result;
    } catch (error) {
      const duration = performance.now() - started;
      const info = describeError(error);
      this.emit(kind === 'phase' ? { type: 'phase:failed', name, duration, error: info } : { type: 'task:failed', id: name, duration, error: info });
      throw error;
    }
  }

  private async retry<T>(name: string, fn: (attempt: number) => Promise<T>, options: RetryOptions = {}): Promise<T> {
    const attempts = options.attempts ?? 3;
    if (!Number.isInteger(attempts) || attempts < 1) {
      throw new HarnessError('INVALID_INPUT', `retry("${name}"): attempts must be a whole number of at least 1, not ${String(attempts)}.`, { fault: 'user' });
    }
    for (let attempt = 1; ; attempt++) {
      await this.checkpoint();
      this.emit({ type: 'retry:attempt', name, attempt, attempts });
      try {
        return await fn(attempt);
      } catch (error) {
        const retryable = !(error instanceof AbortedError) && !this.aborted && (options.retryOn ? options.retryOn(error, attempt) : true);
        const willRetry = retryable && attempt < attempts;
        const delayMs = willRetry ? backoffDelay(options.backoff, attempt) : 0;
        this.emit({ type: 'retry:failure', name, attempt, attempts, error: describeError(error), willRetry, delayMs });
        if (!willRetry) throw error;
        if (delayMs > 0) {
          try {
            await delay(delayMs, undefined, { signal: this.controller.signal });
          } catch {
            throw this.abortError(this.controller.signal);
          }
        }
      }
    }
  }

  private async parallel<T>(name: string, fns: Array<() => Promise<T>>, options: ParallelOptions = {}): Promise<T[]> {
    const limit = options.concurrency ?? fns.length;
    if (!(limit >= 1) || (Number.isFinite(limit) && !Number.isInteger(limit))) {
      throw new HarnessError('INVALID_INPUT', `parallel("${name}"): concurrency must be a whole number of at least 1, not ${String(options.concurrency)}.`, { fault: 'user' });
    }
    await this.checkpoint();
    const started = performance.now();
    const workers = Math.min(limit, fns.length);
    this.emit({ type: 'parallel:start', name, count: fns.length, concurrency: workers });
    const parent = branches.getStore();
    const results = new Array<T>(fns.length);
    let next = 0;
    let failure: { error: unknown } | undefined;
    const worker = async (): Promise<void> => {
      while (!failure && next < fns.length) {
        const index = next++;
        const branch = `${parent !== undefined ? `${parent}/` : ''}${name}#${index}`;
        try {
          results[index] = await branches.run(branch, async () => {
            await this.checkpoint();
            return fns[index]!();
          });
        } catch (error) {
          // The first failure stops new work; running branches finish so nothing outlives the call.
          failure ??= { error };
        }
      }
    };
    await Promise.all(Array.from({ length: workers }, worker));
    if (failure) {
      this.emit({ type: 'parallel:failed', name, error: describeError(failure.error) });
      throw failure.error;
    }
    this.emit({ type: 'parallel:complete', name, count: fns.length, duration: performance.now() - started });
    return results;
  }

  // ---- prompts ------------------------------------------------------------------------------------

  private sessionContext(): SessionContext {
    return {
      waitForUser: (prompt, options) => this.waitForUser(prompt, options),
      hasMessages: () => this.waiting.length > 0,
      readMessages: () => {
        const taken = this.waiting.map((entry) => entry.message);
        this.waiting = [];
        return taken;
      },
      isAborted: () => this.aborted,
    };
  }

  pendingPrompts(): PendingPrompt[] {
    return [...this.prompts.values()].filter((entry) => entry.state === 'pending').map((entry) => ({ ...entry.info }));
  }

  waitForUser(prompt: string, options: WaitOptions = {}): Promise<UserResponse> {
    try {
      checkWaitOptions(prompt, options);
      this.throwIfStopped();
    } catch (error) {
      return Promise.reject(error);
    }
    const promptId = `prompt-${++this.promptCounter}`;
    let resolve!: (response: UserResponse) => void;
    let reject!: (error: unknown) => void;
    const promise = new Promise<UserResponse>((onResolve, onReject) => {
      resolve = onResolve;
      reject = onReject;
    });
    // An abort rejects every waiting prompt; a workflow that did not await one must not crash the process.
    promise.catch(noop);
    const info: PendingPrompt = {
      promptId,
      prompt,
      ...(options.choices ? { choices: [...options.choices] } : {}),
      ...(options.defaultChoice !== undefined ? { defaultChoice: options.defaultChoice } : {}),
      ...(options.timeout !== undefined ? { timeout: options.timeout } : {}),
    };
    const entry: PromptEntry = { info, options, branch: branches.getStore(), state: 'pending', resolve, reject };
    this.prompts.set(promptId, entry);
    this.emit({ type: 'user:prompt', ...info }, entry.branch);
    if (options.timeout !== undefined && this.armTimers && entry.state === 'pending') {
      entry.timer = setTimeout(() => this.timeoutPrompt(promptId), options.timeout);
    }
    return promise;
  }

  reply(promptId: string, reply: UserReply): ReplyOutcome {
    const entry = this.prompts.get(promptId);
    if (!entry) {
      const pending = this.pendingPrompts().map((prompt) => prompt.promptId);
      throw new HarnessError(
        'UNKNOWN_PROMPT',
        `There is no prompt "${promptId}" in this session. ${pending.length > 0 ? `Waiting prompts: ${pending.join(', ')}.` : 'No prompt is waiting.'}`,
        { fault: 'user', data: { promptId, pending } },
      );
    }
    if (entry.state !== 'pending') {
      const what = entry.state === 'answered' ? 'has already been answered' : entry.state === 'timed_out' ? 'timed out' : 'was cancelled (the session ended or was aborted)';
      throw new HarnessError('PROMPT_ALREADY_ANSWERED', `Prompt ${promptId} ${what}; a prompt takes one reply.`, { fault: 'user', data: { promptId, state: entry.state } });
    }
    const given = typeof reply === 'string' ? { content: reply } : (reply ?? {});
    const content = typeof given.content === 'string' ? given.content : '';
    const explicitChoice = typeof given.choice === 'string' ? given.choice : undefined;
    this.notify({ action: 'reply', promptId, ...(content !== '' ? { content } : {}), ...(explicitChoice !== undefined ? { choice: explicitChoice } : {}) });

    let choice: string | undefined;
    const choices = entry.options.choices;
    if (choices) {
      choice = pickChoice(choices, explicitChoice ?? content);
      if (choice === undefined) {
        return this.rejectReply(entry, content, `"${explicitChoice ?? content}" is not one of the choices (${choices.join(', ')}). Reply with one of them or its number.`);
      }
    }
    const text = content !== '' && explicitChoice !== undefined ? content : (choice ?? content);
    if (entry.options.validator) {
      let verdict: boolean | string;
      try {
        verdict = entry.options.validator(text);
      } catch (error) {
        verdict = error instanceof Error ? error.message : String(error);
      }
      if (verdict !== true) return this.rejectReply(entry, text, typeof verdict === 'string' && verdict !== '' ? verdict : `The reply "${truncate(text, 60)}" was not accepted.`);
    }
    entry.state = 'answered';
    if (entry.timer) clearTimeout(entry.timer);
    const response: UserResponse = { content: text, ...(choice !== undefined ? { choice } : {}), timestamp: given.timestamp ?? new Date() };
    this.emit({ type: 'user:reply', promptId, response }, entry.branch);
    entry.resolve(response);
    return { accepted: true, response };
  }

  private rejectReply(entry: PromptEntry, content: string, message: string): ReplyOutcome {
    this.emit({ type: 'user:reply-rejected', promptId: entry.info.promptId, content, message }, entry.branch);
    return { accepted: false, message };
  }

  /** Ends a waiting prompt as timed out (the clock, or a replayed recording). False when it is not waiting. */
  timeoutPrompt(promptId: string): boolean {
    const entry = this.prompts.get(promptId);
    if (!entry || entry.state !== 'pending') return false;
    this.notify({ action: 'timeout', promptId });
    entry.state = 'timed_out';
    if (entry.timer) clearTimeout(entry.timer);
    const fallback = entry.options.defaultChoice;
    this.emit({ type: 'user:timeout', promptId, ...(fallback !== undefined ? { defaultChoice: fallback } : {}) }, entry.branch);
    if (fallback !== undefined) {
      entry.resolve({ content: fallback, ...(entry.options.choices ? { choice: fallback } : {}), timestamp: new Date(), timedOut: true });
    } else {
      entry.reject(new TimeoutError(promptId, entry.info.prompt, entry.options.timeout ?? 0));
    }
    return true;
  }

  private cancelPrompts(error: unknown): void {
    for (const entry of this.prompts.values()) {
      if (entry.state !== 'pending') continue;
      entry.state = 'cancelled';
      if (entry.timer) clearTimeout(entry.timer);
      entry.reject(error);
    }
  }

  // ---- messages ---------------------------------------------------------------------------------

  /** `send` (no agent) and `sendTo` (an agent's key or name). */
  send(content: string, agentName?: string): void {
    if (typeof content !== 'string' || content.trim() === '') {
      throw new HarnessError('INVALID_INPUT', 'A message must be non-empty text.', { fault: 'user' });
    }
    if (this.finished) throw new HarnessError('SESSION_ENDED', `The "${this.name}" session has ended; messages can no longer reach it.`, { fault: 'user' });
    const target = agentName === undefined ? undefined : this.findAgent(agentName);
    this.notify(target ? { action: 'send_to', agent: target.key, content } : { action: 'send', content });
    const message: InjectedMessage = { content, timestamp: new Date(), ...(target ? { targetAgent: target.key } : {}) };
    const agent = target ?? this.running[this.running.length - 1];
    if (!agent) {
      this.waiting.push({ message });
      this.emit({ type: 'message:injected', content, delivery: 'queue' }, undefined);
      return;
    }
    const live = agent.deliverLive(message);
    if (!live) this.waiting.push({ message, agent: agent.key });
    this.emit({ type: 'message:injected', content, ...(target ? { targetAgent: target.key } : {}), agent: agent.key, delivery: live ? 'live' : 'inbox' }, undefined);
  }

  /** A live delivery that failed (the turn ended first): the message waits for the agent's next turn. */
  requeue(agent: AgentRuntime, message: InjectedMessage): void {
    if (this.finished) return;
    this.waiting.push({ message, agent: agent.key });
    this.emit({ type: 'message:injected', content: message.content, ...(message.targetAgent ? { targetAgent: message.targetAgent } : {}), agent: agent.key, delivery: 'inbox' }, undefined);
  }

  /** The messages waiting for this agent's turn (its own and untargeted ones), in arrival order. */
  takeMessagesFor(agentKey: string): InjectedMessage[] {
    const taken: InjectedMessage[] = [];
    const rest: WaitingMessage[] = [];
    for (const entry of this.waiting) {
      if (entry.agent === undefined || entry.agent === agentKey) taken.push(entry.message);
      else rest.push(entry);
    }
    this.waiting = rest;
    return taken;
  }

  findAgent(name: string): AgentRuntime {
    const byKey = this.agents.get(name);
    if (byKey) return byKey;
    const byName = [...this.agents.values()].filter((agent) => agent.definition.name === name);
    if (byName.length === 1) return byName[0]!;
    throw new HarnessError('UNKNOWN_AGENT', `The "${this.name}" workflow has no agent "${name}". Its agents: ${[...this.agents.keys()].join(', ') || 'none'}.`, {
      fault: 'user',
      data: { agent: name },
    });
  }

  markRunning(agent: AgentRuntime): void {
    if (!this.running.includes(agent)) this.running.push(agent);
  }

  markStopped(agent: AgentRuntime): void {
    const index = this.running.indexOf(agent);
    if (index >= 0) this.running.splice(index, 1);
  }
}

/**
 * An agent inside a run: its session, its turns (one at a time) and the messages that reach the
 * turn running now.
 */
export class AgentRuntime {
  readonly handle: HarnessAgent<unknown>;
  private chain: Promise<unknown> = Promise.resolve();
  private sessionPromise: Promise<string> | undefined;
  private current: { handle: TurnHandle; sessionId: string } | undefined;
  private starting = false;
  /** Messages sent while the turn was starting, injected as soon as it runs. */
  private startBuffer: InjectedMessage[] = [];
  private turns = 0;
  private readonly jsonSchema: Record<string, unknown> | undefined;

  constructor(
    private readonly runtime: HarnessRuntime,
    readonly key: string,
    readonly definition: AgentDefinition<unknown>,
    readonly backend: AgentBackend,
  ) {
    this.jsonSchema = definition.outputSchema ? toJsonSchema(definition.outputSchema) : undefined;
    const self = this;
    this.handle = {
      key,
      name: definition.name,
      get running() {
        return self.running;
      },
      run: (prompt, options) => this.run(prompt, options),
      sessionId: () => this.sessionId(),
      useSession: (target) => this.useSession(target),
    };
  }

  get running(): boolean {
    return this.starting || this.current !== undefined;
  }

  run(prompt: string, options: AgentRunOptions = {}): Promise<unknown> {
    if (typeof prompt !== 'string') {
      return Promise.reject(new HarnessError('INVALID_INPUT', `Agent "${this.key}": run(prompt) needs text, not ${typeof prompt}.`, { fault: 'user' }));
    }
    const work = this.chain.then(() => this.runValidated(prompt, options));
    this.chain = work.then(noop, noop);
    // The caller awaits this; a turn cut by an abort must not become an unhandled rejection if it did not.
    work.catch(noop);
    return work;
  }

  sessionId(): Promise<string> {
    if (!this.sessionPromise) {
      const created = this.createSession();
      this.sessionPromise = created;
      created.catch(() => {
        if (this.sessionPromise === created) this.sessionPromise = undefined;
      });
    }
    return this.sessionPromise;
  }

  async useSession(target: AgentSessionTarget): Promise<string> {
    if (this.running) {
      throw new HarnessError('INVALID_INPUT', `Agent "${this.key}" is running a turn; switch its session between turns.`, { fault: 'user' });
    }
    const manager = await this.runtime.sessionManager();
    const chosen = (async () => {
      if ('sessionId' in target) return (await manager.getSession(target.sessionId)).sessionId;
      const record = await manager.getOrCreateSession(target);
      await this.describe(manager, record.sessionId, record.agentType);
      return record.sessionId;
    })();
    this.sessionPromise = chosen;
    return chosen;
  }

  /** Delivers to the running turn; false when no turn runs or its back end cannot take a message mid-turn. */
  deliverLive(message: InjectedMessage): boolean {
    if (this.starting) {
      this.startBuffer.push(message);
      return true;
    }
    const current = this.current;
    if (!current?.handle.inject) return false;
    this.inject(current, message);
    return true;
  }

  private inject(current: { handle: TurnHandle; sessionId: string }, message: InjectedMessage): void {
    let delivered: Promise<void>;
    try {
      delivered = current.handle.inject!(message.content);
    } catch (error) {
      delivered = Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    delivered.then(
      async () => {
        // The back end got it; the session shows it where the user said it.
        const manager = await this.runtime.sessionManager();
        await manager.addMessage(current.sessionId, { role: 'user', content: message.content, metadata: { injected: true } }).catch(noop);
      },
      // The turn ended first (or the back end refused): the message waits for the next turn.
      () => this.runtime.requeue(this, message),
    ).catch((error: unknown) => process.emitWarning(`Delivering a message to agent "${this.key}" failed: ${String(error)}`));
  }

  private async createSession(): Promise<string> {
    const manager = await this.runtime.sessionManager();
    const agentType = this.definition.agentType ?? 'harness';
    const record = await manager.createSession({
      scope: { kind: 'workflow', harness: this.runtime.name, agent: this.key },
      agentType,
      backend: this.backend.describe().name,
      title: `${this.runtime.name}: ${this.definition.name}`,
      agentProfileReference: this.definition.name,
    });
    await this.describe(manager, record.sessionId, agentType);
    return record.sessionId;
  }

  /**
   * Stores the agent's role and instructions as its session's agent description (seed 002), which
   * managed request building puts under "# Your Role". A workflow agent's own text replaces the
   * generic description; an agent of a built-in type (dev, qa…) keeps that type's instructions and
   * adds its own.
   */
  private async describe(manager: SessionManager, sessionId: string, agentType: string): Promise<void> {
    const { name, role, instructions, tools } = this.definition;
    const own = agentType === 'harness';
    await manager.setAgentDescription(sessionId, {
      role: role ?? `You are ${name}.`,
      ...(own ? { instructions: instructions !== undefined ? [instructions] : [] } : instructions !== undefined ? { extraInstructions: [instructions] } : {}),
      ...(tools ? { allowedTools: tools.map((tool) => tool.name) } : own ? { allowedTools: [] } : {}),
    });
  }

  private async runValidated(prompt: string, options: AgentRunOptions): Promise<unknown> {
    const schema = this.definition.outputSchema;
    const first = await this.turn(prompt, false, options);
    if (!schema) return first;
    const parsed = parseOutput(first, schema);
    if (parsed.ok) return parsed.value;
    const second = await this.turn(repairPrompt(parsed.issues, this.jsonSchema), true, options);
    const repaired = parseOutput(second, schema);
    if (repaired.ok) return repaired.value;
    throw new OutputValidationError(this.key, [first, second], repaired.issues);
  }

  private profile(): AgentProfile {
    const { name, role, instructions, model } = this.definition;
    return {
      name,
      instructions: [role, instructions].filter((part): part is string => part !== undefined).join('\n\n'),
      ...(role !== undefined ? { description: role } : {}),
      ...(model !== undefined ? { model } : {}),
    };
  }

  private async turn(prompt: string, repair: boolean, options: AgentRunOptions): Promise<string> {
    const runtime = this.runtime;
    await runtime.checkpoint();
    const manager = await runtime.sessionManager();
    const sessionId = await this.sessionId();
    await runtime.checkpoint();
    const messages = repair ? [] : runtime.takeMessagesFor(this.key);
    const fullPrompt = composePrompt(messages, prompt);
    const turn = ++this.turns;
    const signal = options.signal ? AbortSignal.any([runtime.signal, options.signal]) : runtime.signal;
    const definition = this.definition;
    this.starting = true;
    runtime.markRunning(this);
    runtime.emit({
      type: 'agent:start',
      agent: this.key,
      sessionId,
      turn,
      prompt: fullPrompt,
      ...(messages.length > 0 ? { messages: messages.map((message) => message.content) } : {}),
      ...(repair ? { repair: true } : {}),
    });
    const complete = (output: string, stopReason: 'complete' | 'error' | 'aborted'): void => {
      runtime.emit({ type: 'agent:complete', agent: this.key, sessionId, turn, output, stopReason });
    };

    let handle: TurnHandle;
    try {
      handle = await runTurn(manager, sessionId, {
        backend: this.backend,
        prompt: fullPrompt,
        signal,
        profile: this.profile(),
        ...(definition.model !== undefined ? { model: definition.model } : {}),
        ...(definition.tools ? { tools: definition.tools } : {}),
        ...(definition.cwd !== undefined ? { cwd: definition.cwd } : {}),
        ...(definition.maxTurns !== undefined ? { maxTurns: definition.maxTurns } : {}),
        ...(this.jsonSchema ? { outputSchema: this.jsonSchema } : {}),
      });
    } catch (error) {
      this.starting = false;
      runtime.markStopped(this);
      this.releaseStartBuffer(undefined);
      complete('', signal.aborted ? 'aborted' : 'error');
      throw signal.aborted ? runtime.abortError(signal) : error;
    }
    const current = { handle, sessionId };
    this.current = current;
    this.starting = false;
    this.releaseStartBuffer(current);

    const texts: string[] = [];
    // Only a recording needs the turn's raw output again.
    const recording = runtime.observers.some((observer) => observer.turn !== undefined);
    const drafts: StreamEventDraft[] = [];
    const positions: number[] = [];
    let failure: SystemBlock | undefined;
    let abortedBlock = false;
    let endedNormally = false;
    let streamError: { error: unknown } | undefined;
    try {
      for await (const event of handle.events) {
        const index = runtime.emit({ type: 'agent:event', agent: this.key, sessionId, turn, event });
        if (recording) {
          positions.push(index);
          drafts.push(toDraft(event));
        }
        if (event.conversationId !== MAIN_CONVERSATION) continue;
        if (event.type === 'block_complete') {
          const block = event.block;
          if (block.type === 'assistant_text') texts.push(block.content);
          else if (block.type === 'system' && block.subtype === 'error') failure ??= block;
          else if (block.type === 'system' && block.subtype === 'aborted') abortedBlock = true;
        } else if (event.type === 'metadata_update' && event.metadata.turnComplete) {
          endedNormally = event.metadata.stopReason !== 'aborted';
        }
      }
    } catch (error) {
      streamError = { error };
    } finally {
      this.current = undefined;
      runtime.markStopped(this);
    }
    if (recording) runtime.recordTurn({ agent: this.key, turn, prompt: fullPrompt, events: drafts, positions });
    const output = texts.join('\n\n');

    if (abortedBlock || (signal.aborted && !endedNormally && !failure)) {
      if (!abortedBlock) await this.noteAbort(manager, sessionId, turn);
      complete(output, 'aborted');
      throw runtime.abortError(signal);
    }
    if (streamError) {
      complete(output, 'error');
      throw streamError.error;
    }
    if (failure) {
      complete(output, 'error');
      const data = typeof failure.data === 'object' && failure.data !== null ? (failure.data as Record<string, unknown>) : {};
      throw new AgentTurnError(this.key, failure.content, data);
    }
    complete(output, 'complete');
    return output;
  }

  private releaseStartBuffer(current: { handle: TurnHandle; sessionId: string } | undefined): void {
    const buffered = this.startBuffer;
    this.startBuffer = [];
    for (const message of buffered) {
      if (current?.handle.inject) this.inject(current, message);
      else this.runtime.requeue(this, message);
    }
  }

  /** A back end that stopped without saying so still gets its `system` block: the session shows the turn was aborted. */
  private async noteAbort(manager: SessionManager, sessionId: string, turn: number): Promise<void> {
    const now = Date.now();
    const reason = this.runtime.abortReason;
    try {
      const stored = await manager.appendEvents(sessionId, [
        {
          type: 'block_complete',
          conversationId: MAIN_CONVERSATION,
          block: {
            id: `${this.key}-turn-${turn}-aborted`,
            type: 'system',
            subtype: 'aborted',
            content: reason ? `The turn was aborted: ${reason}` : 'The turn was aborted.',
            createdAt: now,
            completedAt: now,
          },
          at: now,
        },
      ]);
      for (const event of stored) this.runtime.emit({ type: 'agent:event', agent: this.key, sessionId, turn, event });
    } catch {
      // The manager may be closed while shutting down; the abort itself is already reported.
    }
  }
}

function toDraft(event: StreamEvent): StreamEventDraft {
  const { sessionId: _sessionId, seq: _seq, ...draft } = event;
  return draft as StreamEventDraft;
}

/** Messages that waited for this turn come first, marked as the user's, then the prompt. */
export function composePrompt(messages: readonly InjectedMessage[], prompt: string): string {
  if (messages.length === 0) return prompt;
  const lines = messages.map((message) => `- ${message.content}`);
  return `Messages from the user while you were working:\n${lines.join('\n')}\n\n${prompt}`;
}

function repairPrompt(issues: string, jsonSchema: Record<string, unknown> | undefined): string {
  return [
    `Your previous answer did not match the required output format: ${issues}.`,
    'Reply again with only a JSON value that matches this JSON Schema, and nothing else:',
    JSON.stringify(jsonSchema ?? {}, null, 2),
  ].join('\n');
}

function backoffDelay(backoff: RetryOptions['backoff'], attempt: number): number {
  const value = typeof backoff === 'function' ? backoff(attempt) : typeof backoff === 'number' ? backoff : Math.min(500 * 2 ** (attempt - 1), 30_000);
  return Number.isFinite(value) && value > 0 ? value : 0;
}

/** A choice by exact text, case-insensitive text, or 1-based number. */
function pickChoice(choices: readonly string[], given: string): string | undefined {
  const trimmed = given.trim();
  const exact = choices.find((choice) => choice === trimmed);
  if (exact !== undefined) return exact;
  const folded = choices.find((choice) => choice.toLowerCase() === trimmed.toLowerCase());
  if (folded !== undefined) return folded;
  if (/^\d+$/.test(trimmed)) return choices[Number(trimmed) - 1];
  return undefined;
}

function checkWaitOptions(prompt: string, options: WaitOptions): void {
  const fail = (detail: string): never => {
    throw new HarnessError('INVALID_INPUT', `waitForUser: ${detail}`, { fault: 'user' });
  };
  if (typeof prompt !== 'string' || prompt.trim() === '') fail('the prompt must be non-empty text.');
  if (options.timeout !== undefined && !(Number.isFinite(options.timeout) && options.timeout > 0)) {
    fail(`timeout must be a positive number of milliseconds, not ${String(options.timeout)}.`);
  }
  if (options.choices !== undefined) {
    if (!Array.isArray(options.choices) || options.choices.length === 0 || options.choices.some((choice) => typeof choice !== 'string' || choice.trim() === '')) {
      fail('choices must be a non-empty list of non-empty strings.');
    }
    if (new Set(options.choices).size !== options.choices.length) fail(`choices must be distinct (${options.choices.join(', ')}).`);
  }
  if (options.defaultChoice !== undefined && options.choices !== undefined && !options.choices.includes(options.defaultChoice)) {
    fail(`defaultChoice "${options.defaultChoice}" is not one of the choices (${options.choices.join(', ')}).`);
  }
}

function reasonOf(reason: unknown): string | undefined {
  if (reason === undefined) return undefined;
  if (reason instanceof AbortedError) return reason.reason;
  if (reason instanceof Error) return reason.message;
  return String(reason);
}
