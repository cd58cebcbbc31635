import { ParleyError } from '../conversation/index.js';

/**
 * How a back end failure is reported: an error `system` block whose text says what happened and
 * what to do, and whose `data` carries the same facts for programs (a stable code, whether trying
 * again may help). Back ends never throw for these; the turn ends with the block.
 */
export type BackendFailureCode =
  | 'RATE_LIMITED'
  | 'SERVER_ERROR'
  | 'TIMEOUT'
  | 'CONNECTION_FAILED'
  | 'AUTHENTICATION_FAILED'
  | 'BAD_REQUEST'
  | 'MODEL_NOT_FOUND'
  | 'PROCESS_FAILED'
  | 'NOT_INSTALLED'
  /**
   * A native back end (claude-sdk, gemini-cli) could not resume its own session: the transcript is
   * gone or unreadable. The layer above falls back (sessions/backend-move.ts: rewrite the transcript
   * from Parley's log, then continue managed).
   */
  | 'NATIVE_RESUME_FAILED'
  /** The gemini-cli back end's name for NATIVE_RESUME_FAILED before both were one; still accepted where failures are read (`isResumeFailureCode`). */
  | 'RESUME_FAILED'
  | 'MAX_TURNS'
  | 'SCRIPTED_ERROR'
  | 'UNKNOWN';

/** Why a back end's turn failed: a code, a message and whether a retry may help. */
export interface BackendFailure {
  code: BackendFailureCode;
  backend: string;
  /** What happened, naming the endpoint, model or process involved. */
  message: string;
  /** What the user can do about it. */
  advice: string;
  /** True when the same request may succeed later (rate limit, 5xx, timeout). */
  retryable: boolean;
  /** HTTP status or process exit code, when there is one. */
  status?: number;
  /** Raw detail: an error body or the tail of a process's stderr. */
  detail?: string;
}

/** Whether a failure code means "this native session cannot be resumed" (the old `RESUME_FAILED` included). */
export function isResumeFailureCode(code: unknown): boolean {
  return code === 'NATIVE_RESUME_FAILED' || code === 'RESUME_FAILED';
}

/** The text of the error block: what happened, then what to do. */
export function describeFailure(failure: BackendFailure): string {
  const detail = failure.detail ? `\n${failure.detail}` : '';
  return `${failure.message} ${failure.advice}${detail}`;
}

/** Keeps the last `maxLength` characters, at a line start when one is near. */
export function tail(text: string, maxLength = 2000): string {
  const trimmed = text.trimEnd();
  if (trimmed.length <= maxLength) return trimmed;
  const cut = trimmed.slice(-maxLength);
  const newline = cut.indexOf('\n');
  return newline >= 0 && newline < 200 ? cut.slice(newline + 1) : cut;
}

/** `inject` on a turn that has already ended: the message was not delivered; send it as a new turn. */
export class TurnNotRunningError extends ParleyError {
  constructor(backend: string) {
    super(
      'TURN_NOT_RUNNING',
      `The ${backend} turn has already ended, so the injected message was not delivered. Send it as a new message instead.`,
      { fault: 'user', data: { backend } },
    );
  }
}
