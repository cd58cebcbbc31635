import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { KeyedQueue } from '../keyed-queue.js';
import type { RunRecord } from './records.js';
import { checkFromSeq, checkJournalDrafts, checkRun, runExists, runNotFound, StoredRunRecordSchema } from './rules.js';
import {
  newestFirst,
  type AppendJournalOptions,
  type RunJournalEntry,
  type UnsequencedJournalEntry,
  type RunStore,
  type RunStoreFilter,
} from './run-store.js';
import { checkId, storeClosed } from '../validate.js';
import { createPool, parseConnectionString, type ConnectionTarget } from '../postgres/connection.js';
import { toStoreFailure } from '../postgres/errors.js';
import { DEFAULT_POSTGRES_SCHEMA, type PostgresStoreOptions } from '../postgres/options.js';
import { retryOnConnectionFailure } from '../postgres/retry.js';
import { checkSchemaName } from '../postgres/schema-name.js';
import { setUpSchema } from '../postgres/setup.js';

/** Opens the store (see `createPostgresRunStore` in ./postgres.ts, which loads this module and `pg` on first use). */
export async function openPostgresRunStore(options: PostgresStoreOptions): Promise<RunStore> {
  const target = parseConnectionString(options?.connectionString);
  const schema = checkSchemaName(options.schema ?? DEFAULT_POSTGRES_SCHEMA);
  const quotedSchema = pg.escapeIdentifier(schema);
  const pool = createPool({
    connectionString: options.connectionString,
    size: options.poolSize ?? 4,
    connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
    ...(options.answerTimeoutMs !== undefined ? { answerTimeoutMs: options.answerTimeoutMs } : {}),
  });
  try {
    await setUpSchema(pool, schema, quotedSchema, target, undefined, { existingOnly: options.existingOnly ?? false });
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
  return new PostgresRunStore(pool, runQueriesFor(quotedSchema), target, options.retryForMs ?? 30_000);
}

/** Every statement the store runs, qualified by its (already quoted) schema; each is its own transaction. */
function runQueriesFor(schema: string) {
  const runs = `${schema}.runs`;
  const journals = `${schema}.run_journals`;
  const entries = `${schema}.run_journal_entries`;
  return {
    /** The record and its journal's counter, together; no row back: the id is taken. */
    insertRun: `WITH inserted AS (
        INSERT INTO ${runs} (run_id, project, status, created_at, record) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (run_id) DO NOTHING RETURNING run_id
      )
      INSERT INTO ${journals} (run_id) SELECT run_id FROM inserted RETURNING run_id`,
    getRun: `SELECT record FROM ${runs} WHERE run_id = $1`,
    listRuns: `SELECT record FROM ${runs} WHERE ($1::text IS NULL OR project = $1) AND ($2::text[] IS NULL OR status = ANY($2))`,
    updateRun: `UPDATE ${runs} SET project = $2, status = $3, record = $4 WHERE run_id = $1 RETURNING run_id`,
    /**
     * Appends entries numbered after the journal's last, under its counter row's lock. No row back:
     * the run does not exist.
     */
    append: appendQuery(journals, entries, false),
    /**
     * The same append committed asynchronously (`sync: 'deferred'`): `set_config(…, true)` is SET
     * LOCAL for this statement's own transaction, so its commit does not wait for the WAL flush,
     * which the WAL writer does within a few hundred ms, or the next synchronous commit sooner.
     */
    appendDeferred: appendQuery(journals, entries, true),
    /** An earlier attempt's commit of this append, if it reached the server. */
    appended: `SELECT seq, kind, data, at FROM ${entries} WHERE run_id = $1 AND append_id = $2 ORDER BY seq`,
    runExists: `SELECT 1 FROM ${runs} WHERE run_id = $1`,
    read: `SELECT seq, kind, data, at FROM ${entries} WHERE run_id = $1 AND seq >= $2 ORDER BY seq`,
  };
}
type RunQueries = ReturnType<typeof runQueriesFor>;

function appendQuery(journals: string, entries: string, asynchronousCommit: boolean): string {
  const settings = asynchronousCommit
    ? `settings AS (SELECT set_config('synchronous_commit', 'off', true) AS value),
      `
    : '';
  // Referenced in the UPDATE, so PostgreSQL cannot skip the setting's CTE.
  const applied = asynchronousCommit ? ' AND (SELECT value FROM settings) IS NOT NULL' : '';
  return `WITH ${settings}bumped AS (
        UPDATE ${journals} SET last_seq = last_seq + cardinality($2::text[]) WHERE run_id = $1${applied}
        RETURNING last_seq - cardinality($2::text[]) AS before
      )
      INSERT INTO ${entries} (run_id, seq, kind, data, at, append_id)
      SELECT $1, bumped.before + e.ord, e.kind, e.data, $4, $5 FROM bumped, unnest($2::text[], $3::text[]) WITH ORDINALITY AS e(kind, data, ord)
      RETURNING seq, kind, data, at`;
}

interface EntryRow {
  seq: string;
  kind: string;
  data: string;
  at: string;
}

/**
 * The RunStore on PostgreSQL (tables in migration 3 of migrations.ts), beside the session and draft
 * stores in the same schema, so a server on PostgreSQL keeps its runs in the database too. Appends
 * to one run are sent one at a time in call order; across processes the journal's counter row
 * keeps seqs consecutive.
 */
class PostgresRunStore implements RunStore {
  readonly kind = 'postgres';
  private closed = false;
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly appends = new KeyedQueue();

  constructor(
    private readonly pool: pg.Pool,
    private readonly sql: RunQueries,
    private readonly target: ConnectionTarget,
    private readonly retryForMs: number,
  ) {}

  private guard<T>(task: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(storeClosed('PostgreSQL run'));
    const running = task();
    this.inFlight.add(running);
    const forget = (): void => void this.inFlight.delete(running);
    running.then(forget, forget);
    return running;
  }

  private async rows<Row extends pg.QueryResultRow>(text: string, values: unknown[], action: string): Promise<Row[]> {
    return retryOnConnectionFailure(
      this.retryForMs,
      async () => (await this.pool.query<Row>(text, values)).rows,
      (error) => toStoreFailure(error, this.target, action),
    );
  }

  createRun(input: RunRecord): Promise<RunRecord> {
    return this.guard(async () => {
      const record = checkRun(input);
      const inserted = await retryOnConnectionFailure(
        this.retryForMs,
        async (afterFailure) => {
          const rows = (
            await this.pool.query(this.sql.insertRun, [
              record.id,
              record.project ?? null,
              record.status,
              record.createdAt,
              JSON.stringify(record),
            ])
          ).rows;
          if (rows.length > 0) return true;
          // A retry may find its own earlier commit: the same record is there.
          if (afterFailure) {
            const [row] = (await this.pool.query<{ record: string }>(this.sql.getRun, [record.id])).rows;
            return row?.record === JSON.stringify(record);
          }
          return false;
        },
        (error) => toStoreFailure(error, this.target, 'create a run'),
      );
      if (!inserted) throw runExists(record.id);
      return structuredClone(record);
    });
  }

  getRun(runId: string): Promise<RunRecord | undefined> {
    return this.guard(async () => {
      const id = checkId(runId, 'run id');
      const [row] = await this.rows<{ record: string }>(this.sql.getRun, [id], 'read a run');
      return row ? StoredRunRecordSchema.parse(JSON.parse(row.record)) : undefined;
    });
  }

  listRuns(filter?: RunStoreFilter): Promise<RunRecord[]> {
    return this.guard(async () => {
      const rows = await this.rows<{ record: string }>(
        this.sql.listRuns,
        [filter?.project ?? null, filter?.status ? [...filter.status] : null],
        'list runs',
      );
      return rows.map((row) => StoredRunRecordSchema.parse(JSON.parse(row.record))).sort(newestFirst);
    });
  }

  updateRun(input: RunRecord): Promise<RunRecord> {
    return this.guard(async () => {
      const record = checkRun(input);
      const rows = await this.rows(
        this.sql.updateRun,
        [record.id, record.project ?? null, record.status, JSON.stringify(record)],
        'update a run',
      );
      if (rows.length === 0) throw runNotFound(record.id);
      return structuredClone(record);
    });
  }

  appendJournal(
    runId: string,
    drafts: readonly UnsequencedJournalEntry[],
    options?: AppendJournalOptions,
  ): Promise<RunJournalEntry[]> {
    return this.guard(async () => {
      const id = checkId(runId, 'run id');
      const query = options?.sync === 'deferred' ? this.sql.appendDeferred : this.sql.append;
      const checked = checkJournalDrafts(id, drafts);
      if (checked.length === 0) {
        if ((await this.rows(this.sql.runExists, [id], 'read a run')).length === 0) throw runNotFound(id);
        return [];
      }
      const appendId = randomUUID();
      const at = new Date().toISOString();
      const kinds = checked.map((draft) => draft.kind);
      const data = checked.map((draft) => JSON.stringify(draft.data ?? null));
      const rows = await this.appends.run(id, () =>
        retryOnConnectionFailure(
          this.retryForMs,
          async (afterFailure) => {
            if (afterFailure) {
              const earlier = (await this.pool.query<EntryRow>(this.sql.appended, [id, appendId])).rows;
              if (earlier.length > 0) return earlier;
            }
            return (await this.pool.query<EntryRow>(query, [id, kinds, data, at, appendId])).rows;
          },
          (error) => toStoreFailure(error, this.target, 'append to a run journal'),
        ),
      );
      if (rows.length === 0) throw runNotFound(id);
      return rows.map(entryOf).sort((a, b) => a.seq - b.seq);
    });
  }

  readJournal(runId: string, options?: { fromSeq?: number }): Promise<RunJournalEntry[]> {
    return this.guard(async () => {
      const id = checkId(runId, 'run id');
      const from = checkFromSeq(options?.fromSeq);
      const rows = await this.rows<EntryRow>(this.sql.read, [id, from], 'read a run journal');
      if (rows.length === 0 && (await this.rows(this.sql.runExists, [id], 'read a run')).length === 0)
        throw runNotFound(id);
      return rows.map(entryOf);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([...this.inFlight]);
    await this.pool.end().catch(() => undefined);
  }
}

function entryOf(row: EntryRow): RunJournalEntry {
  return { seq: Number(row.seq), kind: row.kind, at: row.at, data: JSON.parse(row.data) as unknown };
}
