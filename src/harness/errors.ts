import { ParleyError, type ParleyErrorOptions } from '../conversation/index.js';

/** The codes a `HarnessError` carries. */
export type HarnessErrorCode =
  | 'INVALID_DEFINITION'
  | 'INVALID_INPUT'
  | 'ALREADY_STARTED'
  | 'UNKNOWN_AGENT'
  | 'AGENT_TURN_FAILED'
  | 'OUTPUT_VALIDATION_FAILED'
  | 'PROMPT_TIMEOUT'
  | 'UNKNOWN_PROMPT'
  | 'PROMPT_ALREADY_ANSWERED'
  | 'SESSION_ENDED'
  | 'ABORTED'
  | 'RECORDING_FAILED'
  | 'INVALID_RECORDING'
  | 'UNSUPPORTED_RECORDING_VERSION'
  | 'REPLAY_DIVERGED'
  | 'WORKFLOW_LOAD_FAILED'
  /** Durable runs (run-service.ts). */
  | 'RUN_NOT_FOUND'
  | 'RUN_ENDED'
  | 'INVALID_JOURNAL'
  /** Forks of durable runs (run-fork.ts): a step the journal does not have, an answer at no question, or one it refuses. */
  | 'RUN_STEP_NOT_FOUND'
  | 'NOT_A_QUESTION'
  | 'ANSWER_REFUSED'
  /** Schedules (scheduler.ts): a timing or target that cannot be used; an unknown schedule. */
  | 'INVALID_SCHEDULE'
  | 'SCHEDULE_NOT_FOUND';

/** Every error the harness layer throws on purpose; `code` is stable. */
export class HarnessError extends ParleyError {
  declare readonly code: HarnessErrorCode;
  constructor(code: HarnessErrorCode, message: string, options: ParleyErrorOptions = {}) {
    super(code, message, options);
  }
}

/**
 * The session was aborted (`abort()`, the caller's signal, or a replay that diverged). Workflows
 * may catch it to return partial results; `complete()` reports `aborted: true` either way.
 */
export class AbortedError extends HarnessError {
  readonly reason: string | undefined;
  constructor(reason?: string, options: ParleyErrorOptions = {}) {
    super('ABORTED', reason ? `The session was aborted: ${reason}` : 'The session was aborted.', {
      fault: 'user',
      ...options,
      data: { ...(reason !== undefined ? { reason } : {}), ...options.data },
    });
    this.reason = reason;
  }
}

/** `waitForUser` with a `timeout` and no `defaultChoice` got no reply in time. */
export class TimeoutError extends HarnessError {
  readonly promptId: string;
  readonly timeoutMs: number;
  constructor(promptId: string, prompt: string, timeoutMs: number) {
    super(
      'PROMPT_TIMEOUT',
      `Nobody answered prompt ${promptId} ("${truncate(prompt, 80)}") within ${timeoutMs} ms. Give waitForUser a \`defaultChoice\` to continue without an answer, or a longer \`timeout\`.`,
      { fault: 'user', data: { promptId, timeoutMs } },
    );
    this.promptId = promptId;
    this.timeoutMs = timeoutMs;
  }
}

/** An agent's turn ended with an error block (the back end failed). */
export class AgentTurnError extends HarnessError {
  readonly agent: string;
  constructor(agent: string, message: string, data: Record<string, unknown> = {}) {
    super('AGENT_TURN_FAILED', `Agent "${agent}" failed: ${message}`, { fault: 'system', data: { agent, ...data } });
    this.agent = agent;
  }
}

/**
 * An agent with an `outputSchema` answered twice (the answer and one repair attempt) with output
 * that is not JSON matching the schema. `rawOutput` is the last answer, `attempts` every answer.
 */
export class OutputValidationError extends HarnessError {
  readonly agent: string;
  readonly rawOutput: string;
  readonly attempts: string[];
  readonly issues: string;
  constructor(agent: string, attempts: string[], issues: string) {
    const rawOutput = attempts[attempts.length - 1] ?? '';
    super(
      'OUTPUT_VALIDATION_FAILED',
      `Agent "${agent}" did not return output matching its outputSchema after ${attempts.length} attempt(s): ${issues}. Its last output began: "${truncate(rawOutput, 120)}".`,
      { fault: 'model', data: { agent, rawOutput, attempts, issues } },
    );
    this.agent = agent;
    this.rawOutput = rawOutput;
    this.attempts = attempts;
    this.issues = issues;
  }
}

/**
 * A replay produced something the recording does not have at this step. `step` is the index of the
 * recorded event that was expected (or the position where the run stopped matching).
 */
export class ReplayDivergenceError extends HarnessError {
  readonly step: number;
  readonly expected: unknown;
  readonly actual: unknown;
  /** The step in words (`agent "writer" turn 2`), when a durable run's journal is what diverged. */
  readonly stepName: string | undefined;
  constructor(
    step: number,
    detail: string,
    expected: unknown,
    actual: unknown,
    options: { source?: 'recording' | 'journal'; stepName?: string } = {},
  ) {
    const source = options.source ?? 'recording';
    const where = options.stepName !== undefined ? `${options.stepName} (${source} entry ${step})` : `step ${step}`;
    super('REPLAY_DIVERGED', `Replay diverged from the ${source} at ${where}: ${detail}`, {
      fault: 'user',
      data: { step, expected, actual, ...(options.stepName !== undefined ? { stepName: options.stepName } : {}) },
    });
    this.step = step;
    this.expected = expected;
    this.actual = actual;
    this.stepName = options.stepName;
  }
}

export function truncate(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** A plain, JSON-safe description of an error for events and recordings. */
export interface ErrorInfo {
  name: string;
  message: string;
  code?: string;
}

export function describeError(error: unknown): ErrorInfo {
  if (error instanceof ParleyError) return { name: error.name, message: error.message, code: error.code };
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: 'Error', message: String(error) };
}
