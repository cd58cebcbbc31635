import { ParleyError, type ErrorFault, type ParleyErrorOptions } from '../conversation/index.js';
import type { WireError } from './json-rpc.js';

/**
 * Numeric JSON-RPC error codes. The standard ones (-32700…-32603), seed 000's -32004 and -32005,
 * and Parley's own in the server-error range. Stable: clients match on them.
 */
export const RpcErrorCode = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  /** A typed Parley error with no code of its own; `data.code` says which. */
  SERVER_ERROR: -32000,
  /** Project, task, role, agent or session not found. */
  NOT_FOUND: -32001,
  /** Seed 000. */
  DRAFT_ALREADY_ACTIVE: -32004,
  /** Seed 000. */
  NO_ACTIVE_DRAFT: -32005,
  /** The channel's draft is running a turn; wait for it or `cancel` it. */
  TURN_IN_PROGRESS: -32006,
  /** The back end cannot do this (e.g. force_compact on a native session). */
  UNSUPPORTED: -32007,
  /** Too many requests on this connection; retry after `data.retryAfterMs`. */
  RATE_LIMITED: -32008,
  /** The target is in a state that refuses this (archived, read only, compaction running). */
  INVALID_STATE: -32009,
  /** The server is shutting down; reconnect to the next one. */
  SHUTTING_DOWN: -32010,
  /** This connection may not do this: a paired device cannot manage devices. */
  NOT_ALLOWED: -32011,
} as const;
/** The name of a JSON-RPC error code (`INVALID_PARAMS`, `DRAFT_ALREADY_ACTIVE`, …). */
export type RpcErrorName = keyof typeof RpcErrorCode;
export type RpcErrorCodeValue = (typeof RpcErrorCode)[RpcErrorName];

const namesByCode = new Map<number, RpcErrorName>(
  (Object.entries(RpcErrorCode) as Array<[RpcErrorName, number]>).map(([name, code]) => [code, name]),
);

/** The name of a numeric code (`-32004` → `DRAFT_ALREADY_ACTIVE`), or undefined for a code Parley does not define. */
export function rpcErrorName(code: number): RpcErrorName | undefined {
  return namesByCode.get(code);
}

/** What the meaning of each code is, for the generated reference. */
export const RPC_ERROR_DESCRIPTIONS: Record<RpcErrorName, string> = {
  PARSE_ERROR: 'The frame is not valid JSON.',
  INVALID_REQUEST:
    'The JSON is not a JSON-RPC 2.0 request (missing `jsonrpc: "2.0"`, a bad `id`, no `method`, an empty batch).',
  METHOD_NOT_FOUND: 'No method of that name; `data.method` names it.',
  INVALID_PARAMS:
    "The params do not match the method's schema, or an id/slug is not valid; `data.issues` lists each problem as `path: message`.",
  INTERNAL_ERROR: 'An unexpected server fault; it is logged on the server. The request may be retried.',
  SERVER_ERROR: 'A typed Parley error without a numeric code of its own; `data.code` is its stable string code.',
  NOT_FOUND:
    "A project, task, role, agent, session, run (RUN_NOT_FOUND), schedule (SCHEDULE_NOT_FOUND) or a run's prompt (UNKNOWN_PROMPT) does not exist; the message names it.",
  DRAFT_ALREADY_ACTIVE: 'Seed 000: this channel already has an active draft; `undraft` first.',
  NO_ACTIVE_DRAFT: 'Seed 000: this channel has no active draft; `draft` first.',
  TURN_IN_PROGRESS: 'The draft is running a turn; wait for it to end or `cancel` it.',
  UNSUPPORTED:
    "The session's back end cannot do this, or this server runs no workflows (RUNS_NOT_ENABLED) or no schedules (SCHEDULES_NOT_ENABLED).",
  RATE_LIMITED: 'Too many requests on this connection; `data.retryAfterMs` says when to retry.',
  INVALID_STATE:
    "The session refuses this in its current state (archived, read only, compaction running), another server runs the draft (DRAFT_RUN_ELSEWHERE), or a run's prompt was already answered (PROMPT_ALREADY_ANSWERED).",
  SHUTTING_DOWN: 'The server is shutting down; reconnect.',
  NOT_ALLOWED:
    "This connection may not do this: pairing and managing devices need the server's own token, not a device's.",
};

/**
 * Maps the stable string code of a `ParleyError` to its JSON-RPC code. Codes not listed keep
 * their string in `data.code` under SERVER_ERROR: a typed error never turns into INTERNAL_ERROR.
 */
