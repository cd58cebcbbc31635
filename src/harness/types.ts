import type { z } from 'zod';
import type { AgentBackend, ToolDefinition } from '../backends/index.js';
import type { Approver, PermissionMode, WorkspacePermission } from '../workspace/index.js';
import type { GetOrCreateSessionOptions, SessionManager } from '../sessions/index.js';
import type {
  HarnessEvent,
  InjectedMessage,
  SessionEvent,
  SessionEventHandler,
  SessionEventType,
  UserReply,
  UserResponse,
} from './events.js';

// ---- agents ------------------------------------------------------------------------------------

interface AgentOptionsBase {
  /** Shown in events and in the agent's session title. */
  name: string;
  /** Who the agent is (its session's agent description). */
  role?: string;
  /** How it works; joined to the role in the system prompt. */
  instructions?: string;
  backend: AgentBackend;
  model?: string;
  /** Tools Parley provides to the model. */
  tools?: ToolDefinition[];
  /** The workspace the agent works in. */
  cwd?: string;
  maxTurns?: number;
  /** The agent type stored on its session (default `harness`). */
  agentType?: string;
  /** Parley's workspace tools (read, search, edit, run) for this agent, confined to a project folder. */
  workspace?: AgentWorkspaceOptions;
}

/**
 * The workspace tools of a workflow agent. Approval requests go to `onPermissionRequest` (the
 * workflow's callback), which may ask a person with `waitForUser` or decide by rule.
 */
export interface AgentWorkspaceOptions {
  /** The project folder: every path resolves inside it; commands run in it. */
  root: string;
  /** Parley's data folder (default `<root>/.parley`): never written by a tool, hidden from commands. */
  dataDir?: string;
  /** Which tools (default all: `files-read`, `files-write`, `shell`). */
  permissions?: readonly WorkspacePermission[];
  /** Default `default` (ask before every write and command). */
  mode?: PermissionMode;
  /** Whether commands may use the network in the sandbox (default false). */
  network?: boolean;
  /** `auto` (default): bwrap when it works here; `none`: unconfined. */
  sandbox?: 'auto' | 'none';
  /** Answers approval requests. Required unless `mode` is `bypassPermissions` or `plan` (nothing is asked). */
  onPermissionRequest?: Approver;
}

/** `defineAgent` needs a role or instructions (or both). */
export type AgentOptions = AgentOptionsBase & ({ role: string } | { instructions: string });

/** An agent made by `defineAgent`: its role, back end, tools and, with `outputSchema`, its typed output. */
export interface AgentDefinition<TOutput = string> {
  readonly kind: 'parley:agent';
  readonly name: string;
  readonly role?: string;
  readonly instructions?: string;
  readonly backend: AgentBackend;
  readonly model?: string;
  readonly tools?: ToolDefinition[];
  readonly cwd?: string;
  readonly maxTurns?: number;
  readonly agentType?: string;
  readonly workspace?: AgentWorkspaceOptions;
  /** With a schema, `run` returns the validated value instead of text. */
  readonly outputSchema?: z.ZodType<TOutput>;
}

// `any`: an agent map holds definitions of different output types; each is read back precisely by AgentOutput.
/** The agents of a workflow, by name. */
export type AgentMap = Record<string, AgentDefinition<any>>;
/** The output type of an agent: its `outputSchema`'s type, or `string`. */
export type AgentOutput<A> = A extends AgentDefinition<infer O> ? O : never;

/** Options of one `agent.run`: an `AbortSignal` that ends the turn early. */
export interface AgentRunOptions {
  /** Ends this turn early (the session's own abort reaches it anyway). */
  signal?: AbortSignal;
}

/** A session to run an agent in instead of its own workflow session: an existing id, or the scoped session. */
export type AgentSessionTarget = { sessionId: string } | GetOrCreateSessionOptions;

/** An agent inside a running harness. */
export interface HarnessAgent<TOutput = string> {
  /** Its key in the harness's `agents`. */
  readonly key: string;
  readonly name: string;
  /** A turn of this agent is running now. */
  readonly running: boolean;
  /**
   * Runs one turn: streams its blocks as `agent:event`s (each durable in the agent's session first)
   * and returns its text, or with an `outputSchema` the validated value (one repair turn on invalid
   * output, then OutputValidationError). Turns of one agent run one at a time, in call order.
   */
  run(prompt: string, options?: AgentRunOptions): Promise<TOutput>;
  /** The agent's Parley session (created on first use). */
  sessionId(): Promise<string>;
  /** Runs the agent's next turns in another session (a task session, say); returns its id. */
  useSession(target: AgentSessionTarget): Promise<string>;
}

