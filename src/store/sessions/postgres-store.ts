import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { z } from 'zod';
import { ValidationError, describeIssues, type StreamEvent, type UnsequencedEvent } from '../../conversation/index.js';
import { StoreError } from '../errors.js';
import { KeyedQueue } from '../keyed-queue.js';
import {
  AgentDescriptionSchema,
  CheckpointSchema,
  ContextDocumentSchema,
  FeatureSchema,
  SessionRecordSchema,
  FeatureTaskSchema,
  type AgentDescription,
  type Checkpoint,
  type CheckpointInput,
  type ContextDocument,
  type Feature,
  type SessionFilter,
  type SessionRecord,
  type FeatureTask,
} from './records.js';
import { FORMAT_VERSION } from '../record-format.js';
import type { ReadLogOptions, SessionStore, StoreChange } from './session-store.js';
import {
  decodeCursor,
  encodeCursor,
  listingKeyOf,
  pageLimit,
  type SessionPage,
  type SessionPageQuery,
} from './session-page.js';
import { queryTerms, snippetOf, type SessionSearchQuery, type SessionSearchResult } from './session-search.js';
import { checkId, checkRecord, sessionNotFound, storeClosed } from '../validate.js';
import { AppendCommitter } from './postgres-append-committer.js';
import { SearchIndexer } from './postgres-search-indexer.js';
import { firstSeqOf } from './numbering.js';
import { ChangeListener, changeChannel } from './postgres-change-listener.js';
import {
  createPool,
  DEFAULT_ANSWER_TIMEOUT_MS,
  parseConnectionString,
  type ConnectionTarget,
} from '../postgres/connection.js';
import { errorCode, isConnectionFailure, SQLSTATE, storeErrorFrom, toStoreFailure } from '../postgres/errors.js';
import { queriesFor, type Queries } from './postgres-queries.js';
import { retryOnConnectionFailure } from '../postgres/retry.js';
import { checkSchemaName } from '../postgres/schema-name.js';
import { setUpSchema } from '../postgres/setup.js';
import { DEFAULT_POSTGRES_SCHEMA, type PostgresStoreOptions } from '../postgres/options.js';

/** Events read per query when loading a log; a longer log is read in pages of this size. */
const LOG_PAGE = 5_000;
/** Session records read per query when listing. */
const LIST_PAGE = 5_000;