export const PARLEY_CODE_TO_RPC: Readonly<Record<string, RpcErrorCodeValue>> = {
  INVALID_INPUT: RpcErrorCode.INVALID_PARAMS,
  INVALID_ID: RpcErrorCode.INVALID_PARAMS,
  INVALID_PARAMS: RpcErrorCode.INVALID_PARAMS,
  NOT_FOUND: RpcErrorCode.NOT_FOUND,
  SESSION_NOT_FOUND: RpcErrorCode.NOT_FOUND,
  /** A fork point (a seq or a block id) the session does not have. */
  FORK_POINT_NOT_FOUND: RpcErrorCode.NOT_FOUND,
  /** A branch id (`list_branches`) or a checkpoint version the session does not have. */
  BRANCH_NOT_FOUND: RpcErrorCode.NOT_FOUND,
  CHECKPOINT_NOT_FOUND: RpcErrorCode.NOT_FOUND,
  /** A checkpoint version that summarizes a branch that was left, or history past the active branch's end. */
  CHECKPOINT_NOT_ON_BRANCH: RpcErrorCode.INVALID_STATE,
  /** A rewind or restore of files on a server with no snapshot store. */
  FILE_SNAPSHOTS_NOT_CONFIGURED: RpcErrorCode.UNSUPPORTED,
  /** A file restore that would overwrite files the user changed since (`data.files` lists them): ask again with `overwrite`. */
  RESTORE_CONFLICT: RpcErrorCode.INVALID_STATE,
  /** No file snapshot at or before that point, or none for the session. */
  SNAPSHOT_NOT_FOUND: RpcErrorCode.NOT_FOUND,
  NO_FILE_SNAPSHOTS: RpcErrorCode.NOT_FOUND,
  UNKNOWN_BACKEND: RpcErrorCode.INVALID_PARAMS,
  BACKEND_NOT_CONFIGURED: RpcErrorCode.UNSUPPORTED,
  PROJECT_NOT_FOUND: RpcErrorCode.NOT_FOUND,
  TASK_NOT_FOUND: RpcErrorCode.NOT_FOUND,
  ROLE_NOT_FOUND: RpcErrorCode.NOT_FOUND,
  AGENT_NOT_FOUND: RpcErrorCode.NOT_FOUND,
  /** Durable runs: an unknown run id, or a prompt the run does not have. */
  RUN_NOT_FOUND: RpcErrorCode.NOT_FOUND,
  UNKNOWN_PROMPT: RpcErrorCode.NOT_FOUND,
  /** Schedules: an unknown schedule id; a cron expression, time zone or target that cannot be used. */
  SCHEDULE_NOT_FOUND: RpcErrorCode.NOT_FOUND,
  INVALID_SCHEDULE: RpcErrorCode.INVALID_PARAMS,
  /** A fork of a run at a step its journal does not have; an answer at a step that is no question, or one it refuses. */
  RUN_STEP_NOT_FOUND: RpcErrorCode.NOT_FOUND,
  NOT_A_QUESTION: RpcErrorCode.INVALID_PARAMS,
  ANSWER_REFUSED: RpcErrorCode.INVALID_PARAMS,
  DRAFT_ALREADY_ACTIVE: RpcErrorCode.DRAFT_ALREADY_ACTIVE,
  NO_ACTIVE_DRAFT: RpcErrorCode.NO_ACTIVE_DRAFT,
  TURN_IN_PROGRESS: RpcErrorCode.TURN_IN_PROGRESS,
  UNSUPPORTED: RpcErrorCode.UNSUPPORTED,
  RATE_LIMITED: RpcErrorCode.RATE_LIMITED,
  READ_ONLY_SESSION: RpcErrorCode.INVALID_STATE,
  SESSION_ARCHIVED: RpcErrorCode.INVALID_STATE,
  /** Another live server runs the channel's draft (a shared database): reconnect to that server, or wait for its lease to end. */
  DRAFT_RUN_ELSEWHERE: RpcErrorCode.INVALID_STATE,
  COMPACTION_IN_PROGRESS: RpcErrorCode.INVALID_STATE,
  /** The second answer to one prompt: the first one stands. */
  PROMPT_ALREADY_ANSWERED: RpcErrorCode.INVALID_STATE,
  COMPACTION_NOTHING_TO_COMPACT: RpcErrorCode.INVALID_STATE,
  COMPACTION_STOPPED: RpcErrorCode.INVALID_STATE,
  COMPACTION_NO_PROGRESS: RpcErrorCode.INVALID_STATE,
  /** No summarizer configured: the server cannot compact on demand. */
  COMPACTION_NO_SUMMARIZER: RpcErrorCode.UNSUPPORTED,
  /** The server was started without a run service: it runs no workflows. */
  RUNS_NOT_ENABLED: RpcErrorCode.UNSUPPORTED,
  SCHEDULES_NOT_ENABLED: RpcErrorCode.UNSUPPORTED,
  INVALID_STATE: RpcErrorCode.INVALID_STATE,
  /** Goals: one already runs on the draft; none runs to stop. */
  GOAL_IN_PROGRESS: RpcErrorCode.INVALID_STATE,
  NO_GOAL: RpcErrorCode.NOT_FOUND,
  MANAGER_CLOSED: RpcErrorCode.SHUTTING_DOWN,
  SHUTTING_DOWN: RpcErrorCode.SHUTTING_DOWN,
  NOT_ALLOWED: RpcErrorCode.NOT_ALLOWED,
  /** An id `list_devices` does not show. */
  DEVICE_NOT_FOUND: RpcErrorCode.NOT_FOUND,
};

