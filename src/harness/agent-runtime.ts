import type { Context } from '@opentelemetry/api';
import type { UnsequencedEvent } from '../conversation/index.js';
import type { AgentBackend, AgentProfile, ToolDefinition } from '../backends/index.js';
import { ApprovalBroker, nativeApprover, ProjectWorkspace, WORKSPACE_PERMISSIONS } from '../workspace/index.js';
import { runTurn, type SessionManager, type TurnHandle } from '../sessions/index.js';
import { composePrompt, noteAbortedTurn, repairPrompt, toUnsequenced, TurnOutput } from './agent-turn.js';
import { AgentTurnError, HarnessError, OutputValidationError, truncate, type AbortedError } from './errors.js';
import type { InjectedMessage, UnstampedSessionEvent } from './events.js';
import { parseOutput, toJsonSchema } from './json-output.js';
import type { MessageRecipient } from './message-inbox.js';
import type { RecordedTurn } from './recording.js';
import type { ErrorSnapshot, JournalStep, RunJournal } from './run-journal.js';
import type { AgentDefinition, AgentRunOptions, AgentSessionTarget, HarnessAgent } from './types.js';

/** What an agent needs from the run it belongs to. */
export interface AgentHost {
  readonly name: string;
  readonly signal: AbortSignal;
  readonly abortReason: string | undefined;
  sessionManager(): Promise<SessionManager>;
  /** Throws once the run is aborted, waits while it is paused. */
  checkpoint(): Promise<void>;
  emit(unstamped: UnstampedSessionEvent): number;
  abortError(signal: AbortSignal): AbortedError;
  /** The user's messages waiting for this agent's next turn (taken: they are delivered once). */
  takeMessagesFor(agentKey: string): InjectedMessage[];
  /** A live delivery that failed: the message waits for the agent's next turn. */
  requeue(agent: MessageRecipient, message: InjectedMessage): void;
  markRunning(agent: MessageRecipient): void;
  markStopped(agent: MessageRecipient): void;
  /** A durable run's journal: turns and sessions are journaled, and fed from it on resume. */
  readonly journal: RunJournal | undefined;
  /** Removes these messages from the inbox (a replayed turn took them). */
  takeMatching(contents: readonly string[]): void;
  /** Runs the `emit`s of a step fed from the journal, so they count as replayed. */
  replayedEmit<T>(work: () => T): T;
  /** True when some observer keeps turns' raw output (a recording). */
  recordsTurns(): boolean;
  recordTurn(turn: Omit<RecordedTurn, 'kind'>): void;
  /** The OpenTelemetry context an agent turn starting now goes under (the open phase, else the run). */
  traceParent(): Context | undefined;
}

interface CurrentTurn {
  handle: TurnHandle;
  sessionId: string;
}

const noop = (): void => {};

/**
 * An agent inside a run: its session, its turns (one at a time) and the messages that reach the
 * turn running now.
 */
export class AgentRuntime implements MessageRecipient {
  readonly handle: HarnessAgent<unknown>;
  private chain: Promise<unknown> = Promise.resolve();
  private sessionPromise: Promise<string> | undefined;
  private current: CurrentTurn | undefined;
  private starting = false;
  /** Messages sent while the turn was starting, injected as soon as it runs. */
  private startBuffer: InjectedMessage[] = [];
  private turns = 0;
  private sessionsCreated = 0;
  /** Messages the running turn took live, for its journal entry. */
  private injectedLive: string[] = [];
  private readonly jsonSchema: Record<string, unknown> | undefined;
  private workspace: Promise<ProjectWorkspace> | undefined;
  /** One per agent, so an "allow always" answer holds for its later turns. */
  private broker: ApprovalBroker | undefined;

