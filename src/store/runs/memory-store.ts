import type { RunRecord } from './records.js';
import { checkFromSeq, checkJournalDrafts, checkRun, runExists, runNotFound } from './rules.js';
import { matchesRunFilter, newestFirst, type RunJournalEntry, type RunStore } from './run-store.js';
import { checkId, storeClosed } from '../validate.js';

/** The reference RunStore: everything in memory, cloned on every read and write. */
export function createMemoryRunStore(): RunStore {
  const runs = new Map<string, { record: RunRecord; journal: RunJournalEntry[] }>();
  let closed = false;
  const copy = <T>(value: T): T => structuredClone(value);

  function entryOf(runId: string): { record: RunRecord; journal: RunJournalEntry[] } {
    if (closed) throw storeClosed('memory run');
    const entry = runs.get(checkId(runId, 'run id'));
    if (!entry) throw runNotFound(runId);
    return entry;
  }

  return {
    kind: 'memory',
    async createRun(input) {
      if (closed) throw storeClosed('memory run');
      const record = checkRun(input);
      if (runs.has(record.id)) throw runExists(record.id);
      runs.set(record.id, { record, journal: [] });
      return copy(record);
    },
    async getRun(runId) {
      if (closed) throw storeClosed('memory run');
      const entry = runs.get(checkId(runId, 'run id'));
      return entry ? copy(entry.record) : undefined;
    },
    async listRuns(filter) {
      if (closed) throw storeClosed('memory run');
      return [...runs.values()]
        .map((entry) => entry.record)
        .filter((record) => matchesRunFilter(record, filter))
        .sort(newestFirst)
        .map(copy);
    },
    async updateRun(input) {
      const record = checkRun(input);
      entryOf(record.id).record = record;
      return copy(record);
    },
    async appendJournal(runId, drafts) {
      const entry = entryOf(runId);
      const checked = checkJournalDrafts(runId, drafts);
      const at = new Date().toISOString();
      const written = checked.map((draft, index) => ({
        seq: entry.journal.length + index,
        kind: draft.kind,
        at,
        data: draft.data,
      }));
      entry.journal.push(...written);
      return copy(written);
    },
    async readJournal(runId, options) {
      const from = checkFromSeq(options?.fromSeq);
      return copy(entryOf(runId).journal.slice(from));
    },
    async close() {
      closed = true;
    },
  };
}
