import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { UnsequencedEvent } from '../../src/conversation/index.js';
import { canonicalJson } from '../../src/store/canonical-json.js';
import {
  createFileDraftStore,
  createFileStore,
  createMemoryDraftStore,
  createMemoryStore,
  createPostgresDraftStore,
  createPostgresStore,
  digestProject,
  digestSession,
  migrateDraftStore,
  migrateStore,
  type DraftStore,
  type DraftStoreHome,
  type DraftStoreSide,
  type SessionStore,
} from '../../src/store/index.js';
import { postgresSkipReason, startTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import {
  checkpointInput,
  collect,
  contextDocument,
  feature,
  sessionRecord,
  storeErrorOf,
  textEvent,
} from './builders.js';
import {
  conversationDrafts,
  expectSameContents,
  fillDataFolder,
  MANAGED_ID,
  NATIVE_ID,
} from './sessions/migrate-data.js';
import { draftRecord, taskFile } from './drafts/conformance.js';
import { DEV_ROLE, expectSameDraftLayer, fillDraftLayer } from './drafts/migrate-data.js';

const quiet = () => undefined;

describe('canonical JSON', () => {
  it('is the same text whatever the order of keys, at every depth, and drops undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [{ y: 1, x: 2 }], c: undefined } })).toBe(
      canonicalJson({ a: { d: [{ x: 2, y: 1 }] }, b: 1 }),
    );
    expect(canonicalJson({ b: 1, a: 2 })).toBe('{"a":2,"b":1}');
    expect(canonicalJson({ a: [1, 2] })).not.toBe(canonicalJson({ a: [2, 1] }));
  });
});

