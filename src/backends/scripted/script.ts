import type { Usage } from '../../conversation/index.js';
import type { ExecuteRequest } from '../agent-backend.js';

/**
 * The script language of the scripted back end: a script is a list of turns, a turn is a list of
 * steps (or a function of the request that returns them). Build steps with the `step` helpers.
 */
export type ScriptStep =
  | { type: 'text'; text: string; chunks?: string[] }
  | { type: 'thinking'; text: string; redacted?: boolean }
  | {
      type: 'tool';
      name: string;
      input: unknown;
      /** The result. Omitted: the request's tool of that name is executed and its output used. */
      output?: string;
      isError?: boolean;
      toolUseId?: string;
    }
  | { type: 'subagent'; name: string; input: string; steps: ScriptStep[]; output?: string }
  | { type: 'usage'; usage: Partial<Usage> }
  | { type: 'cost'; costUsd: number }
  | { type: 'error'; message: string; advice?: string; code?: string; retryable?: boolean }
  | { type: 'wait'; until: PromiseLike<unknown> | AbortSignal }
  | { type: 'await_injection'; reply?: (message: string) => string };

/** A recorded call: the request without its signal and trace context, plus every message injected while it ran. */
export type ScriptedCall = Omit<ExecuteRequest, 'signal' | 'traceContext'> & { injected: string[] };

/** One scripted turn: its steps, or a function of the call that returns them. */
export type ScriptedTurn = ScriptStep[] | ((call: ScriptedCall) => ScriptStep[] | Promise<ScriptStep[]>);

/** Step builders: `[step.thinking('…'), step.text('Hello')]`. */
export const step = {
  /** Assistant text, streamed as several `text_delta` chunks (or exactly the given chunks). */
  text(text: string, options: { chunks?: string[] } = {}): ScriptStep {
    return { type: 'text', text, ...(options.chunks ? { chunks: options.chunks } : {}) };
  },
  thinking(text: string, options: { redacted?: boolean } = {}): ScriptStep {
    return { type: 'thinking', text, ...(options.redacted ? { redacted: true } : {}) };
  },
  /** A tool call and its result. Without `output`, the request's tool of that name runs. */
  tool(
    name: string,
    input: unknown,
    output?: string,
    options: { isError?: boolean; toolUseId?: string } = {},
  ): ScriptStep {
    return { type: 'tool', name, input, ...(output !== undefined ? { output } : {}), ...options };
  },
  /** A subagent with its own thread; its last text is its output unless `output` is given. */
  subagent(name: string, input: string, steps: ScriptStep[], options: { output?: string } = {}): ScriptStep {
    return { type: 'subagent', name, input, steps, ...options };
  },
  /** Reported usage for the turn, replacing the estimate. */
  usage(usage: Partial<Usage>): ScriptStep {
    return { type: 'usage', usage };
  },
  cost(costUsd: number): ScriptStep {
    return { type: 'cost', costUsd };
  },
  /** Ends the turn with an error block, like a failing back end. */
  error(message: string, options: { advice?: string; code?: string; retryable?: boolean } = {}): ScriptStep {
    return { type: 'error', message, ...options };
  },
  /** Pauses the turn until the promise settles or the signal fires (or the turn is aborted). */
  wait(until: PromiseLike<unknown> | AbortSignal): ScriptStep {
    return { type: 'wait', until };
  },
  /** Waits for a message injected into the running turn and answers it (default: `Received: <message>`). */
  awaitInjection(reply?: (message: string) => string): ScriptStep {
    return { type: 'await_injection', ...(reply ? { reply } : {}) };
  },
};
