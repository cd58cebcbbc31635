import path from 'node:path';
import pg from 'pg';
import type { z } from 'zod';
import { describeIssues, ValidationError } from '../../conversation/index.js';
import { checkLeaseInput, noActiveDraft, type DraftLeaseHolder, type DraftLeaseResult } from './lease.js';
import {
  DraftSessionSchema,
  NewProjectSchema,
  TaskFileSchema,
  type DraftSession,
  type NewProject,
  type ProjectRecord,
  type RoleText,
  type RoleTextError,
  type TaskFile,
  type UnreadableDraft,
} from './records.js';
import { checkProjectInput, type DraftStoreHome } from './home.js';
import {
  byStart,
  checkDraft,
  checkSameDraft,
  claimConflict,
  projectExists,
  projectNotFound,
  taskExists,
  taskNotFound,
} from './rules.js';
import type { DraftStore } from './draft-store.js';
import { StoreError } from '../errors.js';
import { checkId, checkRecord, storeClosed } from '../validate.js';
import { createPool, parseConnectionString, type ConnectionTarget } from '../postgres/connection.js';
import { draftQueriesFor, type DraftQueries } from './postgres-queries.js';
import { errorCode, SQLSTATE, toStoreFailure } from '../postgres/errors.js';
import { DEFAULT_POSTGRES_SCHEMA } from '../postgres/options.js';
import type { PostgresDraftStoreOptions } from './postgres-options.js';
import { retryOnConnectionFailure } from '../postgres/retry.js';
import { checkSchemaName } from '../postgres/schema-name.js';
import { setUpSchema } from '../postgres/setup.js';

/** A refused claim or lease whose holder let go before it was read is tried again, this many times. */
const MAX_RACE_RETRIES = 10;

