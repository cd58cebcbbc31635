import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createFileStore, DATA_FOLDER_GITIGNORE, prepareDataFolder } from '../../src/store/index.js';
import { sessionRecord, userMessageEvent } from './builders.js';

const folders: string[] = [];

afterEach(async () => {
  for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true });
});

async function gitProject(): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), 'parley-data-folder-'));
  folders.push(folder);
  execFileSync('git', ['init', '-q', folder]);
  return folder;
}

/** What `git add -A` would stage, as paths relative to the project. */
function staged(project: string): string[] {
  execFileSync('git', ['add', '-A'], { cwd: project });
  return execFileSync('git', ['diff', '--cached', '--name-only'], { cwd: project, encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .sort();
}

/** A data folder as a running server leaves it: a session, the token, server.json. */
async function populate(dataDir: string): Promise<void> {
  const store = await createFileStore({ dataDir });
  await store.createSession(sessionRecord('demo'));
  await store.append('demo', [userMessageEvent('u1', 'my key is sk-123, keep it safe')]);
  await store.close();
  await writeFile(join(dataDir, 'token'), 'f'.repeat(64));
  await writeFile(join(dataDir, 'server.json'), '{}');
}

describe('the data folder and git', () => {
  it('a data folder Parley makes ignores everything in it: git add -A stages none of it', async () => {
    const project = await gitProject();
    await writeFile(join(project, 'README.md'), '# demo\n');
    const dataDir = join(project, '.parley');
    await populate(dataDir);
    expect(await readFile(join(dataDir, '.gitignore'), 'utf8')).toBe(DATA_FOLDER_GITIGNORE);
    expect(staged(project)).toEqual(['README.md']);
  });

  it('kept in git on purpose, sessions are committed but the token and server.json never are', async () => {
    const project = await gitProject();
    const dataDir = join(project, '.parley');
    await mkdir(dataDir);
    // The user's own rules: keep everything but the lock and temp files (no line for the token).
    await writeFile(join(dataDir, '.gitignore'), '/store.lock\n/tmp/');
    await populate(dataDir);
    const rules = await readFile(join(dataDir, '.gitignore'), 'utf8');
    expect(rules.startsWith('/store.lock\n/tmp/\n')).toBe(true);
    expect(rules).toContain('/token\n/server.json\n');
    const paths = staged(project);
    expect(paths).toContain('.parley/sessions/demo/log.jsonl');
    expect(paths).toContain('.parley/.gitignore');
    expect(paths).not.toContain('.parley/token');
    expect(paths).not.toContain('.parley/server.json');
  });

  it('leaves a .gitignore that already names the private files unchanged, however often it is prepared', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'parley-data-folder-'));
    folders.push(folder);
    const dataDir = join(folder, '.parley');
    await prepareDataFolder(dataDir);
    await prepareDataFolder(dataDir);
    expect(await readFile(join(dataDir, '.gitignore'), 'utf8')).toBe(DATA_FOLDER_GITIGNORE);
  });
});
