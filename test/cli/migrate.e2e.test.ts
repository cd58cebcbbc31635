import { existsSync, promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createFileDraftStore,
  createFileRunStore,
  createFileStore,
  createPostgresDraftStore,
  createPostgresRunStore,
  createPostgresStore,
  type DraftStoreSide,
} from '../../src/store/index.js';
import { postgresSkipReason, startTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import { runParley } from '../helpers/run-parley.js';
import { sessionRecord } from '../store/builders.js';
import { draftRecord, taskFile } from '../store/drafts/conformance.js';
import { expectSameContents, fillDataFolder } from '../store/sessions/migrate-data.js';
import { expectSameDraftLayer, fillDraftLayer } from '../store/drafts/migrate-data.js';
import { runRecord } from '../store/runs/conformance.js';

const quiet = () => undefined;

describe('parley migrate: bad arguments change nothing', () => {
  let work: string;
  beforeAll(async () => {
    work = await fs.mkdtemp(join(tmpdir(), 'parley-migrate-cli-'));
  });
  afterAll(async () => {
    await fs.rm(work, { recursive: true, force: true });
  });

  it('says --from is missing', async () => {
    const result = await runParley(['migrate', '--to', join(work, 'target')], { cwd: work });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--from is missing');
    expect(existsSync(join(work, 'target'))).toBe(false);
  });

  it('refuses a folder that is not a Parley data folder, and writes nothing into it or the target', async () => {
    const folder = join(work, 'photos');
    await fs.mkdir(folder);
    await fs.writeFile(join(folder, 'cat.jpg'), 'not a session');
    const result = await runParley(['migrate', '--from', folder, '--to', join(work, 'target')], { cwd: work });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`${folder} is not a Parley data folder: it has no sessions/ folder`);
    expect(await fs.readdir(folder)).toEqual(['cat.jpg']);
    expect(existsSync(join(work, 'target'))).toBe(false);
  });

  it('refuses a URL that is not postgres://, and a postgres:// URL it cannot parse', async () => {
    const other = await runParley(['migrate', '--from', 'mysql://user:secret@host/db', '--to', join(work, 'target')], {
      cwd: work,
    });
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('--from "mysql://user:***@host/db" is a URL Parley cannot store sessions at');
    expect(other.stderr).not.toContain('secret');

    const source = join(work, 'source');
    await (await createFileStore({ dataDir: source, onWarning: quiet })).close();
    const broken = await runParley(['migrate', '--from', source, '--to', 'postgres://user@host:notaport/db'], {
      cwd: work,
    });
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/parley: .*postgres:\/\/user:password@host:5432\/database/);
  });
});

const skipReason = postgresSkipReason();

