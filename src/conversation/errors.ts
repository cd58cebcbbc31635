/**
 * Whose fault an error is: the user's input or configuration, the model's output, or the system
 * (disk, network, a crashed process). UIs word their advice by it.
 */
export type ErrorFault = 'user' | 'model' | 'system';

/** What a typed error carries besides its code and message: whose fault it is, data fields and a cause. */
export interface ParleyErrorOptions {
  fault?: ErrorFault;
  data?: Record<string, unknown>;
  cause?: unknown;
}

/**
 * Base of every error Parley throws on purpose. `code` is stable (tests, the protocol and users'
 * code match on it); the message names the offending value and says what to do.
 */
export class ParleyError extends Error {
  readonly code: string;
  readonly fault: ErrorFault;
  readonly data: Record<string, unknown>;

  constructor(code: string, message: string, options: ParleyErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.fault = options.fault ?? 'system';
    this.data = options.data ?? {};
  }
}

/** Whether `error` is a Parley typed error (and, given `code`, one with that code). */
export function isParleyError(error: unknown, code?: string): error is ParleyError {
  return error instanceof ParleyError && (code === undefined || error.code === code);
}

/** Input that does not match its schema: names the field and the value. */
export class ValidationError extends ParleyError {
  constructor(message: string, options: ParleyErrorOptions = {}) {
    super('INVALID_INPUT', message, { fault: 'user', ...options });
  }
}

/** Formats zod issues as `path: message` lines, for error messages a user can act on. */
export function describeIssues(issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }>): string {
  return issues
    .map((issue) => `${issue.path.length > 0 ? issue.path.map(String).join('.') : '(root)'}: ${issue.message}`)
    .join('; ');
}