  constructor(
    private readonly runtime: AgentHost,
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
      return Promise.reject(
        new HarnessError('INVALID_INPUT', `Agent "${this.key}": run(prompt) needs text, not ${typeof prompt}.`, {
          fault: 'user',
        }),
      );
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
      throw new HarnessError(
        'INVALID_INPUT',
        `Agent "${this.key}" is running a turn; switch its session between turns.`,
        { fault: 'user' },
      );
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

  private inject(current: CurrentTurn, message: InjectedMessage): void {
    let delivered: Promise<void>;
    try {
      delivered = current.handle.inject!(message.content);
    } catch (error) {
      delivered = Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    delivered
      .then(
        async () => {
          if (this.current === current) this.injectedLive.push(message.content);
          // The back end got it; the session shows it where the user said it.
          const manager = await this.runtime.sessionManager();
          await manager
            .addMessage(current.sessionId, { role: 'user', content: message.content, metadata: { injected: true } })
            .catch(noop);
        },
        // The turn ended first (or the back end refused): the message waits for the next turn.
        () => this.runtime.requeue(this, message),
      )
      .catch((error: unknown) =>
        process.emitWarning(`Delivering a message to agent "${this.key}" failed: ${String(error)}`),
      );
  }

  private async createSession(): Promise<string> {
    const journal = this.runtime.journal;
    const index = ++this.sessionsCreated;
    if (journal) {
      const journaled = journal.take('session', `session:${this.key}#${index}`);
      if (journaled) return journaled.sessionId;
      await journal.whenLive(`the session of agent "${this.key}"`);
    }
    const sessionId = await this.createStoredSession();
    await journal?.record({ kind: 'session', agent: this.key, index, sessionId });
    return sessionId;
  }

  private async createStoredSession(): Promise<string> {
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
   * Stores the agent's role and instructions as its session's agent description, which
   * managed request building puts under "# Your Role". A workflow agent's own text replaces the
   * generic description; an agent of a built-in type (dev, qa…) keeps that type's instructions and
   * adds its own.
   */
  private async describe(manager: SessionManager, sessionId: string, agentType: string): Promise<void> {
    const { name, role, instructions, tools } = this.definition;
    const own = agentType === 'harness';
    await manager.setAgentDescription(sessionId, {
      role: role ?? `You are ${name}.`,
      ...(own
        ? { instructions: instructions !== undefined ? [instructions] : [] }
        : instructions !== undefined
          ? { extraInstructions: [instructions] }
          : {}),
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

  /** The agent's own tools, and its workspace tools (opened once) answering to the workflow's callback. */
  private async tools(sessionId: string): Promise<ToolDefinition[]> {
    const own = this.definition.tools ?? [];
    const options = this.definition.workspace;
    if (!options) return [...own];
    this.workspace ??= ProjectWorkspace.open({
      root: options.root,
      ...(options.dataDir !== undefined ? { dataDir: options.dataDir } : {}),
      ...(options.sandbox ? { sandbox: options.sandbox } : {}),
    });
    const workspace = await this.workspace;
    this.broker ??= new ApprovalBroker(options.onPermissionRequest ? { approver: options.onPermissionRequest } : {});
    return [
      ...own,
      ...workspace.tools({
        sessionId,
        permissions: options.permissions ?? WORKSPACE_PERMISSIONS,
        mode: options.mode ?? 'default',
        broker: this.broker,
        ...(options.network !== undefined ? { network: options.network } : {}),
      }),
    ];
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

  /** One turn: its waiting messages go in with the prompt; resolves with the turn's text, or throws how it ended. */
  private async turn(prompt: string, repair: boolean, options: AgentRunOptions): Promise<string> {
    const runtime = this.runtime;
    await runtime.checkpoint();
    const manager = await runtime.sessionManager();
    const sessionId = await this.sessionId();
    await runtime.checkpoint();
    const turn = ++this.turns;
    const { messages, replayed, start } = await this.startTurn(turn, prompt, repair);
    const fullPrompt = composePrompt(messages, prompt);
    const signal = options.signal ? AbortSignal.any([runtime.signal, options.signal]) : runtime.signal;
    const definition = this.definition;
    this.starting = true;
    runtime.markRunning(this);
    const announce = (): number =>
      runtime.emit({
        type: 'agent:start',
        agent: this.key,
        sessionId,
        turn,
        prompt: fullPrompt,
        ...(messages.length > 0 ? { messages: messages.map((message) => message.content) } : {}),
        ...(repair ? { repair: true } : {}),
      });
    if (replayed) runtime.replayedEmit(announce);
    else announce();
    const complete = (output: string, stopReason: 'complete' | 'error' | 'aborted'): void => {
      runtime.emit({ type: 'agent:complete', agent: this.key, sessionId, turn, output, stopReason });
    };
    if (replayed) {
      // Resumed from the journal: the turn ran before the restart; its blocks are in the session already.
      this.starting = false;
      runtime.markStopped(this);
      this.releaseStartBuffer(undefined);
      runtime.takeMatching(replayed.injected ?? []);
      runtime.replayedEmit(() => complete(replayed.output, replayed.ok ? 'complete' : 'error'));
      if (!replayed.ok) throw rebuildError(this.key, replayed.error);
      return replayed.output;
    }

    let handle: TurnHandle;
    try {
      handle = await runTurn(manager, sessionId, {
        backend: this.backend,
        prompt: fullPrompt,
        signal,
        profile: this.profile(),
        ...(definition.model !== undefined ? { model: definition.model } : {}),
        ...(definition.tools || definition.workspace ? { tools: await this.tools(sessionId) } : {}),
        // A native back end that can wait (Codex) asks the workflow's callback, as the workspace tools do.
        ...(definition.workspace && this.broker
          ? { askApproval: nativeApprover(this.broker, { sessionId, root: definition.workspace.root }) }
          : {}),
        ...(definition.cwd !== undefined
          ? { cwd: definition.cwd }
          : definition.workspace
            ? { cwd: definition.workspace.root }
            : {}),
        ...(definition.maxTurns !== undefined ? { maxTurns: definition.maxTurns } : {}),
        ...(this.jsonSchema ? { outputSchema: this.jsonSchema } : {}),
        traceParent: runtime.traceParent(),
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
    this.injectedLive = [];
    this.starting = false;
    this.releaseStartBuffer(current);

    const result = new TurnOutput();
    // Only a recording needs the turn's raw output again.
    const recording = runtime.recordsTurns();
    const recorded: UnsequencedEvent[] = [];
    const positions: number[] = [];
    try {
      for await (const event of handle.events) {
        const index = runtime.emit({ type: 'agent:event', agent: this.key, sessionId, turn, event });
        if (recording) {
          positions.push(index);
          recorded.push(toUnsequenced(event));
        }
        result.observe(event);
      }
    } catch (error) {
      result.streamError = { error };
    } finally {
      this.current = undefined;
      runtime.markStopped(this);
    }
    if (recording) runtime.recordTurn({ agent: this.key, turn, prompt: fullPrompt, events: recorded, positions });
    const output = result.text;
    const verdict = result.verdict(signal);
    if (verdict === 'aborted') {
      if (!result.abortedBlock) {
        const stored = await noteAbortedTurn(manager, sessionId, this.key, turn, runtime.abortReason);
        for (const event of stored) runtime.emit({ type: 'agent:event', agent: this.key, sessionId, turn, event });
      }
      complete(output, 'aborted');
      throw runtime.abortError(signal);
    }
    const failure = verdict === 'error' ? result.error(this.key) : undefined;
    const journal = runtime.journal;
    if (journal) {
      const ended: JournalStep = {
        kind: 'turn',
        agent: this.key,
        turn,
        output,
        ok: verdict === 'complete',
        ...(failure !== undefined ? { error: snapshotError(failure) } : {}),
        ...(this.injectedLive.length > 0 ? { injected: [...this.injectedLive] } : {}),
      };
      await (start ? journal.recordTurnResult(start, ended) : journal.recordTurnResult(ended));
    }
    complete(output, verdict);
    if (failure !== undefined) throw failure;
    return output;
  }

  /**
   * The messages a turn takes with its prompt and, in a durable run, its journaled result: a
   * resumed run's turn takes the messages it took before and gets its output from the journal; a
   * new turn's prompt and messages are journaled before the back end is called.
   */
  private async startTurn(
    turn: number,
    prompt: string,
    repair: boolean,
  ): Promise<{
    messages: InjectedMessage[];
    replayed?: Extract<JournalStep, { kind: 'turn' }>;
    start?: Extract<JournalStep, { kind: 'turn-start' }>;
  }> {
    const runtime = this.runtime;
    const journal = runtime.journal;
    if (!journal) return { messages: repair ? [] : runtime.takeMessagesFor(this.key) };
    const key = `${this.key}#${turn}`;
    const stepName = `agent "${this.key}" turn ${turn}`;
    const started = journal.take('turn-start', `turn-start:${key}`);
    if (started) {
      if (started.prompt !== prompt) {
        throw journal.diverge(
          journal.seqOf(`turn-start:${key}`),
          stepName,
          `its journal has the prompt "${truncate(started.prompt, 80)}", but the workflow now sends "${truncate(prompt, 80)}". The workflow's code has changed since this run started.`,
          started.prompt,
          prompt,
        );
      }
      runtime.takeMatching(started.messages);
      const messages = started.messages.map((content) => ({ content, timestamp: new Date() }));
      const replayed = journal.take('turn', `turn:${key}`);
      return replayed ? { messages, replayed } : { messages };
    }
    await journal.whenLive(stepName);
    await runtime.checkpoint();
    const messages = repair ? [] : runtime.takeMessagesFor(this.key);
    // Journaled with the turn's result, in one write: a turn cut by a crash has no entry, and on
    // resume it runs again, taking the same messages (their sends are journaled).
    return {
      messages,
      start: {
        kind: 'turn-start',
        agent: this.key,
        turn,
        prompt,
        messages: messages.map((message) => message.content),
      },
    };
  }

  private releaseStartBuffer(current: CurrentTurn | undefined): void {
    const buffered = this.startBuffer;
    this.startBuffer = [];
    for (const message of buffered) {
      if (current?.handle.inject) this.inject(current, message);
      else this.runtime.requeue(this, message);
    }
  }
}

function snapshotError(error: unknown): ErrorSnapshot {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    const data = (error as { data?: unknown }).data;
    return {
      name: error.name,
      message: error.message,
      ...(typeof code === 'string' ? { code } : {}),
      ...(typeof data === 'object' && data !== null
        ? { data: JSON.parse(JSON.stringify(data)) as Record<string, unknown> }
        : {}),
    };
  }
  return { name: 'Error', message: String(error) };
}

/** A journaled turn failure, thrown again on resume as the workflow saw it the first time. */
function rebuildError(agent: string, snapshot: ErrorSnapshot | undefined): Error {
  const error =
    snapshot?.code === 'AGENT_TURN_FAILED' ? new AgentTurnError(agent, '', snapshot.data ?? {}) : new Error();
  error.message = snapshot?.message ?? `Agent "${agent}" failed.`;
  if (snapshot?.code !== 'AGENT_TURN_FAILED') error.name = snapshot?.name ?? 'Error';
  return error;
}
