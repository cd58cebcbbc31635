/**
 * `parley sessions | head`, `parley search … | head`: the reader closes the pipe before Parley is
 * done writing. The command ends as it would have (exit 0, nothing on stderr), and the data folder
 * is left closed: the next process finds no lock to take over and no index to rebuild.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFileStore } from '../../src/store/index.js';
import type { StoreWarning } from '../../src/store/errors.js';
import { parleyNodeArguments } from '../helpers/parley-cli.js';
import { sessionRecord } from '../store/builders.js';

/** Runs `parley` with its stdout's read end closed at once: every write it makes meets a closed pipe. */
function parleyIntoClosedPipe(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [...parleyNodeArguments(), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stderr }));
  });
}

describe('parley writing into a pipe its reader closed', () => {
  let dataDir: string;

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'parley-closed-output-'));
    const store = await createFileStore({ dataDir });
    for (let index = 0; index < 30; index++) {
      const id = `closed-${index}`;
      await store.createSession(sessionRecord(id, { title: `Migration ${index}` }));
      await store.append(id, [
        {
          type: 'block_complete',
          conversationId: 'main',
          block: { type: 'user_message', id: `u${index}`, createdAt: 1, content: `plan the migration, part ${index}` },
        },
      ]);
    }
    await store.close();
  });
  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it.each([
    ['sessions', ['sessions']],
    ['search', ['search', 'migration']],
  ])('`parley %s` ends cleanly and leaves the data folder closed', async (_name, args) => {
    const result = await parleyIntoClosedPipe(['--data-dir', dataDir, ...args]);
    expect(result).toEqual({ code: 0, stderr: '' });
    const warnings: StoreWarning[] = [];
    const store = await createFileStore({ dataDir, onWarning: (warning) => warnings.push(warning) });
    try {
      expect((await store.searchSessions!({ text: 'migration' })).hits).toHaveLength(20);
      expect(warnings).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