describe('migrateStore between memory stores', () => {
  it('copies everything and a second run copies nothing', async () => {
    const from = createMemoryStore();
    const to = createMemoryStore();
    await fillDataFolder(from);
    const first = await migrateStore(from, to, { batchSize: 7 });
    expect(first.ok).toBe(true);
    expect(first.nothingCopied).toBe(false);
    expect(first.sessions.every((session) => session.status === 'copied')).toBe(true);
    await expectSameContents(from, to);
    const second = await migrateStore(from, to);
    expect(second.ok).toBe(true);
    expect(second.nothingCopied).toBe(true);
    expect(second.sessions.every((session) => session.status === 'unchanged')).toBe(true);
    expect(second.records.every((record) => record.status === 'unchanged')).toBe(true);
  });

  it('refuses to copy a session whose checkpoint versions have a gap, and copies the others', async () => {
    const from = createMemoryStore();
    const to = createMemoryStore();
    await fillDataFolder(from);
    // A store that lost version 1 (a user removed a corrupt file): the target cannot give version 2 the same number.
    const gapped: SessionStore = new Proxy(from, {
      get(target, property) {
        if (property === 'listCheckpoints') {
          return async (sessionId: string) =>
            (await target.listCheckpoints(sessionId)).filter((checkpoint) => checkpoint.version !== 1);
        }
        const value = Reflect.get(target, property) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const report = await migrateStore(gapped, to);
    expect(report.ok).toBe(false);
    const managed = report.sessions.find((session) => session.sessionId === MANAGED_ID)!;
    expect(managed.status).toBe('failed');
    expect(managed.reason).toContain('version 2 comes where 1 was expected');
    expect(await to.getSession(MANAGED_ID)).toBeUndefined();
    expect(
      report.sessions
        .filter((session) => session.sessionId !== MANAGED_ID)
        .every((session) => session.status === 'copied'),
    ).toBe(true);
  });
});

describe('migrateDraftStore between memory stores', () => {
  const home: DraftStoreHome = { name: 'shop', path: '/srv/shop', dataDir: '/srv/shop/.parley' };
  const side = (): DraftStoreSide => ({ store: createMemoryDraftStore({ home }), home });

  it('copies projects, tasks, closed and active drafts and role files; a second run copies nothing', async () => {
    const from = side();
    const to = side();
    await fillDraftLayer(from.store, 'shop');
    const first = await migrateDraftStore(from, to);
    expect(first.ok).toBe(true);
    expect(first.nothingCopied).toBe(false);
    expect(first.records.map((record) => `${record.kind} ${record.id} ${record.status}`)).toEqual([
      'project shop copied',
      'task shop/checkout copied',
      'draft shop/checkout/s-checkout-1 copied',
      'task shop/search copied',
      'draft shop/search/s-search-1 copied',
      'role shop/dev.md copied',
      'project billing copied',
      'task billing/invoices copied',
      'role billing/accountant.md copied',
      'draft shop/checkout/s-checkout-2 copied',
      'draft billing/invoices/s-invoices-1 copied',
    ]);
    expect(
      first.projects.map((project) => [
        project.project,
        project.home,
        project.source.tasks,
        project.source.drafts,
        project.source.activeDrafts,
        project.source.roles,
      ]),
    ).toEqual([
      ['shop', true, 2, 3, 1, 1],
      ['billing', false, 1, 1, 1, 1],
    ]);
    expect(
      first.projects.every(
        (project) => project.target?.sha256 === project.source.sha256 && /^[0-9a-f]{64}$/.test(project.source.sha256),
      ),
    ).toBe(true);
    await expectSameDraftLayer(from, to);

    const second = await migrateDraftStore(from, to);
    expect(second.ok).toBe(true);
    expect(second.nothingCopied).toBe(true);
    expect(second.records.every((record) => record.status === 'unchanged')).toBe(true);
    expect(second.records).toHaveLength(first.records.length);
  });

  it('finishes a closed draft whose copy stopped between its claim and its release', async () => {
    const from = side();
    const to = side();
    await fillDraftLayer(from.store, 'shop');
    await to.store.createProject({ name: 'shop', description: 'The shop', createdAt: '2025-01-01T00:00:00.000Z' });
    await to.store.createTask('shop', (await from.store.getTask('shop', 'search'))!);
    // As the copy claims it, before its release: active, without its closing fields.
    const {
      closedAt: _closedAt,
      closeReason: _closeReason,
      ...claimed
    } = (await from.store.getDraft('shop', 'search'))!;
    await to.store.claimDraft({ ...claimed, status: 'active' });
    const report = await migrateDraftStore(from, to);
    expect(report.ok).toBe(true);
    expect(report.records.find((record) => record.id === 'shop/search/s-search-1')?.status).toBe('copied');
    await expectSameDraftLayer(from, to);
  });

  it('changes the hash of a project when one field of one draft differs', async () => {
    const a = side();
    const b = side();
    for (const { store } of [a, b]) {
      await store.createTask('shop', taskFile('t'));
      await store.claimDraft(draftRecord('shop', 't', 'tui', 's-1', { turnCount: store === a.store ? 1 : 2 }));
    }
    const [left, right] = await Promise.all([
      digestProject(a, 'shop', { withCreatedAt: true }),
      digestProject(b, 'shop', { withCreatedAt: true }),
    ]);
    expect(left!.drafts).toBe(right!.drafts);
    expect(left!.sha256).not.toBe(right!.sha256);
  });
});

const skipReason = postgresSkipReason();

describe.skipIf(skipReason !== undefined)('migrateStore between the file store and PostgreSQL', () => {
  let server: TestPostgres;
  let work: string;
  const open: SessionStore[] = [];
  const schemas: string[] = [];

  beforeAll(async () => {
    server = await startTestPostgres();
  }, 120_000);
  afterAll(async () => {
    await server?.destroy();
  });
  beforeEach(async () => {
    work = await fs.mkdtemp(join(tmpdir(), 'parley-migrate-'));
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((store) => store.close().catch(() => undefined)));
    await Promise.all(schemas.splice(0).map((schema) => server.dropSchema(schema)));
    await fs.rm(work, { recursive: true, force: true });
  });

  async function fileStore(name: string): Promise<SessionStore> {
    const store = await createFileStore({ dataDir: join(work, name), onWarning: quiet });
    open.push(store);
    return store;
  }
  async function postgresStore(): Promise<SessionStore> {
    const schema = server.freshSchema('migrate');
    schemas.push(schema);
    const store = await createPostgresStore({ connectionString: server.url(), schema });
    open.push(store);
    return store;
  }

  it('round-trips a data folder of native, managed and imported sessions: folder → PostgreSQL → folder, event by event and by hash', async () => {
    const original = await fileStore('original');
    const ids = await fillDataFolder(original);
    const database = await postgresStore();
    const restored = await fileStore('restored');

    const there = await migrateStore(original, database, { batchSize: 10 });
    expect(there.ok).toBe(true);
    expect(there.sessions.map((session) => session.sessionId)).toEqual(ids);
    expect(
      there.sessions.every((session) => session.status === 'copied' && session.verification?.differences.length === 0),
    ).toBe(true);
    expect(there.records.map((record) => `${record.kind} ${record.id} ${record.status}`)).toEqual([
      'feature f1 copied',
      'task f1/t1 copied',
    ]);
    await expectSameContents(original, database);

    const back = await migrateStore(database, restored);
    expect(back.ok).toBe(true);
    await expectSameContents(original, restored);

    const native = await restored.getSession(NATIVE_ID);
    expect(native?.native?.nativeSessionId).toBe('b2d1c0a9-native');
    expect((await restored.listCheckpoints(MANAGED_ID)).map((checkpoint) => checkpoint.version)).toEqual([1, 2]);
    const imported = there.sessions.find((session) => session.sessionId.startsWith('cc-'))!;
    expect(imported.verification!.source.events).toBeGreaterThan(10);
    expect(imported.verification!.target.eventsSha256).toBe(imported.verification!.source.eventsSha256);
  });

  it('hashes a log equal in the file store and in PostgreSQL, though the two return its keys in another order', async () => {
    const file = await fileStore('hash');
    const database = await postgresStore();
    // Appended without `at`, the file store writes `at` after `seq`; given `at` (as a migration gives it), PostgreSQL returns it before.
    await file.createSession(sessionRecord('same-log'));
    await file.append(
      'same-log',
      conversationDrafts(5).map(({ at: _at, ...draft }) => draft as UnsequencedEvent),
    );
    const fileEvents = await collect(file.readLog('same-log'));
    await database.createSession(sessionRecord('same-log'));
    await database.append(
      'same-log',
      fileEvents.map(({ sessionId: _sessionId, seq: _seq, ...draft }) => draft as UnsequencedEvent),
    );
    const databaseEvents = await collect(database.readLog('same-log'));
    expect(databaseEvents).toEqual(fileEvents);
    expect(JSON.stringify(databaseEvents[0])).not.toBe(JSON.stringify(fileEvents[0]));
    const [fileDigest, databaseDigest] = await Promise.all([
      digestSession(file, 'same-log'),
      digestSession(database, 'same-log'),
    ]);
    expect(databaseDigest).toEqual(fileDigest);
    expect(fileDigest.events).toBe(30);
    expect(fileDigest.eventsSha256).toMatch(/^[0-9a-f]{64}$/);

    // One changed character anywhere in the log changes the hash.
    await database.append('same-log', [{ ...textEvent('x', 'y'), at: 1 }]);
    await file.append('same-log', [{ ...textEvent('x', 'z'), at: 1 }]);
    expect((await digestSession(database, 'same-log')).eventsSha256).not.toBe(
      (await digestSession(file, 'same-log')).eventsSha256,
    );
  });

  it('is idempotent: a second run copies nothing and says so', async () => {
    const original = await fileStore('original');
    await fillDataFolder(original);
    const database = await postgresStore();
    await migrateStore(original, database);
    const again = await migrateStore(original, database);
    expect(again.ok).toBe(true);
    expect(again.nothingCopied).toBe(true);
    expect(again.sessions.every((session) => session.status === 'unchanged' && session.written.events === 0)).toBe(
      true,
    );
    expect(again.sessions.every((session) => session.verification?.differences.length === 0)).toBe(true);
    await expectSameContents(original, database);
  });

  it('continues an interrupted copy from where it stopped, with the same seqs, and never doubles an event', async () => {
    const original = await fileStore('original');
    await fillDataFolder(original);
    const database = await postgresStore();
    // The target fails on its third append: the run stops there, as a killed process or a lost server would stop it.
    let appends = 0;
    const failing: SessionStore = new Proxy(database, {
      get(target, property) {
        if (property === 'append') {
          return async (...args: Parameters<SessionStore['append']>) => {
            appends += 1;
            if (appends === 3) throw new Error('connection lost');
            return target.append(...args);
          };
        }
        const value = Reflect.get(target, property) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    await expect(migrateStore(original, failing, { batchSize: 4 })).rejects.toThrow('connection lost');
    const partial = (await collect(database.listSessions())).map((record) => record.sessionId);
    expect(partial.length).toBeGreaterThan(0);
    const stoppedIn = partial.sort()[0]!;
    expect(await database.lastSeq(stoppedIn)).toBe(7);

    const resumed = await migrateStore(original, database, { batchSize: 4 });
    expect(resumed.ok).toBe(true);
    const continued = resumed.sessions.find((session) => session.sessionId === stoppedIn)!;
    expect(continued.status).toBe('continued');
    expect(continued.written.events).toBe((await original.lastSeq(stoppedIn)) + 1 - 8);
    await expectSameContents(original, database);
  });

  it('brings a target up to date when the source moved on: the new events, a new checkpoint, the newer record', async () => {
    const original = await fileStore('original');
    await fillDataFolder(original);
    const database = await postgresStore();
    await migrateStore(original, database);
    await original.append(MANAGED_ID, conversationDrafts(1, 1_700_000_900_000));
    await original.writeCheckpoint(MANAGED_ID, checkpointInput(23));
    await original.writeContext(contextDocument(MANAGED_ID, { updatedAt: '2024-02-01T00:00:00.000Z', tokens: 40 }));
    await original.updateSession(MANAGED_ID, (record) => ({
      ...record,
      updatedAt: record.updatedAt + 1,
      title: 'renamed',
    }));

    const report = await migrateStore(original, database);
    expect(report.ok).toBe(true);
    const managed = report.sessions.find((session) => session.sessionId === MANAGED_ID)!;
    expect(managed.status).toBe('continued');
    expect(managed.written).toEqual({
      record: true,
      events: 6,
      checkpoints: 1,
      context: true,
      agentDescription: false,
      transcripts: 0,
    });
    expect(
      report.sessions
        .filter((session) => session.sessionId !== MANAGED_ID)
        .every((session) => session.status === 'unchanged'),
    ).toBe(true);
    await expectSameContents(original, database);
  });

  it('reports a target session that differs from the source as a conflict and leaves it unchanged', async () => {
    const original = await fileStore('original');
    await fillDataFolder(original);
    const database = await postgresStore();
    await migrateStore(original, database);
    // The target was used after the copy: a turn ran on it, so its log is no longer a beginning of the source's.
    await database.append(NATIVE_ID, [{ ...textEvent('assistant-0', 'written on the server'), at: 5 }]);
    await original.append(NATIVE_ID, [{ ...textEvent('assistant-0', 'written in the folder'), at: 6 }]);
    // Another session whose first event differs.
    await original.createSession(sessionRecord('diverged'));
    await original.append('diverged', conversationDrafts(1));
    await database.createSession(sessionRecord('diverged'));
    await database.append('diverged', conversationDrafts(1, 42));
    await database.putFeature(
      feature('f1', { name: 'renamed in the database', updatedAt: '2030-01-01T00:00:00.000Z' }),
    );
    const before = {
      native: await digestSession(database, NATIVE_ID),
      diverged: await digestSession(database, 'diverged'),
    };

    const report = await migrateStore(original, database);
    expect(report.ok).toBe(false);
    const native = report.sessions.find((session) => session.sessionId === NATIVE_ID)!;
    expect(native.status).toBe('conflict');
    expect(native.reason).toBe("event 24 differs between the source's log and the target's");
    const diverged = report.sessions.find((session) => session.sessionId === 'diverged')!;
    expect(diverged.status).toBe('conflict');
    expect(diverged.reason).toContain('event 0 differs');
    expect(report.records.find((record) => record.kind === 'feature')?.status).toBe('conflict');
    expect(await digestSession(database, NATIVE_ID)).toEqual(before.native);
    expect(await digestSession(database, 'diverged')).toEqual(before.diverged);
    expect((await database.getFeature('f1'))?.name).toBe('renamed in the database');
    // Sessions without conflicts still verified.
    expect(
      report.sessions
        .filter((session) => session.status !== 'conflict')
        .every((session) => session.verification?.differences.length === 0),
    ).toBe(true);
  });

  it("leaves a target whose log is longer than the source's unchanged", async () => {
    const original = await fileStore('original');
    await original.createSession(sessionRecord('short'));
    await original.append('short', conversationDrafts(1));
    const database = await postgresStore();
    await migrateStore(original, database);
    await database.append('short', conversationDrafts(1, 1_800_000_000_000));
    const report = await migrateStore(original, database);
    expect(report.sessions[0]).toMatchObject({
      status: 'conflict',
      reason: "the target's log has 12 events, more than the source's 6",
    });
    expect(await database.lastSeq('short')).toBe(11);
  });

  describe('the draft layer', () => {
    const drafts: DraftStore[] = [];
    afterEach(async () => {
      await Promise.all(drafts.splice(0).map((store) => store.close().catch(() => undefined)));
    });
    function folderSide(name: string): DraftStoreSide {
      const home = { name: 'shop', path: join(work, name), dataDir: join(work, name, '.parley') };
      const store = createFileDraftStore({ home });
      drafts.push(store);
      return { store, home };
    }
    async function databaseSide(
      schema: string,
      home: DraftStoreHome,
      options: { existingOnly?: boolean } = {},
    ): Promise<DraftStoreSide> {
      const store = await createPostgresDraftStore({
        connectionString: server.url(),
        schema,
        home,
        registerHome: false,
        ...options,
      });
      drafts.push(store);
      return { store, home };
    }
    function freshSchema(): string {
      const schema = server.freshSchema('migrate_drafts');
      schemas.push(schema);
      return schema;
    }

    it('round-trips two projects, their tasks, closed and active drafts and role files: folder → PostgreSQL → folder, record by record', async () => {
      const original = folderSide('original');
      await fillDraftLayer(original.store, 'shop');
      const schema = freshSchema();
      const database = await databaseSide(schema, original.home);

      const there = await migrateDraftStore(original, database);
      expect(there.ok).toBe(true);
      expect(there.records.filter((record) => record.status !== 'copied')).toEqual([]);
      expect(there.projects.map((project) => [project.project, project.home, project.differences])).toEqual([
        ['shop', true, []],
        ['billing', false, []],
      ]);
      await expectSameDraftLayer(original, database);
      // The project created without a path stays in each store's default place.
      expect((await database.store.getProject('billing'))?.path).toBe(
        join(work, 'original', '.parley', 'projects', 'billing'),
      );

      // Back, read from a database that is written nothing on open.
      const reader = await databaseSide(
        schema,
        { name: 'shop', path: join(work, 'restored'), dataDir: join(work, 'restored', '.parley') },
        { existingOnly: true },
      );
      const restored = folderSide('restored');
      const back = await migrateDraftStore(reader, restored);
      expect(back.ok).toBe(true);
      await expectSameDraftLayer(original, restored);
      expect(back.projects.map((project) => project.source.sha256)).toEqual(
        there.projects.map((project) => project.source.sha256),
      );
      // The restored folder's home is written down under the source's name, and its files are today's layout.
      expect(JSON.parse(await fs.readFile(join(work, 'restored', '.parley', 'project.json'), 'utf8'))).toEqual({
        formatVersion: 1,
        name: 'shop',
        description: 'The shop',
        createdAt: '2025-01-01T00:00:00.000Z',
      });
      expect(await fs.readFile(join(work, 'restored', '.parley', 'roles', 'dev.md'), 'utf8')).toBe(DEV_ROLE);
      expect(await fs.readdir(join(work, 'restored', '.parley', 'tasks', 'checkout', 'drafts'))).toEqual([
        's-checkout-1.json',
      ]);
      expect(
        JSON.parse(
          await fs.readFile(
            join(work, 'restored', '.parley', 'projects', 'billing', '.parley', 'tasks', 'invoices', 'draft.json'),
            'utf8',
          ),
        ),
      ).toMatchObject({
        sessionId: 's-invoices-1',
        status: 'active',
      });
    });

    it('is idempotent: a second run copies nothing and says so', async () => {
      const original = folderSide('original');
      await fillDraftLayer(original.store, 'shop');
      const database = await databaseSide(freshSchema(), original.home);
      await migrateDraftStore(original, database);
      const again = await migrateDraftStore(original, database);
      expect(again.ok).toBe(true);
      expect(again.nothingCopied).toBe(true);
      expect(again.records.every((record) => record.status === 'unchanged')).toBe(true);
      expect(again.records.filter((record) => record.kind === 'draft')).toHaveLength(4);
    });

    it('reports a different record on the target as a conflict and leaves it unchanged; an active draft whose channel the target holds is a conflict', async () => {
      const original = folderSide('original');
      await fillDraftLayer(original.store, 'shop');
      const database = await databaseSide(freshSchema(), original.home);
      await migrateDraftStore(original, database);
      // The target was used after the copy: a role rewritten, a project made there, a channel taken.
      await database.store.writeRoleFile('shop', 'dev', 'rewritten on the server');
      await database.store.createProject({
        name: 'docs',
        description: 'made in the database',
        createdAt: '2026-01-01T00:00:00.000Z',
      });
      await database.store.createTask('shop', taskFile('server-task'));
      await database.store.claimDraft(draftRecord('shop', 'server-task', 'tui-9', 's-server'));
      // The source moved on meanwhile.
      await original.store.createProject({
        name: 'docs',
        description: 'made in the folder',
        createdAt: '2025-06-01T00:00:00.000Z',
      });
      await original.store.createTask('docs', taskFile('guide'));
      await original.store.createTask('shop', taskFile('late'));
      await original.store.claimDraft(draftRecord('shop', 'late', 'tui-9', 's-late'));
      const before = await digestProject(database, 'shop', { withCreatedAt: true });

      const report = await migrateDraftStore(original, database);
      expect(report.ok).toBe(false);
      const byId = (id: string) => report.records.find((record) => record.id === id);
      expect(byId('shop/dev.md')).toMatchObject({
        status: 'conflict',
        reason: expect.stringContaining('has other text than the source'),
      });
      expect(byId('docs')).toMatchObject({
        status: 'conflict',
        reason: expect.stringContaining('description "made in the database" in the target'),
      });
      expect(byId('docs/guide')?.status).toBe('copied');
      expect(byId('shop/late')?.status).toBe('copied');
      expect(byId('shop/late/s-late')).toMatchObject({
        status: 'conflict',
        reason: expect.stringContaining('Channel "tui-9" already has an active draft'),
      });
      expect(report.projects.find((project) => project.project === 'shop')?.differences).toEqual([
        'tasks: 3 in the source, 4 in the target',
      ]);

      expect((await database.store.readRoleFile('shop', 'dev'))?.text).toBe('rewritten on the server');
      expect((await database.store.getProject('docs'))?.description).toBe('made in the database');
      expect((await database.store.listTasks('docs')).map((task) => task.slug)).toEqual(['guide']);
      expect((await database.store.findActiveDraft('tui-9'))?.sessionId).toBe('s-server');
      expect(await database.store.getDraft('shop', 'late')).toBeUndefined();
      // Only the new task was added to the home project.
      expect((await digestProject(database, 'shop', { withCreatedAt: true }))!.tasks).toBe(before!.tasks + 1);
    });
  });

  it('reading a database without Parley tables creates nothing: existingOnly refuses it with STORE_SCHEMA_MISSING', async () => {
    const schema = server.freshSchema('absent');
    const error = await storeErrorOf(() =>
      createPostgresStore({ connectionString: server.url(), schema, existingOnly: true }),
    );
    expect(error.code).toBe('STORE_SCHEMA_MISSING');
    expect(error.message).toContain(`schema "${schema}"`);
    const rows = await server.admin<{ count: string }>(
      'SELECT count(*) AS count FROM pg_namespace WHERE nspname = $1',
      [schema],
    );
    expect(rows[0]!.count).toBe('0');
  });
});