describe.skipIf(skipReason !== undefined)('parley migrate as a process', () => {
  let server: TestPostgres;
  let work: string;
  beforeAll(async () => {
    server = await startTestPostgres();
    work = await fs.mkdtemp(join(tmpdir(), 'parley-migrate-cli-'));
  }, 120_000);
  afterAll(async () => {
    await server?.destroy();
    await fs.rm(work, { recursive: true, force: true });
  });

  it('copies a data folder into PostgreSQL and back, prints the table, and a second run copies nothing', async () => {
    // The project folder is `shop`, its data folder `shop/.parley`: the home project is named shop.
    const folder = join(work, 'shop', '.parley');
    const original = await createFileStore({ dataDir: folder, onWarning: quiet });
    const ids = await fillDataFolder(original);
    const home = { name: 'shop', path: join(work, 'shop'), dataDir: folder };
    const originalDrafts = createFileDraftStore({ home });
    await fillDraftLayer(originalDrafts, 'shop');
    await originalDrafts.close();
    await original.close();
    // A durable run waiting for an answer: after the move it must still wait, with its journal.
    const originalRuns = await createFileRunStore({ dataDir: folder });
    await originalRuns.createRun(runRecord('run-waiting', { status: 'waiting', journalLength: 2 }));
    await originalRuns.appendJournal('run-waiting', [
      { kind: 'turn', data: { agent: 'writer', turn: 1, output: 'draft' } },
      { kind: 'prompt', data: { promptId: 'p1', prompt: 'Ship it?', askedAt: 1 } },
    ]);
    await originalRuns.close();
    const schema = server.freshSchema('cli');
    const url = server.url();

    const there = await runParley(['migrate', '--from', folder, '--to', url, '--to-schema', schema], { cwd: work });
    expect(there.stderr).toBe('');
    expect(there.code).toBe(0);
    expect(there.stdout).toMatch(
      /^session +status +events +copied +checkpoints +transcripts +events sha-256 +verified$/m,
    );
    for (const id of ids)
      expect(there.stdout).toMatch(new RegExp(`^${id} +copied +\\d+ +\\d+ +\\d+ +\\d+ +[0-9a-f]{12} +ok$`, 'm'));
    expect(there.stdout).toContain('1 feature: 1 copied');
    expect(there.stdout).toMatch(/^project +home +tasks +drafts +active +roles +sha-256 +verified$/m);
    expect(there.stdout).toMatch(/^shop +yes +2 +3 +1 +1 +[0-9a-f]{12} +ok$/m);
    expect(there.stdout).toMatch(/^billing +1 +1 +1 +1 +[0-9a-f]{12} +ok$/m);
    expect(there.stdout).toContain('2 projects: 2 copied, 0 unchanged, 0 conflicts');
    expect(there.stdout).toContain('3 project tasks: 3 copied, 0 unchanged, 0 conflicts');
    expect(there.stdout).toContain('4 drafts: 4 copied, 0 unchanged, 0 conflicts');
    expect(there.stdout).toContain('2 role files: 2 copied, 0 unchanged, 0 conflicts');
    expect(there.stdout).toContain(
      '1 durable run: 1 copied, 0 continued, 0 unchanged, 0 conflicts (2 journal entries written)',
    );
    expect(there.stdout).not.toContain('test password');

    const again = await runParley(['migrate', '--from', folder, '--to', url, '--to-schema', schema], { cwd: work });
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('4 drafts: 0 copied, 4 unchanged, 0 conflicts');
    expect(again.stdout).toContain(
      '1 durable run: 0 copied, 0 continued, 1 unchanged, 0 conflicts (0 journal entries written)',
    );
    expect(again.stdout).toContain(
      `Nothing new to copy: the target already holds all of it. ${ids.length} of ${ids.length} sessions verified.`,
    );

    // Back into another project folder named shop, so its home is shop too.
    const back = join(work, 'restored', 'shop', '.parley');
    const json = await runParley(['migrate', '--from', url, '--from-schema', schema, '--to', back, '--json'], {
      cwd: work,
    });
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout) as {
      ok: boolean;
      runs: unknown;
      sessions: Array<{ status: string }>;
      draftLayer: {
        home: string;
        report: {
          ok: boolean;
          records: Array<{ status: string }>;
          projects: Array<{ project: string; source: { sha256: string }; differences: string[] }>;
        };
      };
    };
    expect(report.ok).toBe(true);
    expect(report.runs).toMatchObject({
      ok: true,
      runs: [{ runId: 'run-waiting', status: 'copied', written: 2, verified: true }],
    });
    expect(report.sessions.every((session) => session.status === 'copied')).toBe(true);
    expect(report.draftLayer.home).toBe('shop');
    expect(report.draftLayer.report.ok).toBe(true);
    expect(report.draftLayer.report.records.every((record) => record.status === 'copied')).toBe(true);
    expect(report.draftLayer.report.projects.map((project) => [project.project, project.differences])).toEqual([
      ['shop', []],
      ['billing', []],
    ]);

    const [source, restored, database] = await Promise.all([
      createFileStore({ dataDir: folder, onWarning: quiet }),
      createFileStore({ dataDir: back, onWarning: quiet }),
      createPostgresStore({ connectionString: url, schema }),
    ]);
    const sides: DraftStoreSide[] = [
      { store: createFileDraftStore({ home }), home },
      {
        store: createFileDraftStore({ home: { name: 'shop', path: join(work, 'restored', 'shop'), dataDir: back } }),
        home,
      },
      { store: await createPostgresDraftStore({ connectionString: url, schema, home, existingOnly: true }), home },
    ];
    try {
      await expectSameContents(source, database);
      await expectSameContents(source, restored);
      await expectSameDraftLayer(sides[0]!, sides[2]!);
      await expectSameDraftLayer(sides[0]!, sides[1]!);
      const runSides = [
        await createFileRunStore({ dataDir: folder }),
        await createPostgresRunStore({ connectionString: url, schema, existingOnly: true }),
        await createFileRunStore({ dataDir: back }),
      ];
      try {
        const [first, ...copies] = await Promise.all(
          runSides.map(async (side) => ({
            record: await side.getRun('run-waiting'),
            kinds: (await side.readJournal('run-waiting')).map((entry) => [entry.seq, entry.kind, entry.data]),
          })),
        );
        for (const copy of copies) expect(copy).toEqual(first);
      } finally {
        await Promise.all(runSides.map((side) => side.close()));
      }
    } finally {
      await Promise.all([
        source.close(),
        restored.close(),
        database.close(),
        ...sides.map((side) => side.store.close()),
      ]);
    }
  });

  it('exits 1, names the draft and leaves the target unchanged when the target holds a different active draft on its channel', async () => {
    const folder = join(work, 'claims', '.parley');
    const original = await createFileStore({ dataDir: folder, onWarning: quiet });
    const home = { name: 'claims', path: join(work, 'claims'), dataDir: folder };
    const drafts = createFileDraftStore({ home });
    await fillDraftLayer(drafts, 'claims');
    await drafts.close();
    await original.close();
    const schema = server.freshSchema('claims');
    const database = await createPostgresDraftStore({
      connectionString: server.url(),
      schema,
      home,
      registerHome: false,
    });
    await database.createProject({ name: 'claims', description: 'The shop', createdAt: '2025-01-01T00:00:00.000Z' });
    await database.createTask('claims', taskFile('elsewhere'));
    await database.claimDraft(draftRecord('claims', 'elsewhere', 'tui-1', 's-elsewhere'));
    await database.close();

    const result = await runParley(['migrate', '--from', folder, '--to', server.url(), '--to-schema', schema], {
      cwd: work,
    });
    expect(result.code).toBe(1);
    // The closed draft of that channel too: a draft goes in only by a claim (then a release), and the channel is held.
    expect(result.stdout).toContain(
      'draft claims/checkout/s-checkout-1: conflict: the target refuses to take it in: Channel "tui-1" already has an active draft',
    );
    expect(result.stdout).toContain(
      'draft claims/checkout/s-checkout-2: conflict: the target refuses to take it in: Channel "tui-1" already has an active draft',
    );
    expect(result.stdout).toMatch(/^claims +yes +2 +3 +1 +1 +[0-9a-f]{12} +MISMATCH$/m);
    expect(result.stdout).toContain('4 drafts: 2 copied, 0 unchanged, 2 conflicts');
    expect(result.stderr).toContain('nothing in the target was overwritten');
    const after = await createPostgresDraftStore({ connectionString: server.url(), schema, home, existingOnly: true });
    try {
      expect((await after.findActiveDraft('tui-1'))?.sessionId).toBe('s-elsewhere');
      expect(await after.getDraft('claims', 'checkout')).toBeUndefined();
      expect((await after.getDraft('claims', 'search'))?.status).toBe('closed');
    } finally {
      await after.close();
    }
  });

  it('refuses a database schema without Parley tables as the source, and creates none', async () => {
    const schema = server.freshSchema('empty');
    const result = await runParley(
      ['migrate', '--from', server.url(), '--from-schema', schema, '--to', join(work, 'never')],
      { cwd: work },
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`holds no Parley tables in schema "${schema}"`);
    expect(existsSync(join(work, 'never'))).toBe(false);
    const rows = await server.admin<{ count: string }>(
      'SELECT count(*) AS count FROM pg_namespace WHERE nspname = $1',
      [schema],
    );
    expect(rows[0]!.count).toBe('0');
  });

  it('exits 1 and names the session when the target holds a conflicting copy', async () => {
    const folder = join(work, 'conflict');
    const original = await createFileStore({ dataDir: folder, onWarning: quiet });
    await fillDataFolder(original);
    await original.close();
    const schema = server.freshSchema('conflict');
    const database = await createPostgresStore({ connectionString: server.url(), schema });
    await database.createSession(sessionRecord('dev-task-f1-t1-in_dev', { updatedAt: 1_900_000_000_000 }));
    await database.close();
    const result = await runParley(['migrate', '--from', folder, '--to', server.url(), '--to-schema', schema], {
      cwd: work,
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^dev-task-f1-t1-in_dev +conflict /m);
    expect(result.stdout).toContain(
      "dev-task-f1-t1-in_dev: conflict: the target's session record differs from the source's and is not older",
    );
    expect(result.stderr).toContain('nothing in the target was overwritten');
  });
});