/** The agents a workflow's `run` gets, ready to run. */
export type ResolvedAgents<TAgents extends AgentMap> = { [K in keyof TAgents]: HarnessAgent<AgentOutput<TAgents[K]>> };

// ---- the execute context ---------------------------------------------------------------------

/** Options of `retry`: how many attempts, and the wait between them. */
export interface RetryOptions {
  /** Attempts in all, the first included (default 3). */
  attempts?: number;
  /** Milliseconds to wait after failed attempt `attempt` (default 500 ms doubling, at most 30 s). */
  backoff?: number | ((attempt: number) => number);
  /** Whether this error is worth another attempt (default: every error except an abort). */
  retryOn?: (error: unknown, attempt: number) => boolean;
}

/** Options of `parallel`: how many run at once. */
export interface ParallelOptions {
  /** How many run at once (default: all). */
  concurrency?: number;
}

/** Options of `waitForUser`: choices, a timeout and the choice to take when it runs out. */
export interface WaitOptions {
  /** Milliseconds to wait. None by default: the prompt waits until answered or the session ends. */
  timeout?: number;
  /** The reply must pick one of these. */
  choices?: string[];
  /** `true` accepts; a string refuses with that message (the prompt keeps waiting); `false` refuses. */
  validator?: (input: string) => boolean | string;
  /** Returned (with `timedOut: true`) when the timeout passes; without it the wait fails with TimeoutError. */
  defaultChoice?: string;
}

/** What a workflow can do only in an interactive session. */
export interface SessionContext {
  /** Asks the user; resolves with the reply. Several may wait at once, each with its own `promptId`. */
  waitForUser(prompt: string, options?: WaitOptions): Promise<UserResponse>;
  /** Messages sent that no agent turn has taken yet. */
  hasMessages(): boolean;
  /** Takes every waiting message (they no longer reach an agent). */
  readMessages(): InjectedMessage[];
  isAborted(): boolean;
}

/**
 * What a workflow's `run` function gets: its agents, state, input, `phase`, `task`, `parallel`, `retry` and the
 * session.
 */
export interface ExecuteContext<TAgents extends AgentMap, TState, TInput = unknown> {
  agents: ResolvedAgents<TAgents>;
  state: TState;
  input: TInput;
  /** Aborted when the session is; pass it to anything long-running. */
  signal: AbortSignal;
  /** Where the agents' sessions live. */
  sessionManager: SessionManager;
  phase<T>(name: string, fn: () => Promise<T>): Promise<T>;
  task<T>(id: string, fn: () => Promise<T>): Promise<T>;
  /** A `custom` event with this name and data. */
  emit(name: string, data?: Record<string, unknown>): void;
  retry<T>(name: string, fn: (attempt: number) => Promise<T>, options?: RetryOptions): Promise<T>;
  /** Runs the functions with at most `concurrency` at once; results in input order. */
  parallel<T>(name: string, fns: Array<() => Promise<T>>, options?: ParallelOptions): Promise<T[]>;
  /**
   * The time, in milliseconds since the epoch. Use it instead of `Date.now()`: in a durable run
   * the value is journaled, and a resumed run gets the same value again at the same call.
   */
  now(): number;
  /** A random number in [0, 1), like `Math.random()`; journaled in a durable run, like `now()`. */
  random(): number;
  /** Present only under `startSession()`. */
  session?: SessionContext;
}

// ---- harnesses ---------------------------------------------------------------------------------

/** What `defineHarness` takes: a name, the agents, the initial state and the `run` function. */
export interface HarnessDefinition<TAgents extends AgentMap, TInput, TState, TResult> {
  /** Names the workflow in its agents' session scopes and in recordings. */
  name: string;
  agents: TAgents;
  /** The initial state from the input (default: an empty object). */
  state?: (input: TInput) => TState;
  run(context: ExecuteContext<TAgents, TState, TInput>): Promise<TResult>;
}

/** Options of `harness.create`: the session manager, an `AbortSignal`, and back ends that replace agents' own. */
export interface HarnessCreateOptions {
  /** Where agent sessions are stored; default: a manager over a fresh memory store. */
  sessionManager?: SessionManager;
  /** Aborts the run (or session) when it aborts. */
  signal?: AbortSignal;
  /** Replaces agents' back ends by agent key (tests run a workflow on scripted back ends this way). */
  backends?: Partial<Record<string, AgentBackend>>;
}

/** The arguments of `harness.create`: the input is optional when the workflow's input may be undefined. */
export type CreateArguments<TInput> = undefined extends TInput
  ? [input?: TInput, options?: HarnessCreateOptions]
  : [input: TInput, options?: HarnessCreateOptions];

