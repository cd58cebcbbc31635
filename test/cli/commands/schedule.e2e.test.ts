/**
 * `parley schedule add | list | pause | resume | remove` as processes, against `parley serve` over a
 * temp project (the file store in its data folder). The commands find the server as the TUI does:
 * server.json in the project's data folder.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseInterval } from '../../../src/cli/commands/schedule.js';
import { runParley } from '../../helpers/run-parley.js';
import { startServeProcess, type ServeProcess } from '../../server/serve-process.js';

const repo = resolve(import.meta.dirname, '..', '..', '..');
let root: string;
let server: ServeProcess;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'parley-schedule-cli-'));
  await mkdir(join(root, 'workflows'));
  await writeFile(
    join(root, 'workflows', 'nightly.ts'),
    `import { defineHarness } from '${pathToFileURL(join(repo, 'src', 'index.ts')).href}';\n` +
      `export default defineHarness({ name: 'nightly', agents: {}, async run(context) { return context.input; } });\n`,
  );
  server = await startServeProcess(root);
}, 60_000);

afterAll(async () => {
  if (server && server.child.exitCode === null) server.child.kill('SIGTERM');
  await server?.exited;
  if (root) await rm(root, { recursive: true, force: true });
});

describe('parley schedule', () => {
  it('adds a nightly workflow schedule, lists it, pauses, resumes and removes it', async () => {
    const added = await runParley(
      [
        'schedule',
        'add',
        '--name',
        'nightly',
        '--cron',
        '0 3 * * *',
        '--tz',
        'Europe/Berlin',
        '--workflow',
        'workflows/nightly.ts',
        '--input',
        '{"depth":1}',
      ],
      { cwd: root },
    );
    expect(added.stderr).toContain('"0 3 * * *" in Europe/Berlin');
    expect(added.code).toBe(0);
    const id = added.stdout.trim();
    expect(id).toMatch(/^schedule-/);
    const listed = await runParley(['schedule', 'list'], { cwd: root });
    expect(listed.stdout).toMatch(
      new RegExp(`${id}\\s+nightly\\s+"0 3 \\* \\* \\*" in Europe/Berlin\\s+run workflows/nightly.ts`),
    );
    expect((await runParley(['schedule', 'pause', id], { cwd: root })).stdout).toContain(`${id} paused`);
    expect((await runParley(['schedule', 'resume', id], { cwd: root })).stdout).toContain(`${id} resumed; next firing`);
    expect((await runParley(['schedule', 'remove', id], { cwd: root })).stdout).toContain(`${id} removed`);
    const empty = await runParley(['schedule', 'list', '--json'], { cwd: root });
    expect(JSON.parse(empty.stdout)).toEqual([]);
  }, 60_000);

  it('refuses a cron without --tz, a bad cron and an unknown role with exit code 2, storing nothing', async () => {
    const noZone = await runParley(['schedule', 'add', '--cron', '0 3 * * *', '--workflow', 'workflows/nightly.ts'], {
      cwd: root,
    });
    expect(noZone.code).toBe(2);
    expect(noZone.stderr).toContain('needs --tz');
    const badCron = await runParley(
      ['schedule', 'add', '--cron', '0 25 * * *', '--tz', 'UTC', '--workflow', 'workflows/nightly.ts'],
      { cwd: root },
    );
    expect(badCron.code).toBe(2);
    expect(badCron.stderr).toContain('does not parse');
    const badRole = await runParley(['schedule', 'add', '--every', '1h', '--role', 'wizard', '--prompt', 'hi'], {
      cwd: root,
    });
    expect(badRole.code).toBe(2);
    expect(badRole.stderr).toContain('No role "wizard"');
    expect(JSON.parse((await runParley(['schedule', 'list', '--json'], { cwd: root })).stdout)).toEqual([]);
  }, 60_000);

  it('reads intervals in seconds or with a unit', () => {
    expect([
      parseInterval('90'),
      parseInterval('30s'),
      parseInterval('15m'),
      parseInterval('6h'),
      parseInterval('1d'),
    ]).toEqual([90, 30, 900, 21_600, 86_400]);
    expect(() => parseInterval('0')).toThrow(/not an interval/);
    expect(() => parseInterval('soon')).toThrow(/not an interval/);
  });
});
