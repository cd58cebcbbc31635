import * as z from 'zod';
import { ValidationError, describeIssues } from '../../conversation/index.js';
import { StoreError } from '../errors.js';
import { RunRecordSchema, type RunRecord } from './records.js';
import { UnsequencedJournalEntrySchema, type UnsequencedJournalEntry } from './run-store.js';
import { checkId, checkRecord } from '../validate.js';

/** The checks every RunStore makes before it writes, so the three stores refuse the same things. */

export function checkRun(record: unknown): RunRecord {
  checkId((record as { id?: unknown } | null)?.id, 'run id');
  return checkRecord(RunRecordSchema, record, 'run record');
}

/** The drafts as JSON copies; a value JSON cannot keep (a function, a cycle) is refused. */
export function checkJournalDrafts(
  runId: string,
  entries: readonly UnsequencedJournalEntry[],
): UnsequencedJournalEntry[] {
  if (!Array.isArray(entries)) throw new ValidationError(`appendJournal(${runId}): entries must be a list.`);
  return entries.map((entry, index) => {
    const parsed = UnsequencedJournalEntrySchema.safeParse(entry);
    if (!parsed.success)
      throw new ValidationError(
        `Refusing journal entry ${index} of run "${runId}": ${describeIssues(parsed.error.issues)}.`,
      );
    let data: unknown;
    try {
      data = entry.data === undefined ? null : (JSON.parse(JSON.stringify(entry.data)) as unknown);
    } catch (error) {
      throw new ValidationError(
        `Refusing journal entry ${index} of run "${runId}": its data is not JSON (${(error as Error).message}).`,
      );
    }
    return { kind: parsed.data.kind, data };
  });
}

export function checkFromSeq(fromSeq: number | undefined): number {
  const value = fromSeq ?? 0;
  if (!Number.isInteger(value) || value < 0)
    throw new ValidationError(`readJournal: fromSeq must be a whole number of at least 0, not ${String(fromSeq)}.`);
  return value;
}

export function runNotFound(runId: string): StoreError {
  return new StoreError('RUN_NOT_FOUND', `No run "${runId}" in this store. List runs to see the ids that exist.`, {
    fault: 'user',
    data: { runId },
  });
}

export function runExists(runId: string): StoreError {
  return new StoreError('RUN_EXISTS', `A run "${runId}" is stored already; a new run needs a new id.`, {
    fault: 'user',
    data: { runId },
  });
}

/**
 * A run record read back from JSON. JSON has no `undefined`: a run started without input (or with
 * no state) comes back without the key, which the record's schema requires; it is put back.
 */
export const StoredRunRecordSchema = z.preprocess(
  (value) => (typeof value === 'object' && value !== null ? { input: undefined, state: undefined, ...value } : value),
  RunRecordSchema,
);
