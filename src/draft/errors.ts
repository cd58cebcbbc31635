import { describeIssues, ParleyError, type ParleyErrorOptions } from '../conversation/index.js';

/**
 * Stable codes of the draft layer. The server maps them to JSON-RPC codes (DRAFT-SERVICE-CONTRACT):
 * DRAFT_ALREADY_ACTIVE → -32004, NO_ACTIVE_DRAFT → -32005, NOT_FOUND → -32001,
 * INVALID_INPUT → -32602, TURN_IN_PROGRESS → -32006, UNSUPPORTED → -32007, anything else → -32603.
 */
export type DraftErrorCode =
  | 'DRAFT_ALREADY_ACTIVE'
  | 'NO_ACTIVE_DRAFT'
  | 'NOT_FOUND'
  | 'INVALID_INPUT'
  | 'TURN_IN_PROGRESS'
  /** The channel's draft is run by another server that holds its lease: the client is on the wrong server. */
  | 'DRAFT_RUN_ELSEWHERE'
  | 'UNSUPPORTED'
  /** A native session the back end could not resume; the draft was closed (auto-undraft). */
  | 'NATIVE_RESUME_FAILED'
  /** A file in the data folder that does not parse (draft.json, task.json, projects.json). */
  | 'CORRUPT_FILE'
  | 'SERVICE_CLOSED'
  /** Conversations between agents (conversations.ts): too many open, one still answering, closed, out of turns, looping. */
  | 'CONVERSATION_LIMIT'
  | 'CONVERSATION_BUSY'
  | 'CONVERSATION_CLOSED'
  | 'CONVERSATION_TURN_LIMIT'
  | 'CONVERSATION_LOOP'
  /** Goals (goals.ts): one already runs on the draft; none runs to stop. */
  | 'GOAL_IN_PROGRESS'
  | 'NO_GOAL';

/** A draft operation failed (no active draft, a draft already active, a bad role or task); `code` says which. */
export class DraftError extends ParleyError {
  declare readonly code: DraftErrorCode;
  constructor(code: DraftErrorCode, message: string, options: ParleyErrorOptions = {}) {
    super(code, message, options);
  }
}

/** A zod failure at a trust boundary as INVALID_INPUT naming every field. */
export function invalidInput(
  what: string,
  issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }>,
): DraftError {
  return new DraftError('INVALID_INPUT', `${what}: ${describeIssues(issues)}.`, { fault: 'user' });
}
