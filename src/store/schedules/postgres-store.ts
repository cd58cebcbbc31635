import pg from 'pg';
import { createPool, parseConnectionString, type ConnectionTarget } from '../postgres/connection.js';
import { toStoreFailure } from '../postgres/errors.js';
import { DEFAULT_POSTGRES_SCHEMA, type PostgresStoreOptions } from '../postgres/options.js';
import { retryOnConnectionFailure } from '../postgres/retry.js';
import { checkSchemaName } from '../postgres/schema-name.js';
import { setUpSchema } from '../postgres/setup.js';
import { checkId, storeClosed } from '../validate.js';
import { ScheduleFiringSchema, ScheduleRecordSchema, type ScheduleFiring, type ScheduleRecord } from './records.js';
import { checkFiring, checkLimit, checkSchedule, firingNotFound, scheduleExists, scheduleNotFound } from './rules.js';
import { oldestFirst, type ScheduleStore } from './schedule-store.js';

/** Opens the store (see `createPostgresScheduleStore` in ./postgres.ts, which loads this module and `pg` on first use). */
export async function openPostgresScheduleStore(options: PostgresStoreOptions): Promise<ScheduleStore> {
  const target = parseConnectionString(options?.connectionString);
  const schema = checkSchemaName(options.schema ?? DEFAULT_POSTGRES_SCHEMA);
  const quotedSchema = pg.escapeIdentifier(schema);
  const pool = createPool({
    connectionString: options.connectionString,
    size: options.poolSize ?? 2,
    connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
  });
  try {
    await setUpSchema(pool, schema, quotedSchema, target, undefined, { existingOnly: options.existingOnly ?? false });
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
  return new PostgresScheduleStore(pool, scheduleQueriesFor(quotedSchema), target, options.retryForMs ?? 30_000);
}

/** Every statement the store runs, qualified by its (already quoted) schema; each is its own transaction. */
function scheduleQueriesFor(schema: string) {
  const schedules = `${schema}.schedules`;
  const firings = `${schema}.schedule_firings`;
  return {
    insert: `INSERT INTO ${schedules} (schedule_id, revision, created_at, record) VALUES ($1, 0, $2, $3)
      ON CONFLICT (schedule_id) DO NOTHING RETURNING schedule_id`,
    get: `SELECT record FROM ${schedules} WHERE schedule_id = $1`,
    list: `SELECT record FROM ${schedules}`,
    /**
     * The compare-and-set: under the row's lock a second writer of the same revision re-reads the
     * row, finds the revision moved on and updates nothing. The firing is inserted by the same
     * statement, so the claim and its firing commit together; a firing already stored for that due
     * time fails the whole statement on the primary key (read as a conflict).
     */
    update: `WITH updated AS (
        UPDATE ${schedules} SET revision = revision + 1, record = $3
        WHERE schedule_id = $1 AND revision = $2 RETURNING schedule_id
      ), inserted AS (
        INSERT INTO ${firings} (schedule_id, fire_at, record)
        SELECT schedule_id, $4, $5 FROM updated WHERE $4::text IS NOT NULL RETURNING 1
      )
      SELECT (SELECT count(*) FROM updated)::int AS updated`,
    exists: `SELECT 1 FROM ${schedules} WHERE schedule_id = $1`,
    updateFiring: `UPDATE ${firings} SET record = $3 WHERE schedule_id = $1 AND fire_at = $2 RETURNING 1`,
    listFirings: `SELECT record FROM ${firings} WHERE schedule_id = $1 ORDER BY fire_at DESC LIMIT $2`,
    remove: `DELETE FROM ${schedules} WHERE schedule_id = $1 RETURNING 1`,
  };
}
type ScheduleQueries = ReturnType<typeof scheduleQueriesFor>;

const UNIQUE_VIOLATION = '23505';

/** The ScheduleStore on PostgreSQL (tables in migration 5 of migrations.ts). */
class PostgresScheduleStore implements ScheduleStore {
  readonly kind = 'postgres';
  private closed = false;
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly sql: ScheduleQueries,
    private readonly target: ConnectionTarget,
    private readonly retryForMs: number,
  ) {}

  private guard<T>(task: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(storeClosed('PostgreSQL schedule'));
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

  createSchedule(input: ScheduleRecord): Promise<ScheduleRecord> {
    return this.guard(async () => {
      const record = { ...checkSchedule(input), revision: 0 };
      const text = JSON.stringify(record);
      const inserted = await retryOnConnectionFailure(
        this.retryForMs,
        async (afterFailure) => {
          if ((await this.pool.query(this.sql.insert, [record.id, record.createdAt, text])).rows.length > 0)
            return true;
          // A retry may find its own earlier commit: the same record is there.
          if (afterFailure) {
            const [row] = (await this.pool.query<{ record: string }>(this.sql.get, [record.id])).rows;
            return row?.record === text;
          }
          return false;
        },
        (error) => toStoreFailure(error, this.target, 'create a schedule'),
      );
      if (!inserted) throw scheduleExists(record.id);
      return structuredClone(record);
    });
  }

  getSchedule(scheduleId: string): Promise<ScheduleRecord | undefined> {
    return this.guard(async () => {
      const id = checkId(scheduleId, 'schedule id');
      const [row] = await this.rows<{ record: string }>(this.sql.get, [id], 'read a schedule');
      return row ? ScheduleRecordSchema.parse(JSON.parse(row.record)) : undefined;
    });
  }

  listSchedules(): Promise<ScheduleRecord[]> {
    return this.guard(async () => {
      const rows = await this.rows<{ record: string }>(this.sql.list, [], 'list schedules');
      return rows.map((row) => ScheduleRecordSchema.parse(JSON.parse(row.record))).sort(oldestFirst);
    });
  }

  updateSchedule(input: ScheduleRecord, options?: { firing?: ScheduleFiring }): Promise<ScheduleRecord | undefined> {
    return this.guard(async () => {
      const checked = checkSchedule(input);
      const firing = options?.firing ? checkFiring(options.firing, checked.id) : undefined;
      const record = { ...checked, revision: checked.revision + 1 };
      const text = JSON.stringify(record);
      const written = await retryOnConnectionFailure(
        this.retryForMs,
        async (afterFailure) => {
          try {
            const [row] = (
              await this.pool.query<{ updated: number }>(this.sql.update, [
                record.id,
                checked.revision,
                text,
                firing?.fireAt ?? null,
                firing ? JSON.stringify(firing) : null,
              ])
            ).rows;
            if ((row?.updated ?? 0) > 0) return true;
          } catch (error) {
            if ((error as { code?: unknown }).code === UNIQUE_VIOLATION) return false;
            throw error;
          }
          // A retry may find its own earlier commit: this very record is stored.
          const [stored] = (await this.pool.query<{ record: string }>(this.sql.get, [record.id])).rows;
          if (!stored) return 'missing' as const;
          return afterFailure && stored.record === text;
        },
        (error) => toStoreFailure(error, this.target, 'update a schedule'),
      );
      if (written === 'missing') throw scheduleNotFound(record.id);
      return written ? structuredClone(record) : undefined;
    });
  }

  updateFiring(input: ScheduleFiring): Promise<void> {
    return this.guard(async () => {
      const firing = checkFiring(input);
      const rows = await this.rows(
        this.sql.updateFiring,
        [firing.scheduleId, firing.fireAt, JSON.stringify(firing)],
        'update a schedule firing',
      );
      if (rows.length > 0) return;
      if ((await this.rows(this.sql.exists, [firing.scheduleId], 'read a schedule')).length === 0)
        throw scheduleNotFound(firing.scheduleId);
      throw firingNotFound(firing);
    });
  }

  listFirings(scheduleId: string, options?: { limit?: number }): Promise<ScheduleFiring[]> {
    return this.guard(async () => {
      const id = checkId(scheduleId, 'schedule id');
      const limit = checkLimit(options?.limit);
      const rows = await this.rows<{ record: string }>(this.sql.listFirings, [id, limit ?? null], 'list firings');
      if (rows.length === 0 && (await this.rows(this.sql.exists, [id], 'read a schedule')).length === 0)
        throw scheduleNotFound(id);
      return rows.map((row) => ScheduleFiringSchema.parse(JSON.parse(row.record)));
    });
  }

  removeSchedule(scheduleId: string): Promise<boolean> {
    return this.guard(async () => {
      const id = checkId(scheduleId, 'schedule id');
      return (await this.rows(this.sql.remove, [id], 'remove a schedule')).length > 0;
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([...this.inFlight]);
    await this.pool.end().catch(() => undefined);
  }
}