/** Opens the store (see `createPostgresStore` in ./postgres.ts, which loads this module and `pg` on first use). */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<SessionStore> {
  const target = parseConnectionString(options?.connectionString);
  const schema = checkSchemaName(options.schema ?? DEFAULT_POSTGRES_SCHEMA);
  const quotedSchema = pg.escapeIdentifier(schema);
  const pool = createPool({
    connectionString: options.connectionString,
    size: options.poolSize ?? 10,
    connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
    ...(options.answerTimeoutMs !== undefined ? { answerTimeoutMs: options.answerTimeoutMs } : {}),
  });
  try {
    await setUpSchema(pool, schema, quotedSchema, target, undefined, { existingOnly: options.existingOnly === true });
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
  const notify = { channel: changeChannel(schema), origin: randomUUID() };
  if (options.existingOnly !== true)
    await pruneAppendGroups(pool, queriesFor(quotedSchema), appendGroupRetentionMs(options.retryForMs ?? 30_000));
  const listener = new ChangeListener({
    connectionString: options.connectionString,
    connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
    ...notify,
  });
  return new PostgresStore(
    pool,
    queriesFor(quotedSchema),
    target,
    { retryForMs: options.retryForMs ?? 30_000, answerTimeoutMs: options.answerTimeoutMs ?? DEFAULT_ANSWER_TIMEOUT_MS },
    notify,
    listener,
    options.sweepSearchIndex !== false,
  );
}

class PostgresStore implements SessionStore {
  readonly kind = 'postgres';
  private closed = false;
  private closing: Promise<void> | undefined;
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Updates of one session (and checkpoint writes) take turns here, so they do not all hold a connection waiting on one row lock. */
  private readonly queue = new KeyedQueue();
  private readonly committer: AppendCommitter;
  /** Indexes appended messages for search just after they commit, and before each search. */
  private readonly indexer: SearchIndexer;
  private readonly retryForMs: number;
  /** Prunes old group ids while the store stays open (a long-running server). */
  private readonly pruning: NodeJS.Timeout;

  constructor(
    private readonly pool: pg.Pool,
    private readonly sql: Queries,
    private readonly target: ConnectionTarget,
    bounds: { retryForMs: number; answerTimeoutMs: number },
    /** The schema's NOTIFY channel and this instance's origin (postgres-change-listener.ts). */
    private readonly notify: { channel: string; origin: string },
    private readonly listener: ChangeListener,
    sweepSearchIndex: boolean,
  ) {
    this.retryForMs = bounds.retryForMs;
    this.indexer = new SearchIndexer({ pool, statement: sql.indexPendingMessages });
    this.committer = new AppendCommitter({
      pool,
      queries: sql,
      target,
      ...bounds,
      notify,
      onCommit: () => this.indexer.schedule(),
    });
    // What a server that stopped before indexing left (its groups), or rows written by other means (a sweep).
    if (sweepSearchIndex) this.indexer.sweep();
    else this.indexer.schedule(0);
    this.pruning = setInterval(
      () => void pruneAppendGroups(pool, sql, appendGroupRetentionMs(bounds.retryForMs)),
      PRUNE_INTERVAL_MS,
    );
    this.pruning.unref();
  }

  /**
   * Appends and record updates made through other instances on this schema, heard on one LISTEN
   * connection (made on the first call). The database sends them at COMMIT, so a report always
   * follows a durable change; after the connection drops and comes back, `unknown` says some may be lost.
   */
  watch(onChange: (change: StoreChange) => void): () => void {
    if (this.closed) throw storeClosed(this.kind);
    return this.listener.watch(onChange);
  }

  /** Runs a call unless the store is closed, and tracks it so `close()` waits for it. */
  private guard<T>(task: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(storeClosed(this.kind));
    const running = task();
    this.inFlight.add(running);
    const forget = () => this.inFlight.delete(running);
    running.then(forget, forget);
    return running;
  }

  /**
   * One statement, run again on a new connection if the connection fails (a restarted server, an
   * ended backend). Only for statements safe to repeat: reads and upserts.
   */
  private query<Row extends pg.QueryResultRow>(text: string, values: unknown[], action: string): Promise<Row[]> {
    return retryOnConnectionFailure(
      this.retryForMs,
      async () => (await this.pool.query<Row>(text, values)).rows,
      (error) => toStoreFailure(error, this.target, action),
    );
  }

  // Sessions

  createSession(record: SessionRecord): Promise<SessionRecord> {
    return this.guard(async () => {
      const id = checkId(record?.sessionId, 'session id');
      const stored = checkRecord(SessionRecordSchema, record, 'session record');
      const columns = sessionColumns(stored);
      const created = await retryOnConnectionFailure(
        this.retryForMs,
        async (afterFailure) => {
          const before = firstSeqOf(stored) - 1;
          if ((await this.pool.query(this.sql.insertSession, [id, ...columns, before])).rowCount === 1) return true;
          // The insert found the id taken: by this very call, when an earlier attempt committed but its answer was lost.
          if (!afterFailure) return false;
          const { rows } = await this.pool.query<{ record: string }>(this.sql.selectSession, [id]);
          return rows[0]?.record === columns[0];
        },
        (error) => toStoreFailure(error, this.target, 'create a session'),
      );
      if (!created) {
        throw new StoreError('SESSION_EXISTS', `A session "${id}" already exists; pick another id or load that one.`, {
          fault: 'user',
          data: { sessionId: id },
        });
      }
      return stored;
    });
  }

  getSession(sessionId: string): Promise<SessionRecord | undefined> {
    return this.guard(async () => {
      const id = checkId(sessionId, 'session id');
      const [row] = await this.query<{ record: string }>(this.sql.selectSession, [id], 'read a session');
      return row === undefined ? undefined : sessionRecordOf(row.record, id);
    });
  }

  updateSession(sessionId: string, update: (current: SessionRecord) => SessionRecord): Promise<SessionRecord> {
    return this.guard(async () => {
      const id = checkId(sessionId, 'session id');
      return this.queue.run(id, () =>
        this.transaction('update a session', async (client) => {
          const { rows } = await client.query<{ record: string }>(this.sql.selectSessionForUpdate, [id]);
          if (rows[0] === undefined) throw sessionNotFound(id);
          const next = checkRecord(SessionRecordSchema, update(sessionRecordOf(rows[0].record, id)), 'session record');
          if (next.sessionId !== id) {
            throw new ValidationError(`An update of session "${id}" may not change its id (got "${next.sessionId}").`, {
              data: { sessionId: id, newSessionId: next.sessionId },
            });
          }
          await client.query(this.sql.updateSession, [
            id,
            ...sessionColumns(next),
            this.notify.channel,
            this.notify.origin,
          ]);
          return next;
        }),
      );
    });
  }

  /**
   * Runs `work` in a transaction on one connection; any failure rolls it back. A connection that
   * fails before COMMIT is sent left nothing behind, so the whole transaction runs again on a new
   * one; a failure during COMMIT leaves the outcome unknown and is reported as such, never repeated.
   */
  private transaction<T>(action: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return retryOnConnectionFailure(
      this.retryForMs,
      async () => {
        const client = await this.pool.connect();
        const ignore = () => undefined;
        client.on('error', ignore);
        let broken = false;
        let committing = false;
        try {
          await client.query('BEGIN');
          const result = await work(client);
          committing = true;
          await client.query('COMMIT');
          return result;
        } catch (error) {
          if (isConnectionFailure(error)) broken = true;
          else await client.query('ROLLBACK').catch(() => (broken = true));
          if (committing && isConnectionFailure(error)) throw this.commitUnknown(action, error);
          throw error;
        } finally {
          client.off('error', ignore);
          client.release(broken);
        }
      },
      (error) => toStoreFailure(error, this.target, action),
    );
  }

  private commitUnknown(action: string, error: unknown): StoreError {
    const cause = storeErrorFrom(error, this.target, action);
    return new StoreError(
      'STORE_UNAVAILABLE',
      `The connection to PostgreSQL was lost while committing (trying to ${action}); the change may or may not be saved. ` +
        `Read it back once the server answers. (${cause.message})`,
      { fault: 'system', cause: error, data: { ...cause.data, outcomeUnknown: true } },
    );
  }

  async *listSessions(filter?: SessionFilter): AsyncGenerator<SessionRecord> {
    if (this.closed) throw storeClosed(this.kind);
    const { used, clauses, mask } = filterClauses(filter, 3);
    const page = {
      name: `parley_list_sessions_${mask}`,
      text: this.sql.listSessions(clauses),
      rowMode: 'array' as const,
    };
    let after = '';
    for (;;) {
      const values = [after, LIST_PAGE, ...used.map(([, value]) => value)];
      const rows = await retryOnConnectionFailure(
        this.retryForMs,
        async () => (await this.pool.query<[string, string]>({ ...page, values })).rows,
        (error) => toStoreFailure(error, this.target, 'list sessions'),
      );
      for (const [sessionId, record] of rows) yield sessionRecordOf(record, sessionId);
      if (rows.length < LIST_PAGE) return;
      after = rows.at(-1)![0];
    }
  }

  listSessionPage(query: SessionPageQuery = {}): Promise<SessionPage> {
    return this.guard(async () => {
      const limit = pageLimit(query.limit);
      const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
      const { used, clauses, mask } = filterClauses(query.filter, 6);
      const rows = await retryOnConnectionFailure(
        this.retryForMs,
        async () =>
          (
            await this.pool.query<[string, string]>({
              name: `parley_list_session_page_${mask}`,
              text: this.sql.listSessionPage(clauses),
              rowMode: 'array',
              values: [
                after?.pinned ?? false,
                after?.activity ?? 0,
                after?.sessionId ?? '',
                after !== undefined,
                limit + 1,
                ...used.map(([, value]) => value),
              ],
            })
          ).rows,
        (error) => toStoreFailure(error, this.target, 'list sessions'),
      );
      const sessions = rows.slice(0, limit).map(([sessionId, record]) => sessionRecordOf(record, sessionId));
      return {
        sessions,
        ...(rows.length > limit ? { nextCursor: encodeCursor(listingKeyOf(sessions.at(-1)!)) } : {}),
      };
    });
  }

  searchSessions(query: SessionSearchQuery): Promise<SessionSearchResult> {
    return this.guard(async () => {
      const { terms, limit } = queryTerms(query);
      if (terms.length === 0) return { hits: [], terms };
      type Row = {
        session_id: string;
        seq: number;
        block_id: string;
        conversation_id: string;
        role: string;
        at: number;
        content: string;
      };
      // Every message acknowledged before this search began is indexed first (a quick check when none is pending).
      await retryOnConnectionFailure(
        this.retryForMs,
        () => this.indexer.catchUp(),
        (error) => toStoreFailure(error, this.target, 'index messages for search'),
      );
      const rows = await this.query<Row>(this.sql.searchMessages, [terms.join(' '), limit], 'search sessions');
      return {
        hits: rows.map((row) => ({
          sessionId: row.session_id,
          seq: row.seq,
          blockId: row.block_id,
          conversationId: row.conversation_id,
          role: row.role === 'user' ? ('user' as const) : ('assistant' as const),
          snippet: snippetOf(row.content, terms),
          at: row.at,
        })),
        terms,
      };
    });
  }

  // Log

  append(sessionId: string, events: readonly UnsequencedEvent[]): Promise<StreamEvent[]> {
    // Not through guard(): the committer holds every append until it settles, and close() waits
    // for it (idle()); the hot path skips a promise and a set entry per call.
    if (this.closed) return Promise.reject(storeClosed(this.kind));
    try {
      return this.committer.append(checkId(sessionId, 'session id'), events);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async *readLog(sessionId: string, options: ReadLogOptions = {}): AsyncGenerator<StreamEvent> {
    if (this.closed) throw storeClosed(this.kind);
    const id = checkId(sessionId, 'session id');
    // Everything at or below the last seq seen now is committed: it was numbered in the transaction that inserted it.
    const lastSeq = await this.lastSeqOf(id);
    const through = Math.min(lastSeq, bound(options.throughSeq) ?? lastSeq);
    let after = Math.max(-1, bound(options.afterSeq) ?? -1);
    while (after < through) {
      const rows = await this.readEventPage(id, after, through);
      for (const [seq, body] of rows) yield eventOf(body, id, seq);
      if (rows.length < LOG_PAGE) return;
      after = rows.at(-1)![0];
    }
  }

  /** Rows as `[seq, body]` arrays from a named statement: loading 10,000 events builds no row objects and plans nothing. */
  private readEventPage(id: string, after: number, through: number): Promise<Array<[number, string]>> {
    const page = {
      name: 'parley_read_events',
      text: this.sql.readEvents,
      values: [id, after, through, LOG_PAGE],
      rowMode: 'array' as const,
    };
    return retryOnConnectionFailure(
      this.retryForMs,
      async () => (await this.pool.query<[number, string]>(page)).rows,
      (error) => toStoreFailure(error, this.target, 'read a session log'),
    );
  }

  lastSeq(sessionId: string): Promise<number> {
    return this.guard(async () => this.lastSeqOf(checkId(sessionId, 'session id')));
  }

  private async lastSeqOf(id: string): Promise<number> {
    const [row] = await this.query<{ last_seq: number }>(this.sql.lastSeq, [id], 'read a session log');
    if (row === undefined) throw sessionNotFound(id);
    return row.last_seq;
  }

  // Checkpoints

  writeCheckpoint(sessionId: string, input: CheckpointInput): Promise<Checkpoint> {
    return this.guard(async () => {
      const id = checkId(sessionId, 'session id');
      /** The checkpoint last sent: if a lost answer hid its commit, it is the newest version now. */
      let sent: string | undefined;
      const attempt = async (): Promise<Checkpoint> => {
        // Another process may take the same version first: its row stays, and this one takes the next.
        for (;;) {
          const { rows } = await this.pool.query<{ newest: number }>(this.sql.newestCheckpointVersion, [id]);
          if (rows[0] === undefined) throw sessionNotFound(id);
          const newest = rows[0].newest;
          if (sent !== undefined && newest > 0) {
            const stored = await this.pool.query<{ body: string | null }>(this.sql.checkpointVersion, [id, newest]);
            if (stored.rows[0]?.body === sent) return parseCheckpoint(sent, id);
          }
          const checkpoint = checkRecord(
            CheckpointSchema,
            { ...input, formatVersion: FORMAT_VERSION, sessionId: id, version: newest + 1 },
            'checkpoint',
          );
          sent = JSON.stringify(checkpoint);
          if ((await this.pool.query(this.sql.insertCheckpoint, [id, checkpoint.version, sent])).rowCount === 1)
            return checkpoint;
        }
      };
      return this.queue.run(`checkpoint:${id}`, () =>
        retryOnConnectionFailure(this.retryForMs, attempt, (error) =>
          toStoreFailure(error, this.target, 'write a checkpoint'),
        ),
      );
    });
  }

  readCheckpoint(sessionId: string, version?: number): Promise<Checkpoint | undefined> {
    return this.guard(async () => {
      const id = checkId(sessionId, 'session id');
      const wanted =
        version === undefined || (Number.isInteger(version) && version >= 1 && version <= 2 ** 31 - 1) ? version : 0;
      const [row] =
        wanted === undefined
          ? await this.query<{ body: string | null }>(this.sql.newestCheckpoint, [id], 'read a checkpoint')
          : await this.query<{ body: string | null }>(this.sql.checkpointVersion, [id, wanted], 'read a checkpoint');
      if (row === undefined) throw sessionNotFound(id);
      return row.body === null ? undefined : parseCheckpoint(row.body, id);
    });
  }

  listCheckpoints(sessionId: string): Promise<Checkpoint[]> {
    return this.guard(async () => {
      const id = checkId(sessionId, 'session id');
      const rows = await this.query<{ body: string | null }>(this.sql.allCheckpoints, [id], 'read checkpoints');
      if (rows.length === 0) throw sessionNotFound(id);
      return rows.flatMap((row) => (row.body === null ? [] : [parseCheckpoint(row.body, id)]));
    });
  }

  // Context, agent description, transcripts

  writeContext(document: ContextDocument): Promise<void> {
    return this.guard(async () => {
      const id = checkId(document?.sessionId, 'session id');
      await this.writeOwned(
        id,
        'context_documents',
        JSON.stringify(checkRecord(ContextDocumentSchema, document, 'context document')),
      );
    });
  }

  readContext(sessionId: string): Promise<ContextDocument | undefined> {
    return this.guard(async () =>
      this.readOwned(checkId(sessionId, 'session id'), 'context_documents', ContextDocumentSchema),
    );
  }

  writeAgentDescription(description: AgentDescription): Promise<void> {
    return this.guard(async () => {
      const id = checkId(description?.sessionId, 'session id');
      const body = JSON.stringify(checkRecord(AgentDescriptionSchema, description, 'agent description'));
      await this.writeOwned(id, 'agent_descriptions', body);
    });
  }

  readAgentDescription(sessionId: string): Promise<AgentDescription | undefined> {
    return this.guard(async () =>
      this.readOwned(checkId(sessionId, 'session id'), 'agent_descriptions', AgentDescriptionSchema),
    );
  }

  private async writeOwned(id: string, table: 'context_documents' | 'agent_descriptions', body: string): Promise<void> {
    await this.write(
      id,
      this.sql.putDocument(table),
      [id, body],
      `write the ${table === 'context_documents' ? 'context document' : 'agent description'}`,
    );
  }

  private async readOwned<Schema extends typeof ContextDocumentSchema | typeof AgentDescriptionSchema>(
    id: string,
    table: 'context_documents' | 'agent_descriptions',
    schema: Schema,
  ): Promise<z.infer<Schema> | undefined> {
    const [row] = await this.query<{ body: string | null }>(
      this.sql.getDocument(table),
      [id],
      'read a session document',
    );
    if (row === undefined) throw sessionNotFound(id);
    return row.body === null
      ? undefined
      : (documentOf(schema, row.body, `${table} row of session "${id}"`) as z.infer<Schema>);
  }

  /** An upsert into a table whose rows belong to a session: a missing session shows as a foreign-key violation. */
  private async write(id: string, text: string, values: unknown[], action: string): Promise<void> {
    try {
      await this.query(text, values, action);
    } catch (error) {
      if (errorCode((error as { cause?: unknown }).cause) === SQLSTATE.foreignKeyViolation) throw sessionNotFound(id);
      throw error;
    }
  }

  writeTranscript(sessionId: string, name: string, content: string): Promise<void> {
    return this.guard(async () => {
      const id = checkId(sessionId, 'session id');
      const transcriptName = checkId(name, 'transcript name');
      await this.write(
        id,
        this.sql.putTranscript,
        [id, transcriptName, Buffer.from(String(content), 'utf8')],
        'write a transcript',
      );
    });
  }

  readTranscript(sessionId: string, name: string): Promise<string | undefined> {
    return this.guard(async () => {
      const id = checkId(sessionId, 'session id');
      const [row] = await this.query<{ content: Buffer | null }>(
        this.sql.getTranscript,
        [id, checkId(name, 'transcript name')],
        'read a transcript',
      );
      if (row === undefined) throw sessionNotFound(id);
      return row.content === null ? undefined : row.content.toString('utf8');
    });
  }

  listTranscripts(sessionId: string): Promise<string[]> {
    return this.guard(async () => {
      const id = checkId(sessionId, 'session id');
      const rows = await this.query<{ name: string | null }>(this.sql.listTranscripts, [id], 'list transcripts');
      if (rows.length === 0) throw sessionNotFound(id);
      return rows.flatMap((row) => (row.name === null ? [] : [row.name]));
    });
  }

  // Features and tasks

  putFeature(feature: Feature): Promise<void> {
    return this.guard(async () => {
      const checked = checkRecord(FeatureSchema, feature, 'feature');
      await this.query(this.sql.putFeature, [checked.featureId, JSON.stringify(checked)], 'write a feature');
    });
  }

  getFeature(featureId: string): Promise<Feature | undefined> {
    return this.guard(async () => {
      const id = checkId(featureId, 'feature id');
      const [row] = await this.query<{ body: string }>(this.sql.getFeature, [id], 'read a feature');
      return row === undefined ? undefined : documentOf(FeatureSchema, row.body, `feature "${id}"`);
    });
  }

  listFeatures(): Promise<Feature[]> {
    return this.guard(async () => {
      const rows = await this.query<{ body: string }>(this.sql.listFeatures, [], 'list features');
      return rows.map((row) => documentOf(FeatureSchema, row.body, 'feature'));
    });
  }

  putFeatureTask(task: FeatureTask): Promise<void> {
    return this.guard(async () => {
      const checked = checkRecord(FeatureTaskSchema, task, 'task');
      await this.query(
        this.sql.putFeatureTask,
        [checked.featureId, checked.taskId, JSON.stringify(checked)],
        'write a task',
      );
    });
  }

  getFeatureTask(featureId: string, taskId: string): Promise<FeatureTask | undefined> {
    return this.guard(async () => {
      const feature = checkId(featureId, 'feature id');
      const task = checkId(taskId, 'task id');
      const [row] = await this.query<{ body: string }>(this.sql.getFeatureTask, [feature, task], 'read a task');
      return row === undefined ? undefined : documentOf(FeatureTaskSchema, row.body, `task "${feature}/${task}"`);
    });
  }

  listFeatureTasks(featureId?: string): Promise<FeatureTask[]> {
    return this.guard(async () => {
      const feature = featureId === undefined ? null : checkId(featureId, 'feature id');
      const rows = await this.query<{ body: string }>(this.sql.listFeatureTasks, [feature], 'list tasks');
      return rows.map((row) => documentOf(FeatureTaskSchema, row.body, 'task'));
    });
  }

  /** Waits for every call in flight (appends until they commit), then ends the pool. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      clearInterval(this.pruning);
      this.listener.stop();
      while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
      await this.committer.idle();
      await this.indexer.stop();
      await this.pool.end();
    })();
    return this.closing;
  }
}

/** How often an open store prunes `append_groups`. */
const PRUNE_INTERVAL_MS = 10 * 60_000;

/**
 * How long a group id is kept. It only matters while an append whose COMMIT answer was lost may be
 * sent again, which is at most `retryForMs` after its first attempt; an hour (or ten retry windows)
 * is far past that.
 */
export function appendGroupRetentionMs(retryForMs: number): number {
  return Math.max(60 * 60_000, 10 * retryForMs);
}

/**
 * Deletes group ids no retry can need any more, so `append_groups` does not grow with every append
 * for ever. Best effort: a role without DELETE on the table (an owner-managed schema) keeps them, and
 * a failure here never fails the store.
 */
async function pruneAppendGroups(pool: pg.Pool, sql: Queries, retentionMs: number): Promise<void> {
  await pool.query(sql.pruneAppendGroups, [retentionMs]).catch(() => undefined);
}

/** The filterable columns beside a session's record, in the order of the insert and update statements. */
/**
 * The WHERE clauses of a listing filter, numbered from `$first`, and a bit mask of the filters used:
 * a named statement per combination, planned once per connection.
 */
function filterClauses(
  filter: SessionFilter | undefined,
  first: number,
): { used: Array<[string, string | boolean]>; clauses: string[]; mask: number } {
  const filters: Array<[clause: string, value: string | boolean | undefined]> = [
    ['status = $', filter?.status],
    ['backend_type = $', filter?.type],
    ['agent_type = $', filter?.agentType],
    ['scope_kind = $', filter?.scopeKind],
    ['feature_id = $', filter?.featureId],
    ['task_id = $', filter?.taskId],
    ['task_state = $', filter?.taskState],
    ['tags ? $', filter?.tag],
    ['pinned = $', filter?.pinned],
  ];
  const used = filters.filter((entry): entry is [string, string | boolean] => entry[1] !== undefined);
  const clauses = used.map(([clause], index) => `${clause}${index + first}`);
  const mask = filters.reduce((bits, [, value], index) => (value === undefined ? bits : bits | (1 << index)), 0);
  return { used, clauses, mask };
}

function sessionColumns(record: SessionRecord): unknown[] {
  const scope = record.scope;
  const featureId = scope.kind === 'feature' || scope.kind === 'task' ? scope.featureId : null;
  return [
    JSON.stringify(record),
    record.status,
    record.type,
    record.agentType,
    scope.kind,
    featureId,
    scope.kind === 'task' ? scope.taskId : null,
    scope.kind === 'task' ? scope.taskState : null,
  ];
}

/**
 * A session record as stored. Validated when written, so reading checks only the format version:
 * listing 10,000 sessions must not run 10,000 schema parses.
 */
function sessionRecordOf(text: string, sessionId: string): SessionRecord {
  const record = parseStored(text, `session "${sessionId}"`) as SessionRecord;
  checkFormatVersion(record, `session "${sessionId}"`);
  return record;
}

function parseCheckpoint(body: string, sessionId: string): Checkpoint {
  return documentOf(CheckpointSchema, body, `checkpoint of session "${sessionId}"`);
}

/** A small stored document, checked against its schema (a fresh object every time). */
function documentOf<Schema extends z.ZodType>(schema: Schema, text: string, what: string): z.infer<Schema> {
  const value = parseStored(text, what);
  checkFormatVersion(value, what);
  const result = schema.safeParse(value);
  if (!result.success) throw corruptRow(what, `it does not match its schema: ${describeIssues(result.error.issues)}`);
  return result.data as z.infer<Schema>;
}

/** An event as stored: its JSON plus the session id and seq kept in columns. */
function eventOf(body: string, sessionId: string, seq: number): StreamEvent {
  const event = parseStored(body, `event ${seq} of session "${sessionId}"`) as StreamEvent;
  if (typeof event.type !== 'string')
    throw corruptRow(`event ${seq} of session "${sessionId}"`, 'it has no event type');
  event.sessionId = sessionId;
  event.seq = seq;
  return event;
}

function parseStored(text: string, what: string): { formatVersion?: unknown } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw corruptRow(what, `it is not valid JSON (${error instanceof Error ? error.message : String(error)})`, error);
  }
  if (typeof value !== 'object' || value === null) throw corruptRow(what, 'it is not a JSON object');
  return value as { formatVersion?: unknown };
}

function checkFormatVersion(value: { formatVersion?: unknown }, what: string): void {
  if (value.formatVersion === FORMAT_VERSION) return;
  if (typeof value.formatVersion === 'number' && value.formatVersion > FORMAT_VERSION) {
    throw new StoreError(
      'UNSUPPORTED_FORMAT_VERSION',
      `The stored ${what} has format version ${value.formatVersion}, newer than this Parley reads (${FORMAT_VERSION}). Upgrade Parley to read it.`,
      { fault: 'user', data: { formatVersion: value.formatVersion } },
    );
  }
  throw corruptRow(what, `its format version is ${JSON.stringify(value.formatVersion)}, not ${FORMAT_VERSION}`);
}

function corruptRow(what: string, problem: string, cause?: unknown): StoreError {
  return new StoreError(
    'CORRUPT_FILE',
    `The stored ${what} cannot be read: ${problem}. It was changed outside Parley; restore it from a backup.`,
    {
      fault: 'system',
      cause,
      data: { record: what },
    },
  );
}

/** A read window bound as a whole number (seq > 1.5 is seq > 1), or undefined when absent. */
function bound(value: number | undefined): number | undefined {
  return value === undefined || Number.isNaN(value) ? undefined : Math.floor(value);
}