/** Opens the store (see `createPostgresDraftStore` in ./postgres.ts, which loads this module and `pg` on first use). */
export async function openPostgresDraftStore(options: PostgresDraftStoreOptions): Promise<DraftStore> {
  const target = parseConnectionString(options?.connectionString);
  const schema = checkSchemaName(options.schema ?? DEFAULT_POSTGRES_SCHEMA);
  const home = checkProjectInput(options.home);
  const quotedSchema = pg.escapeIdentifier(schema);
  const pool = createPool({
    connectionString: options.connectionString,
    size: options.poolSize ?? 4,
    connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
    ...(options.answerTimeoutMs !== undefined ? { answerTimeoutMs: options.answerTimeoutMs } : {}),
  });
  const sql = draftQueriesFor(quotedSchema);
  const retryForMs = options.retryForMs ?? 30_000;
  try {
    await setUpSchema(pool, schema, quotedSchema, target, undefined, { existingOnly: options.existingOnly ?? false });
    // A store opened only to read (existingOnly) writes nothing, not even its home project.
    if ((options.registerHome ?? true) && !options.existingOnly) {
      await retryOnConnectionFailure(
        retryForMs,
        () => pool.query(sql.registerHome, [home.name, home.path, new Date().toISOString()]),
        (error) => toStoreFailure(error, target, 'register the home project'),
      );
    }
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
  return new PostgresDraftStore(pool, sql, target, retryForMs, home, schema);
}

interface ProjectRow {
  name: string;
  path: string | null;
  description: string | null;
  created_at: string;
}

/**
 * The DraftStore on PostgreSQL (tables in migration 2 of migrations.ts). Records are their JSON
 * text; the claim is the two partial unique indexes over active drafts; leases expire by the
 * database's clock. Paths: a project's `path` is where its agents work; its `dataDir` is
 * `<path>/.parley` and task folders are named under it as in the file store, but nothing is written
 * there: a server on this store keeps no state on disk. The home project reports the folders it was
 * opened with (each server has its own checkout), and a project created without a path is placed
 * under each server's own home data folder (`<home dataDir>/projects/<name>`).
 */
class PostgresDraftStore implements DraftStore {
  readonly kind = 'postgres';
  private closed = false;
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly sql: DraftQueries,
    private readonly target: ConnectionTarget,
    private readonly retryForMs: number,
    private readonly home: DraftStoreHome,
    private readonly schema: string,
  ) {}

  /** Runs a call unless the store is closed, and tracks it so `close()` waits for it. */
  private guard<T>(task: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(storeClosed('PostgreSQL draft'));
    const running = task();
    this.inFlight.add(running);
    const forget = () => this.inFlight.delete(running);
    running.then(forget, forget);
    return running;
  }

  /**
   * One statement, run again on a new connection if the connection fails. `attempt` is told when an
   * earlier attempt may have reached the server, so a write can recognise its own earlier commit.
   */
  private run<T>(action: string, attempt: (afterFailure: boolean) => Promise<T>): Promise<T> {
    return retryOnConnectionFailure(this.retryForMs, attempt, (error) => toStoreFailure(error, this.target, action));
  }

  private async rows<Row extends pg.QueryResultRow>(text: string, values: unknown[], action: string): Promise<Row[]> {
    return this.run(action, async () => (await this.pool.query<Row>(text, values)).rows);
  }

  // ---- projects ---------------------------------------------------------------------------------

  private record(row: ProjectRow): ProjectRecord {
    if (row.name === this.home.name) {
      return {
        ...this.home,
        ...(row.description ? { description: row.description } : {}),
        createdAt: row.created_at,
        home: true,
      };
    }
    const folder = row.path ?? path.join(this.home.dataDir, 'projects', row.name);
    return {
      name: row.name,
      path: folder,
      dataDir: path.join(folder, '.parley'),
      ...(row.description ? { description: row.description } : {}),
      createdAt: row.created_at,
      home: false,
    };
  }

  private async project(name: string): Promise<ProjectRecord> {
    const id = checkId(name, 'project');
    const [row] = await this.rows<ProjectRow>(this.sql.getProject, [id], 'read a project');
    if (!row) throw projectNotFound(id);
    return this.record(row);
  }

  listProjects(): Promise<ProjectRecord[]> {
    return this.guard(async () => {
      const records = (await this.rows<ProjectRow>(this.sql.listProjects, [], 'list projects')).map((row) =>
        this.record(row),
      );
      // The home project first, then the others in the order they were created.
      return [...records.filter((project) => project.home), ...records.filter((project) => !project.home)];
    });
  }

  getProject(name: string): Promise<ProjectRecord | undefined> {
    return this.guard(async () => {
      const [row] = await this.rows<ProjectRow>(this.sql.getProject, [checkId(name, 'project')], 'read a project');
      return row ? this.record(row) : undefined;
    });
  }

  createProject(input: NewProject): Promise<ProjectRecord> {
    return this.guard(async () => {
      checkId(input?.name, 'project');
      const project = checkRecord(NewProjectSchema, input, 'project');
      const folder = project.path === undefined ? null : path.resolve(this.home.path, project.path);
      const values = [project.name, folder, project.description ?? null, project.createdAt];
      await this.run('create a project', async (afterFailure) => {
        try {
          await this.pool.query(this.sql.insertProject, values);
        } catch (error) {
          if (errorCode(error) !== SQLSTATE.uniqueViolation) throw error;
          // Taken: by this very call when an earlier attempt committed but its answer was lost.
          const [row] = afterFailure
            ? await this.pool.query<ProjectRow>(this.sql.getProject, [project.name]).then((result) => result.rows)
            : [];
          if (!row || row.path !== folder || row.created_at !== project.createdAt || row.description !== values[2])
            throw projectExists(project.name);
        }
      });
      return this.record({
        name: project.name,
        path: folder,
        description: project.description ?? null,
        created_at: project.createdAt,
      });
    });
  }

  // ---- tasks ------------------------------------------------------------------------------------

  listTasks(project: string): Promise<TaskFile[]> {
    return this.guard(async () => {
      const { name } = await this.project(project);
      const rows = await this.rows<{ body: string }>(this.sql.listTasks, [name], 'list tasks');
      return rows.map((row) => parseRecord(TaskFileSchema, row.body, `task of project "${name}"`));
    });
  }

  getTask(project: string, slug: string): Promise<TaskFile | undefined> {
    return this.guard(async () => {
      const { name } = await this.project(project);
      const [row] = await this.rows<{ body: string }>(
        this.sql.getTask,
        [name, checkId(slug, 'task slug')],
        'read a task',
      );
      return row ? parseRecord(TaskFileSchema, row.body, `task "${slug}" of project "${name}"`) : undefined;
    });
  }

  createTask(project: string, input: TaskFile): Promise<TaskFile> {
    return this.guard(async () => {
      const name = checkId(project, 'project');
      checkId(input?.slug, 'task slug');
      const task = checkRecord(TaskFileSchema, input, 'task');
      const body = JSON.stringify(task);
      await this.run('create a task', async (afterFailure) => {
        try {
          await this.pool.query(this.sql.insertTask, [name, task.slug, body]);
        } catch (error) {
          if (errorCode(error) === SQLSTATE.foreignKeyViolation) throw projectNotFound(name);
          if (errorCode(error) !== SQLSTATE.uniqueViolation) throw error;
          const [row] = afterFailure
            ? (await this.pool.query<{ body: string }>(this.sql.getTask, [name, task.slug])).rows
            : [];
          if (row?.body !== body) throw taskExists(name, task.slug);
        }
      });
      return task;
    });
  }

  // ---- drafts -----------------------------------------------------------------------------------

  private draftOf(body: string, what: string): DraftSession {
    return parseRecord(DraftSessionSchema, body, what);
  }

  getDraft(project: string, slug: string): Promise<DraftSession | undefined> {
    return this.guard(async () => {
      const { name } = await this.project(project);
      const [row] = await this.rows<{ body: string }>(
        this.sql.currentDraft,
        [name, checkId(slug, 'task slug')],
        'read a draft',
      );
      return row ? this.draftOf(row.body, `draft of task "${slug}" of project "${name}"`) : undefined;
    });
  }

  findActiveDraft(channelId: string): Promise<DraftSession | undefined> {
    return this.guard(async () => {
      const [row] = await this.rows<{ body: string }>(
        this.sql.activeDraftOfChannel,
        [channelId],
        'find the draft of a channel',
      );
      return row ? this.draftOf(row.body, `active draft of channel "${channelId}"`) : undefined;
    });
  }

  listActiveDrafts(
    filter: { project?: string } = {},
  ): Promise<{ drafts: DraftSession[]; unreadable: UnreadableDraft[] }> {
    return this.guard(async () => {
      const project = filter.project === undefined ? null : (await this.project(filter.project)).name;
      const rows = await this.rows<{ draft_id: string; body: string }>(
        this.sql.activeDrafts,
        [project],
        'list active drafts',
      );
      const drafts: DraftSession[] = [];
      const unreadable: UnreadableDraft[] = [];
      for (const row of rows) {
        try {
          drafts.push(this.draftOf(row.body, `draft ${row.draft_id}`));
        } catch (error) {
          unreadable.push({
            location: `postgres:${this.schema}.drafts/${row.draft_id}`,
            reason: error instanceof Error ? error.message : String(error),
          });
        }
      }
      return { drafts, unreadable };
    });
  }

  listClosedDrafts(project: string, slug: string): Promise<DraftSession[]> {
    return this.guard(async () => {
      const { name } = await this.project(project);
      const rows = await this.rows<{ body: string }>(
        this.sql.closedDrafts,
        [name, checkId(slug, 'task slug')],
        'list closed drafts',
      );
      return rows
        .map((row) => this.draftOf(row.body, `closed draft of task "${slug}" of project "${name}"`))
        .sort(byStart);
    });
  }

  claimDraft(input: DraftSession): Promise<DraftSession> {
    return this.guard(async () => {
      const draft = checkDraft(input, 'active', 'claimDraft');
      const body = JSON.stringify(draft);
      const values = [draft.sessionId, draft.project, draft.taskSlug, draft.channelId, body];
      for (let races = 0; ; races++) {
        const outcome = await this.run('claim a draft', async (afterFailure) => {
          try {
            return (await this.pool.query(this.sql.claimDraft, values)).rowCount === 1
              ? ('claimed' as const)
              : ('no task' as const);
          } catch (error) {
            if (errorCode(error) !== SQLSTATE.uniqueViolation) throw error;
            const held = (
              await this.pool.query<{ body: string }>(this.sql.holders, [
                draft.channelId,
                draft.project,
                draft.taskSlug,
              ])
            ).rows;
            // This very claim, committed by an earlier attempt whose answer was lost.
            if (afterFailure && held.some((row) => row.body === body)) return 'claimed' as const;
            const conflict = claimConflict(
              draft,
              held.map((row) => this.draftOf(row.body, 'active draft')),
            );
            if (conflict) throw conflict;
            return 'holder let go' as const;
          }
        });
        if (outcome === 'claimed') return structuredClone(draft);
        if (outcome === 'no task') {
          await this.project(draft.project);
          throw taskNotFound(draft.project, draft.taskSlug);
        }
        // The holder released between the refusal and the read: claim again.
        if (races >= MAX_RACE_RETRIES)
          throw new StoreError(
            'STORE_IO',
            `Could not claim draft "${draft.sessionId}": its channel and task kept changing hands; try again.`,
          );
      }
    });
  }

  updateDraft(input: DraftSession): Promise<DraftSession> {
    return this.guard(async () => this.save(checkDraft(input, 'active', 'updateDraft')));
  }

  releaseDraft(input: DraftSession): Promise<DraftSession> {
    return this.guard(async () => this.save(checkDraft(input, 'closed', 'releaseDraft')));
  }

  private async save(draft: DraftSession): Promise<DraftSession> {
    const { name } = await this.project(draft.project);
    const values = [name, draft.taskSlug, draft.sessionId, draft.channelId, JSON.stringify(draft), draft.status];
    for (let races = 0; races <= MAX_RACE_RETRIES; races++) {
      const saved = await this.rows(this.sql.saveDraft, values, 'save a draft');
      if (saved.length === 1) return structuredClone(draft);
      const [current] = await this.rows<{ body: string }>(
        this.sql.currentDraft,
        [name, draft.taskSlug],
        'read a draft',
      );
      // Throws DRAFT_NOT_FOUND (or a channel change); returns only when the draft became current meanwhile.
      checkSameDraft(
        draft,
        current ? this.draftOf(current.body, `draft of task "${draft.taskSlug}"`) : undefined,
        draft.status === 'active',
      );
    }
    throw new StoreError(
      'STORE_IO',
      `Could not save draft "${draft.sessionId}": its task's current draft kept changing; try again.`,
    );
  }

  // ---- the draft lease --------------------------------------------------------------------------

  acquireDraftLease(sessionId: string, owner: string, ttlMs: number): Promise<DraftLeaseResult> {
    return this.guard(async () => {
      const lease = checkLeaseInput(sessionId, owner, ttlMs);
      const values = [lease.sessionId, lease.owner, lease.ttlMs];
      for (let races = 0; races <= MAX_RACE_RETRIES; races++) {
        // Repeating it is safe: a grant already made is the caller's, and is extended.
        const [granted] = await this.rows<{ owner: string; previous_owner: string | null; expires_at: Date }>(
          this.sql.acquireLease,
          values,
          'take a draft lease',
        );
        if (granted) {
          const takenFrom =
            granted.previous_owner !== null && granted.previous_owner !== lease.owner
              ? granted.previous_owner
              : undefined;
          return {
            granted: true,
            holder: granted.owner,
            expiresAt: granted.expires_at.toISOString(),
            ...(takenFrom ? { takenFrom } : {}),
          };
        }
        const [why] = await this.rows<{
          active: boolean;
          owner: string | null;
          expires_at: Date | null;
          live: boolean | null;
        }>(this.sql.leaseHolder, [lease.sessionId], 'read a draft lease');
        if (!why?.active) throw noActiveDraft(lease.sessionId);
        if (why.live && why.owner !== null && why.owner !== lease.owner)
          return { granted: false, holder: why.owner, expiresAt: why.expires_at!.toISOString() };
        // The holder's lease ended between the two statements: ask again.
      }
      throw new StoreError(
        'STORE_IO',
        `Could not take the lease of draft "${lease.sessionId}": it kept changing hands; try again.`,
      );
    });
  }

  renewDraftLease(sessionId: string, owner: string, ttlMs: number): Promise<DraftLeaseResult> {
    return this.guard(async () => {
      const lease = checkLeaseInput(sessionId, owner, ttlMs);
      const [renewed] = await this.rows<{ owner: string; expires_at: Date }>(
        this.sql.renewLease,
        [lease.sessionId, lease.owner, lease.ttlMs],
        'renew a draft lease',
      );
      if (renewed) return { granted: true, holder: renewed.owner, expiresAt: renewed.expires_at.toISOString() };
      const [why] = await this.rows<{ owner: string | null; expires_at: Date | null }>(
        this.sql.leaseHolder,
        [lease.sessionId],
        'read a draft lease',
      );
      return why?.owner
        ? { granted: false, holder: why.owner, expiresAt: why.expires_at!.toISOString() }
        : { granted: false };
    });
  }

  releaseDraftLease(sessionId: string, owner: string): Promise<void> {
    return this.guard(async () => {
      const lease = checkLeaseInput(sessionId, owner);
      await this.rows(this.sql.releaseLease, [lease.sessionId, lease.owner], 'release a draft lease');
    });
  }

  readDraftLease(sessionId: string): Promise<DraftLeaseHolder | undefined> {
    return this.guard(async () => {
      const id = checkId(sessionId, 'session id');
      const [held] = await this.rows<{ owner: string | null; expires_at: Date | null; live: boolean | null }>(
        this.sql.leaseHolder,
        [id],
        'read a draft lease',
      );
      return held?.live && held.owner !== null && held.expires_at !== null
        ? { holder: held.owner, expiresAt: held.expires_at.toISOString() }
        : undefined;
    });
  }

  // ---- role files -------------------------------------------------------------------------------

  private roleText(project: string, role: string, text: string): RoleText {
    return { name: role, location: `postgres:${this.schema}.role_files/${project}/${role}.md`, text };
  }

  listRoleFiles(project: string): Promise<{ files: RoleText[]; errors: RoleTextError[] }> {
    return this.guard(async () => {
      const { name } = await this.project(project);
      const rows = await this.rows<{ role: string; text: string }>(this.sql.listRoles, [name], 'list role files');
      return { files: rows.map((row) => this.roleText(name, row.role, row.text)), errors: [] };
    });
  }

  readRoleFile(project: string, role: string): Promise<RoleText | undefined> {
    return this.guard(async () => {
      const { name } = await this.project(project);
      const id = checkId(role, 'role');
      const [row] = await this.rows<{ text: string }>(this.sql.getRole, [name, id], 'read a role file');
      return row ? this.roleText(name, id, row.text) : undefined;
    });
  }

  writeRoleFile(project: string, role: string, text: string): Promise<RoleText> {
    return this.guard(async () => {
      const name = checkId(project, 'project');
      const id = checkId(role, 'role');
      if (typeof text !== 'string') throw new ValidationError(`Role file "${id}" must be text.`);
      await this.run('write a role file', async () => {
        try {
          await this.pool.query(this.sql.putRole, [name, id, text]);
        } catch (error) {
          if (errorCode(error) === SQLSTATE.foreignKeyViolation) throw projectNotFound(name);
          throw error;
        }
      });
      return this.roleText(name, id, text);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([...this.inFlight]);
    await this.pool.end().catch(() => undefined);
  }
}

/** A stored record, checked against its schema (a fresh object every time). */
function parseRecord<Schema extends z.ZodType>(schema: Schema, text: string, what: string): z.infer<Schema> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw corrupt(what, `it is not valid JSON (${error instanceof Error ? error.message : String(error)})`, error);
  }
  const result = schema.safeParse(value);
  if (!result.success) throw corrupt(what, `it does not match its schema: ${describeIssues(result.error.issues)}`);
  return result.data as z.infer<Schema>;
}

function corrupt(what: string, problem: string, cause?: unknown): StoreError {
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
