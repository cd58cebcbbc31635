import type { z } from 'zod';
import { HarnessError } from './errors.js';
import type { HarnessEvent, SessionEvent, SessionEventHandler, SessionEventType, UserReply } from './events.js';
import { RecordingWriter } from './recording.js';
import { HarnessRuntime, type AnyHarnessDefinition, type Outcome } from './runtime.js';
import type {
  AgentDefinition,
  AgentMap,
  AgentOptions,
  AnyHarness,
  CreateArguments,
  Harness,
  HarnessCreateOptions,
  HarnessDefinition,
  HarnessInstance,
  HarnessResult,
  InteractiveSession,
  InteractiveSessionStatus,
  PendingPrompt,
  ReplyOutcome,
  SessionResult,
  StartSessionOptions,
} from './types.js';

/** An agent: a role or instructions, a back end, and optionally a zod schema its answers must match. */
export function defineAgent<TSchema extends z.ZodType>(
  options: AgentOptions & { outputSchema: TSchema },
): AgentDefinition<z.output<TSchema>>;
export function defineAgent(options: AgentOptions & { outputSchema?: undefined }): AgentDefinition<string>;
export function defineAgent(options: AgentOptions & { outputSchema?: z.ZodType }): AgentDefinition<unknown> {
  const where = `defineAgent(${typeof options?.name === 'string' ? `"${options.name}"` : '…'})`;
  if (typeof options !== 'object' || options === null) throw invalidDefinition('defineAgent needs an options object.');
  if (typeof options.name !== 'string' || options.name.trim() === '')
    throw invalidDefinition('defineAgent: `name` must be non-empty text.');
  const role = (options as { role?: unknown }).role;
  const instructions = (options as { instructions?: unknown }).instructions;
  if (
    (typeof role !== 'string' || role.trim() === '') &&
    (typeof instructions !== 'string' || instructions.trim() === '')
  ) {
    throw invalidDefinition(`${where}: give the agent a \`role\` or \`instructions\`.`);
  }
  const backend = options.backend as { execute?: unknown; describe?: unknown } | undefined;
  if (!backend || typeof backend.execute !== 'function' || typeof backend.describe !== 'function') {
    throw invalidDefinition(`${where}: \`backend\` must be an AgentBackend (for example createScriptedBackend()).`);
  }
  const workspace = options.workspace;
  if (workspace !== undefined) {
    if (
      typeof workspace !== 'object' ||
      workspace === null ||
      typeof workspace.root !== 'string' ||
      workspace.root === ''
    ) {
      throw invalidDefinition(`${where}: \`workspace.root\` must be the project folder the agent works in.`);
    }
    const mode = workspace.mode ?? 'default';
    if (mode !== 'bypassPermissions' && mode !== 'plan' && typeof workspace.onPermissionRequest !== 'function') {
      throw invalidDefinition(
        `${where}: in permission mode "${mode}" the workspace tools ask before changing files or running commands; give \`workspace.onPermissionRequest\` to answer, or set \`mode: 'bypassPermissions'\` (nothing asked) or \`'plan'\` (reads only).`,
      );
    }
  }
  if (
    options.outputSchema !== undefined &&
    typeof (options.outputSchema as { safeParse?: unknown }).safeParse !== 'function'
  ) {
    throw invalidDefinition(`${where}: \`outputSchema\` must be a zod schema.`);
  }
  return Object.freeze({ ...options, kind: 'parley:agent' as const });
}

/**
 * A workflow of agents. `create(input)` makes an instance that runs once, fire-and-forget with
 * `run()` or interactively with `startSession()`.
 */
export function defineHarness<
  TAgents extends AgentMap,
  TInput = undefined,
  TState = Record<string, unknown>,
  TResult = unknown,
>(definition: HarnessDefinition<TAgents, TInput, TState, TResult>): Harness<TAgents, TInput, TState, TResult> {
  if (typeof definition !== 'object' || definition === null)
    throw invalidDefinition('defineHarness needs a definition object.');
  if (typeof definition.name !== 'string' || definition.name.trim() === '')
    throw invalidDefinition('defineHarness: `name` must be non-empty text.');
  if (typeof definition.run !== 'function')
    throw invalidDefinition(`defineHarness("${definition.name}"): \`run\` must be a function.`);
  if (definition.state !== undefined && typeof definition.state !== 'function') {
    throw invalidDefinition(`defineHarness("${definition.name}"): \`state\` must be a function of the input.`);
  }
  const agents = definition.agents ?? ({} as TAgents);
  for (const [key, agent] of Object.entries(agents)) {
    if ((agent as { kind?: unknown } | undefined)?.kind !== 'parley:agent') {
      throw invalidDefinition(
        `defineHarness("${definition.name}"): agents.${key} is not an agent; make it with defineAgent().`,
      );
    }
  }
  const harness: Harness<TAgents, TInput, TState, TResult> = {
    kind: 'parley:harness',
    name: definition.name,
    agents,
    definition: { ...definition, agents },
    create(...args: CreateArguments<TInput>) {
      const [input, options] = args as [TInput, HarnessCreateOptions | undefined];
      const state = definition.state ? definition.state(input) : ({} as TState);
      const runtime = new HarnessRuntime(
        harness.definition as unknown as AnyHarnessDefinition,
        input,
        state,
        options ?? {},
      );
      return new Instance<TState, TResult>(runtime);
    },
  };
  return harness;
}

