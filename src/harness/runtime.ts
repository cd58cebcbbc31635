import type { Context } from '@opentelemetry/api';
import { ATTR, OPERATION, PARLEY_ATTR } from '../telemetry/index.js';
import { performance } from 'node:perf_hooks';
import { createSessionManager, type SessionManager } from '../sessions/index.js';
import { createMemoryStore } from '../store/index.js';
import { AgentRuntime } from './agent-runtime.js';
import { currentBranch } from './branches.js';
import { systemClock, type HarnessClock } from './clock.js';
import { AbortedError, describeError, HarnessError } from './errors.js';
import { EventLog } from './event-log.js';
import type { InjectedMessage, SessionEvent, UnstampedSessionEvent, UserReply } from './events.js';
import { MessageInbox, type MessageRecipient } from './message-inbox.js';
import type { UnstampedRecordedInput, RecordedTurn } from './recording.js';
import { describeStep, type RunJournal } from './run-journal.js';
import type {
  AgentMap,
  ExecuteContext,
  HarnessAgent,
  HarnessCreateOptions,
  HarnessDefinition,
  InteractiveSessionStatus,
  PendingPrompt,
  ReplyOutcome,
  SessionContext,
} from './types.js';
import { RunTrace } from './run-trace.js';
import { UserPrompts } from './user-prompts.js';
import { runParallel, runRetry, runStep } from './workflow-steps.js';

/** Watches a run from outside: the recorder writes what it sees, and replay feeds it. */
export interface RuntimeObserver {
  /** The run begins (before its first event). */
  start?(): void;
  /** An outside action (reply, send, abort…) at `at`: the number of events dispatched before it took effect. */
  input?(at: number, input: UnstampedRecordedInput): void;
  /** An agent turn's back-end output, once the turn ended. */
  turn?(turn: Omit<RecordedTurn, 'kind'>): void;
}

