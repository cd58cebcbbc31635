import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresDraftStore, createPostgresStore, type DraftStore } from '../../../src/store/index.js';
import { postgresSkipReason, startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { storeErrorOf } from '../builders.js';
import { draftRecord, runDraftStoreConformance, taskFile } from './conformance.js';

const skipReason = postgresSkipReason();
const AT = '2025-01-02T03:04:05.000Z';

describe.skipIf(skipReason !== undefined)('PostgreSQL draft store', () => {
  let server: TestPostgres;
  const schemas = new WeakMap<DraftStore, string>();

  beforeAll(async () => {
    server = await startTestPostgres();
  }, 120_000);
  afterAll(async () => {
    await server?.destroy();
  });

  /** A store for a home project on this server, in `schema`. */
  function open(
    schema: string,
    home = { name: 'home', path: '/srv/home', dataDir: '/srv/home/.parley' },
  ): Promise<DraftStore> {
    return createPostgresDraftStore({ connectionString: server.url(), schema, home });
  }

  // Each test gets its own schema: migrations run from scratch, nothing leaks between tests.
  runDraftStoreConformance({
    name: 'postgres draft store',
    create: async () => {
      const schema = server.freshSchema('drafts');
      const store = await open(schema);
      schemas.set(store, schema);
      return store;
    },
    destroy: async (store) => {
      await store.close();
      await server.dropSchema(schemas.get(store)!);
    },
  });

  describe('beyond the shared suite', () => {
    const opened: DraftStore[] = [];
    const made: string[] = [];
    afterEach(async () => {
      for (const store of opened.splice(0)) await store.close();
      for (const schema of made.splice(0)) await server.dropSchema(schema);
    });
    async function twoServers(): Promise<[DraftStore, DraftStore, string]> {
      const schema = server.freshSchema('drafts');
      made.push(schema);
      const a = await open(schema, { name: 'shop', path: '/srv/a/shop', dataDir: '/srv/a/shop/.parley' });
      const b = await open(schema, { name: 'shop', path: '/home/b/shop', dataDir: '/home/b/shop/.parley' });
      opened.push(a, b);
      return [a, b, schema];
    }

    it('two stores on two pools (two servers) racing claims for one channel or one task: one winner each', async () => {
      const [a, b] = await twoServers();
      for (const slug of ['one', 'two', 'three']) await a.createTask('shop', taskFile(slug));
      const channel = await Promise.allSettled([
        a.claimDraft(draftRecord('shop', 'one', 'tui', 's-a')),
        b.claimDraft(draftRecord('shop', 'two', 'tui', 's-b')),
      ]);
      expect(channel.map((outcome) => outcome.status).sort()).toEqual(['fulfilled', 'rejected']);
      const refused = channel.find((outcome) => outcome.status === 'rejected') as PromiseRejectedResult;
      const winner = channel.find((outcome) => outcome.status === 'fulfilled') as PromiseFulfilledResult<{
        sessionId: string;
      }>;
      // The loser is told who holds the channel, and nothing of it was stored.
      expect(refused.reason).toMatchObject({
        code: 'DRAFT_ALREADY_ACTIVE',
        data: { channelId: 'tui', sessionId: winner.value.sessionId },
      });
      const task = await Promise.allSettled([
        a.claimDraft(draftRecord('shop', 'three', 'web', 's-a3')),
        b.claimDraft(draftRecord('shop', 'three', 'cli', 's-b3')),
      ]);
      expect(task.map((outcome) => outcome.status).sort()).toEqual(['fulfilled', 'rejected']);
      expect((await a.listActiveDrafts()).drafts.map((draft) => draft.sessionId).sort()).toEqual(
        [
          winner.value.sessionId,
          (task.find((o) => o.status === 'fulfilled') as PromiseFulfilledResult<{ sessionId: string }>).value.sessionId,
        ].sort(),
      );
      expect((await b.listActiveDrafts()).drafts).toHaveLength(2);
    });

    it('two servers racing for one draft lease: one is granted, the other is told who holds it', async () => {
      const [a, b] = await twoServers();
      await a.createTask('shop', taskFile('t'));
      await a.claimDraft(draftRecord('shop', 't', 'tui', 's-1'));
      const [first, second] = await Promise.all([
        a.acquireDraftLease('s-1', 'server-a', 60_000),
        b.acquireDraftLease('s-1', 'server-b', 60_000),
      ]);
      expect([first!.granted, second!.granted].sort()).toEqual([false, true]);
      expect(first!.holder).toBe(second!.holder);
    });

    it('each server reports its own folders for the home project; both see one list of projects and one of tasks', async () => {
      const [a, b] = await twoServers();
      expect((await a.listProjects())[0]).toMatchObject({
        name: 'shop',
        path: '/srv/a/shop',
        dataDir: '/srv/a/shop/.parley',
        home: true,
      });
      expect((await b.listProjects())[0]).toMatchObject({
        name: 'shop',
        path: '/home/b/shop',
        dataDir: '/home/b/shop/.parley',
        home: true,
      });
      await a.createProject({ name: 'billing', path: '/work/billing', createdAt: AT });
      await a.createProject({ name: 'docs', createdAt: AT });
      // A project made without a path is placed under each server's own data folder.
      expect(await b.getProject('docs')).toMatchObject({
        path: '/home/b/shop/.parley/projects/docs',
        dataDir: '/home/b/shop/.parley/projects/docs/.parley',
      });
      expect(await a.getProject('docs')).toMatchObject({ path: '/srv/a/shop/.parley/projects/docs' });
      expect(await b.getProject('billing')).toMatchObject({
        path: '/work/billing',
        dataDir: '/work/billing/.parley',
        home: false,
      });
      await b.createTask('billing', taskFile('invoices'));
      expect((await a.listTasks('billing')).map((task) => task.slug)).toEqual(['invoices']);
      await a.writeRoleFile('billing', 'dev', 'Billing dev.');
      expect(await b.readRoleFile('billing', 'dev')).toMatchObject({
        text: 'Billing dev.',
        location: expect.stringMatching(/billing\/dev\.md$/),
      });
    });

    it('another server whose home is another project lists this one as a plain project', async () => {
      const [a, , schema] = await twoServers();
      const other = await open(schema, { name: 'web', path: '/srv/web', dataDir: '/srv/web/.parley' });
      opened.push(other);
      expect((await other.listProjects()).map((project) => [project.name, project.home])).toEqual([
        ['web', true],
        ['shop', false],
      ]);
      expect((await a.listProjects()).map((project) => project.name)).toEqual(['shop', 'web']);
      expect((await storeErrorOf(() => a.createProject({ name: 'web', createdAt: AT }))).code).toBe('PROJECT_EXISTS');
    });

    it('a damaged draft row is reported by listActiveDrafts, and a read of it is CORRUPT_FILE', async () => {
      const [a, , schema] = await twoServers();
      await a.createTask('shop', taskFile('t'));
      await a.claimDraft(draftRecord('shop', 't', 'tui', 's-1'));
      await server.admin(`UPDATE ${pg.escapeIdentifier(schema)}.drafts SET body = '{"formatVersion": 1, "sessionId":'`);
      const { drafts, unreadable } = await a.listActiveDrafts();
      expect(drafts).toEqual([]);
      expect(unreadable).toEqual([
        { location: expect.stringContaining(`${schema}.drafts/`), reason: expect.stringContaining('not valid JSON') },
      ]);
      expect((await storeErrorOf(() => a.getDraft('shop', 't'))).code).toBe('CORRUPT_FILE');
      // The database still holds the claim: another claim of the channel is refused, whatever the row says.
      await a.createTask('shop', taskFile('u'));
      await expect(a.claimDraft(draftRecord('shop', 'u', 'tui', 's-2'))).rejects.toMatchObject({
        code: 'CORRUPT_FILE',
      });
    });

    it('shares the database and schema with the session store, each migrating once', async () => {
      const schema = server.freshSchema('drafts');
      made.push(schema);
      const [sessions, drafts] = await Promise.all([
        createPostgresStore({ connectionString: server.url(), schema }),
        open(schema),
      ]);
      opened.push(drafts);
      try {
        expect((await drafts.listProjects())[0]).toMatchObject({ name: 'home', home: true });
        const tables = await server.admin<{ table_name: string }>(
          'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name',
          [schema],
        );
        expect(tables.map((row) => row.table_name)).toEqual(
          expect.arrayContaining([
            'projects',
            'project_tasks',
            'drafts',
            'draft_leases',
            'role_files',
            'sessions',
            'events',
          ]),
        );
      } finally {
        await sessions.close();
      }
    });

    it('a bad connection string fails with one clear error and opens nothing', async () => {
      const error = await storeErrorOf(() =>
        createPostgresDraftStore({
          connectionString: 'mysql://x',
          home: { name: 'home', path: '/srv/home', dataDir: '/srv/home/.parley' },
        }),
      );
      expect(error.code).toBe('STORE_BAD_CONNECTION_STRING');
    });
  });
});