/** True for a value made by `defineHarness` (also from another copy of Parley). */
export function isHarness(value: unknown): value is AnyHarness {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { kind?: unknown }).kind === 'parley:harness' &&
    typeof (value as { create?: unknown }).create === 'function'
  );
}

function invalidDefinition(message: string): HarnessError {
  return new HarnessError('INVALID_DEFINITION', message, { fault: 'user' });
}

class Instance<TState, TResult> implements HarnessInstance<TState, TResult> {
  constructor(private readonly runtime: HarnessRuntime) {}

  get state(): TState {
    return this.runtime.state as TState;
  }

  on<E extends SessionEventType | '*'>(type: E, handler: SessionEventHandler<E>): this {
    this.runtime.log.on(type, handler as (event: SessionEvent) => void);
    return this;
  }

  async run(): Promise<HarnessResult<TState, TResult>> {
    const outcome = await this.runtime.start();
    if (outcome.kind === 'failed') throw outcome.error;
    if (outcome.kind === 'aborted') throw this.runtime.abortError(this.runtime.signal);
    return {
      result: outcome.result as TResult,
      state: this.state,
      events: [...this.runtime.log.events] as HarnessEvent[],
      duration: this.runtime.duration,
    };
  }

  startSession(options: StartSessionOptions = {}): InteractiveSession<TState, TResult> {
    return startInteractive<TState, TResult>(this.runtime, options);
  }
}

/** @internal also used by replay, which attaches its driver before the session starts. */
export function startInteractive<TState, TResult>(
  runtime: HarnessRuntime,
  options: StartSessionOptions,
  prepare?: (runtime: HarnessRuntime) => void,
): InteractiveSession<TState, TResult> {
  if (runtime.started) {
    throw new HarnessError(
      'ALREADY_STARTED',
      `This "${runtime.name}" instance has already run; call create() again for another session.`,
      { fault: 'user' },
    );
  }
  runtime.interactive = true;
  let recorder: RecordingWriter | undefined;
  if (options.record !== undefined) {
    recorder = new RecordingWriter(options.record, {
      harness: runtime.name,
      input: runtime.input,
      agents: Object.fromEntries(
        [...runtime.agents].map(([key, agent]) => [
          key,
          { name: agent.definition.name, backend: agent.backend.describe().name },
        ]),
      ),
    });
    const writer = recorder;
    runtime.log.hook('before', (event, index) => writer.event(index, event));
    runtime.observers.push({ input: (at, input) => writer.input(at, input), turn: (turn) => writer.turn(turn) });
  }
  prepare?.(runtime);
  const outcome = runtime.start(options.signal).then((result) => {
    recorder?.close();
    return result;
  });
  return new Session<TState, TResult>(runtime, outcome, recorder);
}

class Session<TState, TResult> implements InteractiveSession<TState, TResult> {
  constructor(
    private readonly runtime: HarnessRuntime,
    private readonly outcome: Promise<Outcome>,
    private readonly recorder: RecordingWriter | undefined,
  ) {}

  get state(): TState {
    return this.runtime.state as TState;
  }

  get status(): InteractiveSessionStatus {
    return this.runtime.status;
  }

  get pendingPrompts(): PendingPrompt[] {
    return this.runtime.pendingPrompts();
  }

  get events(): readonly SessionEvent[] {
    return this.runtime.log.events;
  }

  on<E extends SessionEventType | '*'>(type: E, handler: SessionEventHandler<E>): this {
    this.runtime.log.on(type, handler as (event: SessionEvent) => void);
    return this;
  }

  send(message: string): void {
    this.runtime.send(message);
  }

  sendTo(agentName: string, message: string): void {
    this.runtime.send(message, agentName);
  }

  reply(promptId: string, response: UserReply): ReplyOutcome {
    return this.runtime.reply(promptId, response);
  }

  abort(reason?: string): void {
    this.runtime.abort(reason);
  }

  pause(): void {
    this.runtime.pause();
  }

  resume(): void {
    this.runtime.resume();
  }

  async complete(): Promise<SessionResult<TState, TResult>> {
    const outcome = await this.outcome;
    if (this.recorder?.error) throw this.recorder.error;
    if (outcome.kind === 'failed') throw outcome.error;
    const base = { state: this.state, events: [...this.runtime.log.events], duration: this.runtime.duration };
    if (outcome.kind === 'aborted') {
      return {
        ...base,
        aborted: true,
        result: outcome.result as TResult | undefined,
        ...(this.runtime.abortReason !== undefined ? { abortReason: this.runtime.abortReason } : {}),
      };
    }
    return { ...base, aborted: false, result: outcome.result as TResult };
  }

  [Symbol.asyncIterator](): AsyncIterator<SessionEvent> {
    return this.runtime.log.iterate();
  }
}
