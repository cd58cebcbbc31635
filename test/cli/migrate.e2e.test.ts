import { existsSync, promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFileStore, createPostgresStore } from '../../src/store/index.js';
import { postgresSkipReason, startTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import { runParley } from '../helpers/run-parley.js';
import { sessionRecord } from '../store/builders.js';
import { expectSameContents, fillDataFolder } from '../store/migrate-data.js';

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
    const other = await runParley(['migrate', '--from', 'mysql://user:secret@host/db', '--to', join(work, 'target')], { cwd: work });
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('--from "mysql://user:***@host/db" is a URL Parley cannot store sessions at');
    expect(other.stderr).not.toContain('secret');

    const source = join(work, 'source');
    await (await createFileStore({ dataDir: source, onWarning: quiet })).close();
    const broken = await runParley(['migrate', '--from', source, '--to', 'postgres://user@host:notaport/db'], { cwd: work });
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
    const folder = join(work, 'data');
    const original = await createFileStore({ dataDir: folder, onWarning: quiet });
    const ids = await fillDataFolder(original);
    await original.close();
    await fs.mkdir(join(folder, 'roles'));
    await fs.writeFile(join(folder, 'roles', 'dev.md'), '---\nname: dev\n---\nYou write code.\n');
    const schema = server.freshSchema('cli');
    const url = server.url();

    const there = await runParley(['migrate', '--from', folder, '--to', url, '--to-schema', schema], { cwd: work });
    expect(there.stderr).toBe('');
    expect(there.code).toBe(0);
    expect(there.stdout).toMatch(/^session +status +events +copied +checkpoints +transcripts +events sha-256 +verified$/m);
    for (const id of ids) expect(there.stdout).toMatch(new RegExp(`^${id} +copied +\\d+ +\\d+ +\\d+ +\\d+ +[0-9a-f]{12} +ok$`, 'm'));
    expect(there.stdout).toContain('1 feature: 1 copied');
    expect(there.stdout).toContain(`Drafts, projects, tasks and roles were NOT copied (roles in ${folder})`);
    expect(there.stdout).not.toContain('test password');

    const again = await runParley(['migrate', '--from', folder, '--to', url, '--to-schema', schema], { cwd: work });
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`Nothing new to copy: the target already holds all of it. ${ids.length} of ${ids.length} sessions verified.`);

    const back = join(work, 'back');
    const json = await runParley(['migrate', '--from', url, '--from-schema', schema, '--to', back, '--json'], { cwd: work });
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout) as { ok: boolean; sessions: Array<{ status: string }>; draftLayer: { copied: boolean } };
    expect(report.ok).toBe(true);
    expect(report.sessions.every((session) => session.status === 'copied')).toBe(true);
    expect(report.draftLayer.copied).toBe(false);

    const [source, restored, database] = await Promise.all([
      createFileStore({ dataDir: folder, onWarning: quiet }),
      createFileStore({ dataDir: back, onWarning: quiet }),
      createPostgresStore({ connectionString: url, schema }),
    ]);
    try {
      await expectSameContents(source, database);
      await expectSameContents(source, restored);
    } finally {
      await Promise.all([source.close(), restored.close(), database.close()]);
    }
  });

  it('refuses a database schema without Parley tables as the source, and creates none', async () => {
    const schema = server.freshSchema('empty');
    const result = await runParley(['migrate', '--from', server.url(), '--from-schema', schema, '--to', join(work, 'never')], { cwd: work });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`holds no Parley tables in schema "${schema}"`);
    expect(existsSync(join(work, 'never'))).toBe(false);
    const rows = await server.admin<{ count: string }>('SELECT count(*) AS count FROM pg_namespace WHERE nspname = $1', [schema]);
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
    const result = await runParley(['migrate', '--from', folder, '--to', server.url(), '--to-schema', schema], { cwd: work });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^dev-task-f1-t1-in_dev +conflict /m);
    expect(result.stdout).toContain("dev-task-f1-t1-in_dev: conflict: the target's session record differs from the source's and is not older");
    expect(result.stderr).toContain('nothing in the target was overwritten');
  });
});