export function rpcCodeForParleyCode(code: string): RpcErrorCodeValue {
  return PARLEY_CODE_TO_RPC[code] ?? RpcErrorCode.SERVER_ERROR;
}

/** Structured data every Parley error response carries. */
export interface RpcErrorData {
  /** The stable string code (`DRAFT_ALREADY_ACTIVE`, `SESSION_NOT_FOUND`, `INVALID_PARAMS`…). */
  code?: string;
  fault?: ErrorFault;
  /** Param problems as `path: message` (INVALID_PARAMS). */
  issues?: string[];
  [key: string]: unknown;
}

/**
 * What the peer answered: an error that came over the wire, with its numeric code. Rebuilt on the
 * receiving side by `RpcError.fromWire`; local failures (closed connection, timeout) are
 * `ProtocolClientError` instead.
 */
export class RpcError extends Error {
  readonly code: number;
  readonly data: RpcErrorData;
  /** The method of the request this answers, when known. */
  readonly method: string | undefined;

  constructor(code: number, message: string, data: RpcErrorData = {}, method?: string) {
    super(message);
    this.name = 'RpcError';
    this.code = code;
    this.data = data;
    this.method = method;
  }

  /** The code's name (`NO_ACTIVE_DRAFT`), or undefined for a code Parley does not define. */
  get codeName(): RpcErrorName | undefined {
    return rpcErrorName(this.code);
  }

  /** The stable string code when the server sent one, else the numeric code's name. */
  get reason(): string | undefined {
    return typeof this.data.code === 'string' ? this.data.code : this.codeName;
  }

  get fault(): ErrorFault {
    const fault = this.data.fault;
    return fault === 'user' || fault === 'model' || fault === 'system' ? fault : 'system';
  }

  toWire(): WireError {
    return {
      code: this.code,
      message: this.message,
      ...(Object.keys(this.data).length > 0 ? { data: this.data } : {}),
    };
  }

  /** The factory: rebuilds the typed error from a response's `error` member. */
  static fromWire(error: WireError, method?: string): RpcError {
    const data =
      typeof error.data === 'object' && error.data !== null && !Array.isArray(error.data)
        ? (error.data as RpcErrorData)
        : error.data === undefined
          ? {}
          : { value: error.data };
    return new RpcError(error.code, error.message, data, method);
  }
}

/** Whether `error` is an `RpcError` (and, given `code`, one with that code). */
export function isRpcError(error: unknown, code?: number): error is RpcError {
  return error instanceof RpcError && (code === undefined || error.code === code);
}

/** The codes of the client's local errors (the connection closed, a request timed out, …), as opposed to the server's. */
export type ProtocolClientErrorCode =
  /** The connection closed while the request was pending, or the client was closed. */
  | 'CONNECTION_CLOSED'
  /** No answer within the request's timeout. */
  | 'TIMEOUT'
  /** The caller's AbortSignal fired. */
  | 'ABORTED'
  /** Could not connect (and reconnection is off or gave up). */
  | 'CONNECT_FAILED'
  /** The server answered with something that does not match the method's result schema. */
  | 'INVALID_RESPONSE';

/** A failure on this side of the connection: string code, never sent over the wire. */
export class ProtocolClientError extends ParleyError {
  declare readonly code: ProtocolClientErrorCode;
  constructor(code: ProtocolClientErrorCode, message: string, options: ParleyErrorOptions = {}) {
    super(code, message, { fault: 'system', ...options });
  }
}