export type Outcome =
  { kind: 'complete'; result: unknown } | { kind: 'aborted'; result: unknown } | { kind: 'failed'; error: unknown };

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
  /** Where the run reads the time and sets prompt timers. */
  clock: HarnessClock = systemClock;
  /** A durable run's journal (run-journal.ts): non-deterministic results go through it. */
  journal: RunJournal | undefined;
  interactive = false;
  started = false;
  finished = false;
  aborted = false;
  abortReason: string | undefined;
  duration = 0;
  outcome: Promise<Outcome> | undefined;
  private paused = false;
  private readonly pauseWaiters = new Set<() => void>();
  /** The run's spans, handed on as parents (run-trace.ts). */
  private readonly trace = new RunTrace();
  private readonly prompts = new UserPrompts(this);
  private readonly inbox = new MessageInbox(this);
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

  private replayedDepth = 0;

  /** Runs `emit`s of a step fed from the journal: its events are replayed, whenever the replay ends. */
  replayedEmit<T>(work: () => T): T {
    this.replayedDepth += 1;
    try {
      return work();
    } finally {
      this.replayedDepth -= 1;
    }
  }

  /** The event being emitted now belongs to the replay (a step fed from the journal, or the replay itself). */
  get emittingReplayed(): boolean {
    return this.replayedDepth > 0 || this.replaying;
  }

  /** A durable run re-executing from its journal: steps are fed journaled results, pauses wait until it is live. */
  get replaying(): boolean {
    return this.journal?.replaying ?? false;
  }

  /**
   * Makes this a durable run: its non-deterministic steps are journaled and, while the journal
   * holds entries, fed from it. `replayEnded` is called once the run is live.
   */
  attachJournal(journal: RunJournal, replayEnded: () => void): void {
    this.journal = journal;
    journal.attach({
      deliverSend: (step) => this.inbox.send(step.content, step.agent, new Date(step.timestamp)),
      diverged: (error) => this.abort(`its journal no longer matches the workflow: ${error.message}`),
      failed: (error) =>
        this.abort(`its journal could not be written: ${error instanceof Error ? error.message : String(error)}`),
      replayEnded,
    });
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
  emit(unstamped: UnstampedSessionEvent, ...given: [branch: string | undefined] | []): number {
    const branch = given.length > 0 ? given[0] : currentBranch();
    const event = {
      ...unstamped,
      timestamp: unstamped.timestamp ?? new Date(),
      ...(branch !== undefined ? { branch } : {}),
    } as SessionEvent;
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
      throw new HarnessError(
        'ALREADY_STARTED',
        `This "${this.name}" instance has already run; call create() again for another run.`,
        { fault: 'user' },
      );
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
      // The run's `invoke_workflow` span: its phases, waits and agent turns nest under it.
      const result = await this.trace.span(
        `${OPERATION.invokeWorkflow} ${this.name}`,
        { [ATTR.operationName]: OPERATION.invokeWorkflow, [ATTR.workflowName]: this.name },
        () => this.definition.run(this.context(manager)),
      );
      this.checkJournalUsed();
      outcome = this.aborted ? { kind: 'aborted', result } : { kind: 'complete', result };
    } catch (error) {
      outcome = this.aborted ? { kind: 'aborted', result: undefined } : { kind: 'failed', error };
    }
    // A durable run that diverged or could not journal failed, whatever the workflow made of it.
    const journalError = this.journal?.divergence ?? this.journal?.failure;
    if (journalError !== undefined && !this.journal?.stopped) outcome = { kind: 'failed', error: journalError };
    this.finish(outcome);
    return outcome;
  }

  /** A workflow that ends while its journal still holds steps is not the code that wrote the journal. */
  private checkJournalUsed(): void {
    const journal = this.journal;
    if (!journal?.replaying) return;
    const next = journal.firstUnused()!;
    journal.diverge(
      next.seq,
      describeStep(next.step),
      `the workflow ended, but its journal goes on with ${describeStep(next.step)}. The workflow's code has changed since this run started.`,
      next.step,
      undefined,
    );
  }

  private finish(outcome: Outcome): void {
    this.duration = performance.now() - this.startedAt;
    this.finished = true;
    this.removeExternalListener();
    this.prompts.cancelAll(
      new HarnessError('SESSION_ENDED', 'The workflow ended before this prompt was answered.', { fault: 'user' }),
    );
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
    if (!this.controller.signal.aborted)
      this.controller.abort(new HarnessError('SESSION_ENDED', 'The workflow ended.', { fault: 'user' }));
  }

  abort(reason?: string): void {
    if (this.finished || this.aborted) return;
    this.notify({ action: 'abort', ...(reason !== undefined ? { reason } : {}) });
    this.aborted = true;
    this.abortReason = reason;
    this.emit({ type: 'session:abort', ...(reason !== undefined ? { reason } : {}) }, undefined);
    const error = new AbortedError(reason);
    this.journal?.release(error);
    this.prompts.cancelAll(error);
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
    while (this.paused && !this.aborted && !this.finished && !this.replaying) {
      await new Promise<void>((resolve) => this.pauseWaiters.add(resolve));
    }
    this.throwIfStopped();
  }

  throwIfStopped(): void {
    if (this.aborted) throw new AbortedError(this.abortReason);
    if (this.finished)
      throw new HarnessError('SESSION_ENDED', `The "${this.name}" workflow has ended; nothing more can run in it.`, {
        fault: 'user',
      });
  }

  abortError(signal: AbortSignal): AbortedError {
    if (this.aborted) return new AbortedError(this.abortReason);
    return signal.reason instanceof AbortedError ? signal.reason : new AbortedError(reasonOf(signal.reason));
  }

  private wakePaused(): void {
    for (const waiter of [...this.pauseWaiters]) waiter();
    this.pauseWaiters.clear();
  }

  notify(input: UnstampedRecordedInput): void {
    for (const observer of this.observers) observer.input?.(this.log.dispatched, input);
  }

  recordsTurns(): boolean {
    return this.observers.some((observer) => observer.turn !== undefined);
  }

  traceParent(): Context | undefined {
    return this.trace.parent();
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
      phase: (name, fn) =>
        this.trace.span(`phase ${name}`, { [PARLEY_ATTR.phaseName]: name }, () => runStep(this, 'phase', name, fn)),
      task: (id, fn) => runStep(this, 'task', id, fn),
      emit: (name, data = {}) => {
        if (typeof name !== 'string' || name === '')
          throw new HarnessError('INVALID_INPUT', 'emit(name, data) needs a non-empty event name.', { fault: 'user' });
        this.emit({ type: 'custom', name, data });
      },
      retry: (name, fn, options) => runRetry(this, name, fn, options),
      now: () => this.journaledValue('now', () => this.clock.now()),
      random: () => this.journaledValue('random', Math.random),
      parallel: (name, fns, options) => runParallel(this, name, fns, options),
      ...(this.interactive ? { session: this.sessionContext() } : {}),
    };
  }

  private sessionContext(): SessionContext {
    return {
      waitForUser: (prompt, options) => {
        const waiting = this.trace.span('wait_for_user', {}, () => this.prompts.waitForUser(prompt, options));
        // As the prompt's own promise: a workflow that does not await a prompt must not crash the process when it is cancelled.
        waiting.catch(() => undefined);
        return waiting;
      },
      hasMessages: () => this.hasMessages(),
      readMessages: () => this.readMessages(),
      isAborted: () => this.aborted,
    };
  }

  /**
   * A value the workflow must get again on resume: the journaled one while replaying, else a fresh
   * one, journaled. The call returns at once; the append is durable before any later step's
   * (appends are numbered in call order), so nothing outside the process can see it first.
   */
  private journaledValue(kind: 'now' | 'random', produce: () => number): number {
    const journal = this.journal;
    if (!journal) return produce();
    const index = journal.next(kind);
    const journaled = journal.take(kind, `${kind}#${index}`);
    if (journaled) return journaled.value;
    const value = produce();
    journal.record({ kind, index, value }).catch(noop);
    return value;
  }

  private hasMessages(): boolean {
    const journal = this.journal;
    if (!journal) return this.inbox.hasMessages();
    const index = journal.next('has-messages');
    const journaled = journal.take('has-messages', `has-messages#${index}`);
    if (journaled) return journaled.value;
    const value = this.inbox.hasMessages();
    journal.record({ kind: 'has-messages', index, value }).catch(noop);
    return value;
  }

  private readMessages(): InjectedMessage[] {
    const journal = this.journal;
    if (!journal) return this.inbox.takeAll();
    const index = journal.next('read-messages');
    const journaled = journal.take('read-messages', `read-messages#${index}`);
    if (journaled) {
      this.inbox.takeMatching(journaled.messages.map((message) => message.content));
      return journaled.messages.map((message) => ({ ...message, timestamp: new Date(message.timestamp) }));
    }
    const messages = this.inbox.takeAll();
    journal
      .record({
        kind: 'read-messages',
        index,
        messages: messages.map((message) => ({ ...message, timestamp: message.timestamp.getTime() })),
      })
      .catch(noop);
    return messages;
  }

  // ---- prompts and messages (the user's side of an interactive run) ----------------------------------

  pendingPrompts(): PendingPrompt[] {
    return this.prompts.pending();
  }

  reply(promptId: string, reply: UserReply): ReplyOutcome {
    return this.prompts.reply(promptId, reply);
  }

  /** Ends a waiting prompt as timed out (the clock, or a replayed recording). False when it is not waiting. */
  timeoutPrompt(promptId: string): boolean {
    return this.prompts.timeout(promptId);
  }

  /** `send` (no agent) and `sendTo` (an agent's key or name). */
  send(content: string, agentName?: string): void {
    this.inbox.send(content, agentName);
  }

  /** Checks a message as `send` would, changing nothing; returns the target agent's key. */
  checkSend(content: string, agentName?: string): string | undefined {
    return this.inbox.check(content, agentName);
  }

  /** Removes these messages from the inbox (a replayed turn took them). */
  takeMatching(contents: readonly string[]): void {
    this.inbox.takeMatching(contents);
  }

  requeue(agent: MessageRecipient, message: InjectedMessage): void {
    this.inbox.requeue(agent, message);
  }

  takeMessagesFor(agentKey: string): InjectedMessage[] {
    return this.inbox.takeFor(agentKey);
  }

  markRunning(agent: MessageRecipient): void {
    this.inbox.markRunning(agent);
  }

  markStopped(agent: MessageRecipient): void {
    this.inbox.markStopped(agent);
  }

  findAgent(name: string): AgentRuntime {
    const byKey = this.agents.get(name);
    if (byKey) return byKey;
    const byName = [...this.agents.values()].filter((agent) => agent.definition.name === name);
    if (byName.length === 1) return byName[0]!;
    throw new HarnessError(
      'UNKNOWN_AGENT',
      `The "${this.name}" workflow has no agent "${name}". Its agents: ${[...this.agents.keys()].join(', ') || 'none'}.`,
      {
        fault: 'user',
        data: { agent: name },
      },
    );
  }
}

function reasonOf(reason: unknown): string | undefined {
  if (reason === undefined) return undefined;
  if (reason instanceof AbortedError) return reason.reason;
  if (reason instanceof Error) return reason.message;
  return String(reason);
}
