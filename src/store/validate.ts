import type { z } from 'zod';
import { ValidationError, describeIssues } from '../conversation/index.js';
import { StoreError } from './errors.js';
import { ID_PATTERN, IdSchema } from './record-format.js';

/**
 * Checks an id or slug a caller passed. Every path a store builds is made of ids that passed here,
 * so nothing a caller passes can leave the data folder.
 */
export function checkId(value: unknown, what: string): string {
  const result = IdSchema.safeParse(value);
  if (result.success) return result.data;
  const shown =
    typeof value === 'string' ? JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value) : String(value);
  throw new StoreError(
    'INVALID_ID',
    `Invalid ${what} ${shown}: it ${result.error.issues.map((issue) => issue.message).join(' and ')}.`,
    { fault: 'user', data: { field: what, value } },
  );
}

/**
 * Validates a record a caller asks the store to persist, so that nothing unreadable is ever
 * written; returns a fresh copy (the caller's object is never kept).
 */
export function checkRecord<Schema extends z.ZodType>(schema: Schema, value: unknown, what: string): z.infer<Schema> {
  const result = schema.safeParse(value);
  if (!result.success) {
    // A bad id anywhere in the record (a task's dependencies too) is reported as INVALID_ID, naming it.
    const idIssue = result.error.issues.find(isIdIssue);
    if (idIssue !== undefined) checkId(valueAt(value, idIssue.path), idIssue.path.map(String).join('.'));
    throw new ValidationError(`Refusing to store an invalid ${what}: ${describeIssues(result.error.issues)}.`, {
      data: { record: what, issues: result.error.issues },
    });
  }
  return structuredClone(result.data) as z.infer<Schema>;
}

export function sessionNotFound(sessionId: string): StoreError {
  return new StoreError(
    'SESSION_NOT_FOUND',
    `No session "${sessionId}" in this store. List sessions to see the ids that exist.`,
    { fault: 'user', data: { sessionId } },
  );
}

export function storeClosed(kind: string): StoreError {
  return new StoreError('STORE_CLOSED', `The ${kind} store is closed; open it again to use it.`, { fault: 'system' });
}

function isIdIssue(issue: z.core.$ZodIssue): boolean {
  return (
    (issue.code === 'invalid_format' && 'pattern' in issue && issue.pattern === String(ID_PATTERN)) ||
    (issue.code === 'custom' && issue.message === 'must not contain ".."')
  );
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let current = value;
  for (const key of path) current = (current as Record<PropertyKey, unknown> | undefined)?.[key];
  return current;
}
