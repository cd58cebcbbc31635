import type { StreamEvent } from '../conversation/index.js';
import type { ErrorInfo } from './errors.js';

/**
 * Every event a harness emits, as one flat tagged union. Each carries a
 * `timestamp`, and `branch` when it was emitted inside a `parallel` branch (`name#index`, nested
 * branches joined by `/`), so a UI can group concurrent work and a replay can tell it apart.
 */
interface Base {
  timestamp: Date;
  branch?: string;
}

/** The workflow started. */
export interface HarnessStartEvent extends Base {
  type: 'harness:start';
  harness: string;
}
/** A phase started. */
export interface PhaseStartEvent extends Base {
  type: 'phase:start';
  name: string;
}
/** A phase finished, with its duration. */
export interface PhaseCompleteEvent extends Base {
  type: 'phase:complete';
  name: string;
  duration: number;
}
/** A phase failed, with the error. */
export interface PhaseFailedEvent extends Base {
  type: 'phase:failed';
  name: string;
  duration: number;
  error: ErrorInfo;
}
/** A `task` step of a workflow (`context.task(id, fn)`) starts; a step, not a project's task. */
export interface TaskStartEvent extends Base {
  type: 'task:start';
  id: string;
}
/** A task finished, with its duration. */
export interface TaskCompleteEvent extends Base {
  type: 'task:complete';
  id: string;
  duration: number;
}
/** A task failed, with the error. */
export interface TaskFailedEvent extends Base {
  type: 'task:failed';
  id: string;
  duration: number;
  error: ErrorInfo;
}
/** An attempt of `retry` starts; `attempt` counts from 1. */
export interface RetryAttemptEvent extends Base {
  type: 'retry:attempt';
  name: string;
  attempt: number;
  attempts: number;
}
/** An attempt failed; `willRetry` says whether another follows after `delayMs`. */
export interface RetryFailureEvent extends Base {
  type: 'retry:failure';
  name: string;
  attempt: number;
  attempts: number;
  error: ErrorInfo;
  willRetry: boolean;
  delayMs: number;
}
/** Parallel work started, with how many items. */
export interface ParallelStartEvent extends Base {
  type: 'parallel:start';
  name: string;
  count: number;
  concurrency: number;
}
/** Parallel work finished. */
export interface ParallelCompleteEvent extends Base {
  type: 'parallel:complete';
  name: string;
  count: number;
  duration: number;
}
/** Parallel work failed, with the errors. */
export interface ParallelFailedEvent extends Base {
  type: 'parallel:failed';
  name: string;
  error: ErrorInfo;
}
/** `emit(name, data)` from a workflow. */
export interface HarnessCustomEvent extends Base {
  type: 'custom';
  name: string;
  data: Record<string, unknown>;
}
/** An agent's turn starts; `prompt` is what it was sent, with any waiting messages prepended. */
export interface AgentStartEvent extends Base {
  type: 'agent:start';
  agent: string;
  sessionId: string;
  turn: number;
  prompt: string;
  /** Messages from the user that waited for this turn and were prepended to its prompt. */
  messages?: string[];
  /** This turn asks the agent to repair output that did not match its schema. */
  repair?: boolean;
}
/** One stream event of an agent's turn, after it is durable in the agent's session. */
export interface AgentStreamEvent extends Base {
  type: 'agent:event';
  agent: string;
  sessionId: string;
  turn: number;
  event: StreamEvent;
}
/** An agent's turn finished, with its output and usage. */
export interface AgentCompleteEvent extends Base {
  type: 'agent:complete';
  agent: string;
  sessionId: string;
  turn: number;
  /** The turn's assistant text. */
  output: string;
  stopReason: 'complete' | 'error' | 'aborted';
}

/** What a workflow emits about itself: phases, tasks, agents, parallel work, retries and custom events. */
export type HarnessEvent =
  | HarnessStartEvent
  | PhaseStartEvent
  | PhaseCompleteEvent
  | PhaseFailedEvent
  | TaskStartEvent
  | TaskCompleteEvent
  | TaskFailedEvent
  | RetryAttemptEvent
  | RetryFailureEvent
  | ParallelStartEvent
  | ParallelCompleteEvent
  | ParallelFailedEvent
  | HarnessCustomEvent
  | AgentStartEvent
  | AgentStreamEvent
  | AgentCompleteEvent;