/** A workflow made by `defineHarness`: `create(input)` gives an instance to `run()` or `startSession()`. */
export interface Harness<TAgents extends AgentMap = AgentMap, TInput = unknown, TState = unknown, TResult = unknown> {
  readonly kind: 'parley:harness';
  readonly name: string;
  readonly agents: TAgents;
  readonly definition: HarnessDefinition<TAgents, TInput, TState, TResult>;
  create(...args: CreateArguments<TInput>): HarnessInstance<TState, TResult>;
}

/** Any harness, whatever its input, state and result (what `parley run` loads). */
export type AnyHarness = Harness<AgentMap, any, any, any>;

/** How a workflow ended: its result, its state, every event and its duration. */
export interface HarnessResult<TState, TResult> {
  result: TResult;
  state: TState;
  events: HarnessEvent[];
  /** Milliseconds. */
  duration: number;
}

/** Options of `startSession`: an `AbortSignal` and a recording to write. */
export interface StartSessionOptions {
  /** Writes a JSONL recording of the session here (replayable with `replay`). */
  record?: string;
  signal?: AbortSignal;
}

/** One instance of a workflow: run it to the end (`run`) or interactively (`startSession`). */
export interface HarnessInstance<TState, TResult> {
  on<E extends SessionEventType | '*'>(type: E, handler: SessionEventHandler<E>): this;
  /** Fire and forget: runs the workflow to its end; no `session` in the context. Rejects if it throws. */
  run(): Promise<HarnessResult<TState, TResult>>;
  readonly state: TState;
  /** Runs the workflow as an interactive session. An instance runs once: `run` or `startSession`. */
  startSession(options?: StartSessionOptions): InteractiveSession<TState, TResult>;
}

// ---- interactive sessions ----------------------------------------------------------------------

/**
 * `waiting`: a prompt waits for a reply. `complete`: the workflow ended (a workflow that threw is
 * complete too; `complete()` rejects with its error). Named apart from the store's SessionStatus
 * (`active | archived`), which is a different thing.
 */
export type InteractiveSessionStatus = 'running' | 'waiting' | 'paused' | 'complete' | 'aborted';

interface SessionResultBase<TState> {
  state: TState;
  events: SessionEvent[];
  /** Milliseconds. */
  duration: number;
}
/** How an interactive session ended: its result and events, or its error. */
export type SessionResult<TState, TResult> =
  | (SessionResultBase<TState> & { aborted: false; result: TResult })
  | (SessionResultBase<TState> & { aborted: true; result: TResult | undefined; abortReason?: string });

/** Whether a reply was accepted, and, if not, why. */
export type ReplyOutcome = { accepted: true; response: UserResponse } | { accepted: false; message: string };

/** A question a workflow asked that waits for an answer. */
export interface PendingPrompt {
  promptId: string;
  prompt: string;
  choices?: string[];
  defaultChoice?: string;
  timeout?: number;
  /** When it was asked (milliseconds since the epoch); set in durable runs. */
  askedAt?: number;
  /** When it times out (milliseconds since the epoch); set in durable runs, kept across restarts. */
  deadline?: number;
}

/** A workflow running with a person attached: its events, `reply` to prompts, `send` to agents, pause and abort. */
export interface InteractiveSession<TState, TResult> extends AsyncIterable<SessionEvent> {
  on<E extends SessionEventType | '*'>(type: E, handler: SessionEventHandler<E>): this;
  /** To the agent running now (live where its back end takes injection, else its next turn); with none running, to the next turn of any agent. */
  send(message: string): void;
  /** To one agent: live if it is running and its back end takes injection, else at its next turn. */
  sendTo(agentName: string, message: string): void;
  /**
   * Answers a prompt. Throws UNKNOWN_PROMPT or PROMPT_ALREADY_ANSWERED; a reply the choices or the
   * validator refuse comes back as `{ accepted: false, message }` and the prompt keeps waiting.
   */
  reply(promptId: string, response: UserReply): ReplyOutcome;
  /** Graceful: running turns end with a `system` block, `complete()` resolves with `aborted: true`. */
  abort(reason?: string): void;
  /** Holds the workflow at its next step (phase, task, agent turn, retry attempt) until `resume()`. */
  pause(): void;
  resume(): void;
  readonly status: InteractiveSessionStatus;
  /** Prompts waiting for a reply, oldest first. */
  readonly pendingPrompts: PendingPrompt[];
  /** Every event so far. */
  readonly events: readonly SessionEvent[];
  /** Resolves when the workflow ends (also after an abort); rejects with the workflow's error. */
  complete(): Promise<SessionResult<TState, TResult>>;
  readonly state: TState;
}
