import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parleyNodeArguments } from '../../helpers/parley-cli.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..', '..');
const FIXTURES = join(ROOT, 'test', 'fixtures', 'transcripts');
const MAIN_ID = '5f2b1c9e-3d4a-4e8b-9f10-2a6c7d8e9f01';

async function parley(dataDir: string, ...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...parleyNodeArguments(), '--data-dir', dataDir, ...args], {
      cwd: ROOT,
      env: { ...process.env, NO_COLOR: '1' },
    });
    return { stdout, stderr, code: 0 };
  } catch (error) {
    const failed = error as { stdout: string; stderr: string; code: number };
    return { stdout: failed.stdout, stderr: failed.stderr, code: failed.code };
  }
}

describe('parley import', () => {
  let work: string;
  let dataDir: string;
  beforeAll(async () => {
    work = await fs.mkdtemp(join(tmpdir(), 'parley-import-cli-'));
    dataDir = join(work, 'data');
  });
  afterAll(async () => {
    await fs.rm(work, { recursive: true, force: true });
  });

  it('imports a Claude Code folder and prints what it imported', async () => {
    const result = await parley(dataDir, 'import', join(FIXTURES, 'claude-code'));
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Imported 2 sessions');
    expect(result.stdout).toContain(
      `cc-${MAIN_ID}  claude-code  new  35 blocks, 1 subagent, checkpoint, 1 warning  "Add a --verbose flag to the CLI"`,
    );
    expect(result.stdout).toContain('Warnings (1):');
  });

  it('prints JSON with --json, and a second import changes nothing', async () => {
    const result = await parley(dataDir, 'import', join(FIXTURES, 'claude-code'), '--json');
    expect(result.code).toBe(0);
    const parsed = JSON.parse(result.stdout) as { sessions: Array<{ sessionId: string; status: string }> };
    expect(parsed.sessions.map((session) => session.status)).toEqual(['unchanged', 'unchanged']);
  });

  it('leaves sessions that `parley sessions` lists and `parley show` prints like any other', async () => {
    const list = await parley(dataDir, 'sessions', '--json');
    expect(list.code).toBe(0);
    const sessions = JSON.parse(list.stdout) as Array<{
      sessionId: string;
      readOnly?: boolean;
      scope: { kind: string };
    }>;
    expect(sessions.map((session) => session.sessionId).sort()).toEqual([
      `cc-${MAIN_ID}`,
      'cc-9a7d4c21-0b6e-4f3a-8d52-7c1e0f9b3a64',
    ]);
    expect(sessions.every((session) => session.readOnly === true && session.scope.kind === 'imported')).toBe(true);

    const show = await parley(dataDir, 'show', `cc-${MAIN_ID}`);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain('(read only)');
    expect(show.stdout).toContain('Add a --verbose flag to the CLI');
    expect(show.stdout).toContain('Flags are parsed in src/args.ts');

    const json = await parley(dataDir, 'show', `cc-${MAIN_ID}`, '--json');
    const runtime = JSON.parse(json.stdout) as {
      blocks: unknown[];
      subagents: Array<{ id: string; blocks: unknown[] }>;
    };
    // The transcript's 35 main-thread blocks, each once: the second import appended nothing.
    expect(runtime.blocks).toHaveLength(35);
    expect(runtime.subagents.map((thread) => thread.id)).toEqual(['a0f3c9d2e1b4']);
  });

  it('fails with a message naming the path when there is nothing to import', async () => {
    const result = await parley(dataDir, 'import', join(work, 'missing'));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`Nothing to import at ${join(work, 'missing')}`);
  });
});