// ---- interactive sessions ----------------------------------------------------------------------

/** A reply to `waitForUser`. */
export interface UserResponse {
  content: string;
  /** The chosen option, when the prompt offered choices. */
  choice?: string;
  timestamp: Date;
  /** Nobody answered within the timeout: this is the prompt's `defaultChoice`. */
  timedOut?: boolean;
}

/** What `reply` takes: the text, or the text and/or the choice. */
export type UserReply = string | { content?: string; choice?: string; timestamp?: Date };

/** A message sent to a running agent (`send`), delivered live or at its next turn. */
export interface InjectedMessage {
  content: string;
  /** Set by `sendTo`. */
  targetAgent?: string;
  timestamp: Date;
}

/** The workflow asks a person (`waitForUser`): the prompt, its choices and deadline. */
export interface UserPromptEvent extends Base {
  type: 'user:prompt';
  promptId: string;
  prompt: string;
  choices?: string[];
  timeout?: number;
  defaultChoice?: string;
}
/** A person answered a prompt. */
export interface UserReplyEvent extends Base {
  type: 'user:reply';
  promptId: string;
  response: UserResponse;
}
/** A reply the prompt's choices or validator refused; the prompt keeps waiting. */
export interface UserReplyRejectedEvent extends Base {
  type: 'user:reply-rejected';
  promptId: string;
  content: string;
  message: string;
}
/** A prompt's timeout ran out, and what was chosen then. */
export interface UserTimeoutEvent extends Base {
  type: 'user:timeout';
  promptId: string;
  /** Present when the prompt continued with its default instead of failing. */
  defaultChoice?: string;
}
/**
 * A message from `send`/`sendTo`. `delivery`: `live` reached the running turn through the back
 * end's injection; `inbox` waits for `agent`'s next turn; `queue` waits for the next turn of any
 * agent (or the workflow's `readMessages`).
 */
export interface MessageInjectedEvent extends Base {
  type: 'message:injected';
  content: string;
  targetAgent?: string;
  agent?: string;
  delivery: 'live' | 'inbox' | 'queue';
}
/** The session was paused. */
export interface SessionPausedEvent extends Base {
  type: 'session:paused';
}
/** The session was resumed. */
export interface SessionResumedEvent extends Base {
  type: 'session:resumed';
}
/** The session was aborted, with the reason. */
export interface SessionAbortEvent extends Base {
  type: 'session:abort';
  reason?: string;
}
/** The workflow threw (not an abort); `complete()` rejects with that error. Terminal. */
export interface SessionErrorEvent extends Base {
  type: 'session:error';
  error: ErrorInfo;
  duration: number;
}
/** The workflow ended, normally or after an abort. Terminal. */
export interface SessionCompleteEvent extends Base {
  type: 'session:complete';
  result: unknown;
  duration: number;
  aborted: boolean;
  abortReason?: string;
}

/** Every event of an interactive session: the workflow's events plus prompts, replies, pauses and the end. */
export type SessionEvent =
  | HarnessEvent
  | UserPromptEvent
  | UserReplyEvent
  | UserReplyRejectedEvent
  | UserTimeoutEvent
  | MessageInjectedEvent
  | SessionPausedEvent
  | SessionResumedEvent
  | SessionAbortEvent
  | SessionErrorEvent
  | SessionCompleteEvent;

/** The `type` tag of a harness event. */
export type HarnessEventType = HarnessEvent['type'];
/** The `type` tag of a session event. */
export type SessionEventType = SessionEvent['type'];
/** The session event whose `type` is `T`. */
export type SessionEventOf<T extends SessionEventType> = Extract<SessionEvent, { type: T }>;
/** `'*'` receives every event. */
export type SessionEventHandler<T extends SessionEventType | '*'> = (
  event: T extends SessionEventType ? SessionEventOf<T> : SessionEvent,
) => void;

/** A harness event before the harness stamps its `timestamp`. */
export type UnstampedSessionEvent = SessionEvent extends infer E
  ? E extends SessionEvent
    ? Omit<E, 'timestamp'> & { timestamp?: Date }
    : never
  : never;
