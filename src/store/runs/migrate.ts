import { sameJson } from '../canonical-json.js';
import type { RunJournalEntry, RunStore } from './run-store.js';

/**
 * Copying durable runs from one RunStore to another (`parley migrate`): each run's record and its
 * journal, so a run waiting for an answer in a data folder still waits, with the same question, once
 * its server moves to PostgreSQL. A run the target already holds is continued when its journal is a
 * prefix of the source's (a migration repeated after the source ran on), left unchanged when both
 * match, and left alone as a conflict when the target's journal differs or is longer: the target's
 * copy then ran on its own, and neither side may be overwritten.
 *
 * Entries keep their seq, kind and data; their `at` is when the target wrote them, as for any append.
 */
export type RunMigrationStatus = 'copied' | 'continued' | 'unchanged' | 'conflict' | 'failed';

export interface RunMigration {
  runId: string;
  status: RunMigrationStatus;
  /** Journal entries in the source. */
  entries: number;
  /** Entries appended to the target by this migration. */
  written: number;
  /** The target's record and journal read back equal to the source's. */
  verified: boolean;
  reason?: string;
}

export interface RunMigrationReport {
  runs: RunMigration[];
  /** Every run copied, continued or unchanged, and verified. */
  ok: boolean;
}

/** Appends per durable write: a long journal is copied in a few appends, not one per entry. */
const ENTRIES_PER_APPEND = 500;

/** Copies every run and its journal from one run store to another, skipping what the target already holds. */
export async function migrateRuns(source: RunStore, target: RunStore): Promise<RunMigrationReport> {
  const runs: RunMigration[] = [];
  for (const record of (await source.listRuns()).reverse()) {
    runs.push(await migrateRun(source, target, record.id));
  }
  return { runs, ok: runs.every((run) => run.verified && run.status !== 'conflict' && run.status !== 'failed') };
}

async function migrateRun(source: RunStore, target: RunStore, runId: string): Promise<RunMigration> {
  let entries = 0;
  const written = 0;
  try {
    const record = await source.getRun(runId);
    if (record === undefined)
      return {
        runId,
        status: 'failed',
        entries,
        written,
        verified: false,
        reason: 'the run disappeared from the source while it was being copied',
      };
    const journal = await source.readJournal(runId);
    entries = journal.length;
    const existing = await target.getRun(runId);
    let status: RunMigrationStatus;
    if (existing === undefined) {
      await target.createRun(record);
      status = 'copied';
    } else {
      const held = await target.readJournal(runId);
      const conflict = held.length > journal.length || held.some((entry, index) => !sameEntry(entry, journal[index]!));
      if (conflict) {
        return {
          runId,
          status: 'conflict',
          entries,
          written,
          verified: false,
          reason: `the target's journal of this run (${held.length} entries) is not a prefix of the source's (${journal.length}): it ran on in the target, so neither copy was changed`,
        };
      }
      status = held.length === journal.length && sameJson(existing, record) ? 'unchanged' : 'continued';
      journal.splice(0, held.length);
      if (!sameJson(existing, record)) await target.updateRun(record);
    }
    const remaining = journal.length;
    for (let start = 0; start < remaining; start += ENTRIES_PER_APPEND) {
      await target.appendJournal(
        runId,
        journal.slice(start, start + ENTRIES_PER_APPEND).map((entry) => ({ kind: entry.kind, data: entry.data })),
      );
    }
    return { runId, status, entries, written: remaining, verified: await verify(source, target, runId) };
  } catch (error) {
    return {
      runId,
      status: 'failed',
      entries,
      written,
      verified: false,
      reason: error instanceof Error ? error.message : String(error),
    };
  }
}

function sameEntry(left: RunJournalEntry, right: RunJournalEntry): boolean {
  return left.seq === right.seq && left.kind === right.kind && sameJson(left.data, right.data);
}

async function verify(source: RunStore, target: RunStore, runId: string): Promise<boolean> {
  const [record, copy, journal, copied] = await Promise.all([
    source.getRun(runId),
    target.getRun(runId),
    source.readJournal(runId),
    target.readJournal(runId),
  ]);
  return (
    sameJson(record, copy) &&
    journal.length === copied.length &&
    journal.every((entry, index) => sameEntry(entry, copied[index]!))
  );
}
