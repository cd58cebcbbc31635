import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { StreamEventDraft } from '../../src/conversation/index.js';
import { canonicalJson } from '../../src/store/canonical-json.js';
import {
  createFileStore,
  createMemoryStore,
  createPostgresStore,
  digestSession,
  migrateStore,
  type SessionStore,
} from '../../src/store/index.js';
import { postgresSkipReason, startTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import { checkpointInput, collect, contextDocument, feature, sessionRecord, storeErrorOf, textDraft } from './builders.js';
import { conversationDrafts, expectSameContents, fillDataFolder, MANAGED_ID, NATIVE_ID } from './migrate-data.js';

const quiet = () => undefined;

describe('canonical JSON', () => {
  it('is the same text whatever the order of keys, at every depth, and drops undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [{ y: 1, x: 2 }], c: undefined } })).toBe(canonicalJson({ a: { d: [{ x: 2, y: 1 }] }, b: 1 }));
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
          return async (sessionId: string) => (await target.listCheckpoints(sessionId)).filter((checkpoint) => checkpoint.version !== 1);
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
    expect(report.sessions.filter((session) => session.sessionId !== MANAGED_ID).every((session) => session.status === 'copied')).toBe(true);
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
    expect(there.sessions.every((session) => session.status === 'copied' && session.verification?.differences.length === 0)).toBe(true);
    expect(there.records.map((record) => `${record.kind} ${record.id} ${record.status}`)).toEqual(['feature f1 copied', 'task f1/t1 copied']);
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
    await file.append('same-log', conversationDrafts(5).map(({ at: _at, ...draft }) => draft as StreamEventDraft));
    const fileEvents = await collect(file.readLog('same-log'));
    await database.createSession(sessionRecord('same-log'));
    await database.append('same-log', fileEvents.map(({ sessionId: _sessionId, seq: _seq, ...draft }) => draft as StreamEventDraft));
    const databaseEvents = await collect(database.readLog('same-log'));
    expect(databaseEvents).toEqual(fileEvents);
    expect(JSON.stringify(databaseEvents[0])).not.toBe(JSON.stringify(fileEvents[0]));
    const [fileDigest, databaseDigest] = await Promise.all([digestSession(file, 'same-log'), digestSession(database, 'same-log')]);
    expect(databaseDigest).toEqual(fileDigest);
    expect(fileDigest.events).toBe(30);
    expect(fileDigest.eventsSha256).toMatch(/^[0-9a-f]{64}$/);

    // One changed character anywhere in the log changes the hash.
    await database.append('same-log', [{ ...textDraft('x', 'y'), at: 1 }]);
    await file.append('same-log', [{ ...textDraft('x', 'z'), at: 1 }]);
    expect((await digestSession(database, 'same-log')).eventsSha256).not.toBe((await digestSession(file, 'same-log')).eventsSha256);
  });

  it('is idempotent: a second run copies nothing and says so', async () => {
    const original = await fileStore('original');
    await fillDataFolder(original);
    const database = await postgresStore();
    await migrateStore(original, database);
    const again = await migrateStore(original, database);
    expect(again.ok).toBe(true);
    expect(again.nothingCopied).toBe(true);
    expect(again.sessions.every((session) => session.status === 'unchanged' && session.written.events === 0)).toBe(true);
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
    await original.updateSession(MANAGED_ID, (record) => ({ ...record, updatedAt: record.updatedAt + 1, title: 'renamed' }));

    const report = await migrateStore(original, database);
    expect(report.ok).toBe(true);
    const managed = report.sessions.find((session) => session.sessionId === MANAGED_ID)!;
    expect(managed.status).toBe('continued');
    expect(managed.written).toEqual({ record: true, events: 6, checkpoints: 1, context: true, agentDescription: false, transcripts: 0 });
    expect(report.sessions.filter((session) => session.sessionId !== MANAGED_ID).every((session) => session.status === 'unchanged')).toBe(true);
    await expectSameContents(original, database);
  });

  it('reports a target session that differs from the source as a conflict and leaves it unchanged', async () => {
    const original = await fileStore('original');
    await fillDataFolder(original);
    const database = await postgresStore();
    await migrateStore(original, database);
    // The target was used after the copy: a turn ran on it, so its log is no longer a beginning of the source's.
    await database.append(NATIVE_ID, [{ ...textDraft('assistant-0', 'written on the server'), at: 5 }]);
    await original.append(NATIVE_ID, [{ ...textDraft('assistant-0', 'written in the folder'), at: 6 }]);
    // Another session whose first event differs.
    await original.createSession(sessionRecord('diverged'));
    await original.append('diverged', conversationDrafts(1));
    await database.createSession(sessionRecord('diverged'));
    await database.append('diverged', conversationDrafts(1, 42));
    await database.putFeature(feature('f1', { name: 'renamed in the database', updatedAt: '2030-01-01T00:00:00.000Z' }));
    const before = { native: await digestSession(database, NATIVE_ID), diverged: await digestSession(database, 'diverged') };

    const report = await migrateStore(original, database);
    expect(report.ok).toBe(false);
    const native = report.sessions.find((session) => session.sessionId === NATIVE_ID)!;
    expect(native.status).toBe('conflict');
    expect(native.reason).toBe('event 24 differs between the source\'s log and the target\'s');
    const diverged = report.sessions.find((session) => session.sessionId === 'diverged')!;
    expect(diverged.status).toBe('conflict');
    expect(diverged.reason).toContain('event 0 differs');
    expect(report.records.find((record) => record.kind === 'feature')?.status).toBe('conflict');
    expect(await digestSession(database, NATIVE_ID)).toEqual(before.native);
    expect(await digestSession(database, 'diverged')).toEqual(before.diverged);
    expect((await database.getFeature('f1'))?.name).toBe('renamed in the database');
    // Sessions without conflicts still verified.
    expect(report.sessions.filter((session) => session.status !== 'conflict').every((session) => session.verification?.differences.length === 0)).toBe(true);
  });

  it('leaves a target whose log is longer than the source\'s unchanged', async () => {
    const original = await fileStore('original');
    await original.createSession(sessionRecord('short'));
    await original.append('short', conversationDrafts(1));
    const database = await postgresStore();
    await migrateStore(original, database);
    await database.append('short', conversationDrafts(1, 1_800_000_000_000));
    const report = await migrateStore(original, database);
    expect(report.sessions[0]).toMatchObject({ status: 'conflict', reason: "the target's log has 12 events, more than the source's 6" });
    expect(await database.lastSeq('short')).toBe(11);
  });

  it('reading a database without Parley tables creates nothing: existingOnly refuses it with STORE_SCHEMA_MISSING', async () => {
    const schema = server.freshSchema('absent');
    const error = await storeErrorOf(() => createPostgresStore({ connectionString: server.url(), schema, existingOnly: true }));
    expect(error.code).toBe('STORE_SCHEMA_MISSING');
    expect(error.message).toContain(`schema "${schema}"`);
    const rows = await server.admin<{ count: string }>('SELECT count(*) AS count FROM pg_namespace WHERE nspname = $1', [schema]);
    expect(rows[0]!.count).toBe('0');
  });
});
