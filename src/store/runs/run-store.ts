import * as z from 'zod';
import type { RunRecord, RunStatus } from './records.js';

/**
 * Where durable harness runs live: each run's record, and its journal, an append-only
 * list of entries numbered 0, 1, 2… The harness writes to the journal every result the workflow
 * could not compute again (agent turns, user replies, timeouts, messages, time and random values)
 * before the workflow sees it; a restarted process reads it back to re-execute the run.
 * Implementations: file (the data folder), memory (tests), PostgreSQL. Every one passes
 * `test/store/runs/conformance.ts`.
 *
 * Every implementer must:
 * - validate run ids with `IdSchema` (INVALID_ID) and every record with RunRecordSchema
 *   (a ValidationError) before touching anything, and never keep or hand out a caller's objects;
 * - resolve `appendJournal` only once the entries are durable (or, asked for `sync: 'deferred'`,
 *   written where a crash of the process cannot lose them, and durable soon after: see
 *   AppendJournalOptions), number them in call order with no gap, and never change an entry once
 *   written;
 * - after `close()`, reject every call with `STORE_CLOSED`.
 */
export interface RunStore {
  readonly kind: string;
  /** Stores a new run; `RUN_EXISTS` when its id is taken. */
  createRun(record: RunRecord): Promise<RunRecord>;
  /** The run, or undefined. */
  getRun(runId: string): Promise<RunRecord | undefined>;
  /** Newest first (by `createdAt`, then id). */
  listRuns(filter?: RunStoreFilter): Promise<RunRecord[]>;
  /** Replaces the run's record; `RUN_NOT_FOUND` for an unknown id. */
  updateRun(record: RunRecord): Promise<RunRecord>;
  /**
   * Appends entries to the run's journal, in order, durably; resolves with them numbered.
   * `RUN_NOT_FOUND` for an unknown run. Concurrent appends to one run are numbered in call order.
   */
  appendJournal(
    runId: string,
    entries: readonly UnsequencedJournalEntry[],
    options?: AppendJournalOptions,
  ): Promise<RunJournalEntry[]>;
  /** The run's journal from `fromSeq` (default 0) on; `RUN_NOT_FOUND` for an unknown run. */
  readJournal(runId: string, options?: { fromSeq?: number }): Promise<RunJournalEntry[]>;
  /** Waits for pending writes, then refuses every call with `STORE_CLOSED`. */
  close(): Promise<void>;
}

/**
 * How soon an append must be durable. `'now'` (the default): the append resolves once its entries
 * are on stable storage. `'deferred'`: it resolves once they are written where a crash of the
 * process (SIGKILL included) cannot lose them, and they become durable with the run's next `'now'`
 * append or record update, at `close()`, or within the store's deferred-sync delay, whichever
 * comes first; only a crash of the machine inside that window can lose them, and then only as the
 * journal's newest entries (a later durable append covers every earlier one). The harness asks it
 * for agent turn results alone, whose loss makes the turn run again on resume, as a turn cut by a
 * crash does. A store may always make an append durable at once.
 */
export interface AppendJournalOptions {
  sync?: 'now' | 'deferred';
}

/** What a run store's `list` selects on: project and status. */
export interface RunStoreFilter {
  project?: string;
  status?: readonly RunStatus[];
}

/**
 * One journal entry. `kind` and `data` belong to the harness (its own schemas check them); the
 * store keeps them as JSON. `at` is when the entry was written.
 */
export const RunJournalEntrySchema = z.object({
  seq: z.number().int().nonnegative(),
  kind: z.string().min(1),
  at: z.iso.datetime({ offset: true }),
  data: z.unknown(),
});
/** One journaled result of a durable run (an agent turn, an answer, a timeout, a time or random value). */
export type RunJournalEntry = z.infer<typeof RunJournalEntrySchema>;

export const UnsequencedJournalEntrySchema = z.object({
  kind: z.string().min(1),
  data: z.unknown().optional(),
});
export type UnsequencedJournalEntry = z.infer<typeof UnsequencedJournalEntrySchema>;

/** Newest first, by creation time then id (a stable order for runs created in one millisecond). */
export function newestFirst(a: RunRecord, b: RunRecord): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? 1 : -1;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

export function matchesRunFilter(record: RunRecord, filter: RunStoreFilter | undefined): boolean {
  if (filter?.project !== undefined && record.project !== filter.project) return false;
  if (filter?.status !== undefined && !filter.status.includes(record.status)) return false;
  return true;
}
