import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleVictim, runVictim } from '../helpers/victim-process.js';
import { FileSnapshots, type SnapshotHistory } from '../../src/sessions/index.js';

const history: SnapshotHistory = {
  pathTo: (sessionId, seq) => Promise.resolve([{ sessionId, firstSeq: -1, lastSeq: seq }]),
  activePath: (sessionId) => Promise.resolve([{ sessionId, firstSeq: -1, lastSeq: Number.MAX_SAFE_INTEGER }]),
};

/** Every file under `root` but the data folder, with its mode and bytes. */
async function listTree(root: string): Promise<Record<string, string>> {
  const listing: Record<string, string> = {};
  async function walk(folder: string): Promise<void> {
    for (const entry of await fs.readdir(folder, { withFileTypes: true })) {
      const full = path.join(folder, entry.name);
      const relative = path.relative(root, full);
      if (relative === '.parley') continue;
      if (entry.isDirectory()) await walk(full);
      else listing[relative] = `${((await fs.stat(full)).mode & 0o777).toString(8)} ${await fs.readFile(full, 'utf8')}`;
    }
  }
  await walk(root);
  return listing;
}

describe('a restore killed midway', () => {
  let folder: string;
  let script: string;

  beforeAll(async () => {
    folder = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-restore-crash-'));
    // One bundle started with plain node: no tsx start-up per victim.
    script = path.join(folder, 'restore-victim.mjs');
    await bundleVictim(path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures/restore-victim.ts'), script);
  });
  afterAll(async () => {
    await fs.rm(folder, { recursive: true, force: true });
  });

  it('leaves the tree half way only until the next start, which finishes it at the point', async () => {
    const root = path.join(folder, 'project');
    const snapshotsFolder = path.join(root, '.parley', 'file-snapshots');
    await fs.mkdir(path.join(root, 'src'), { recursive: true });
    for (let index = 0; index < 60; index++)
      await fs.writeFile(path.join(root, 'src', `file-${index}.txt`), `point one ${index}\n`);
    await fs.writeFile(path.join(root, 'tool.sh'), '#!/bin/sh\n', { mode: 0o755 });
    await fs.chmod(path.join(root, 'tool.sh'), 0o755);
    const first = new FileSnapshots({ projectRoot: root, folder: snapshotsFolder, history });
    await first.take('crash', { seq: 1, phase: 'after_turn' });
    const atPoint = await listTree(root);

    // The agent's next turn: every file rewritten, some deleted, some added, a mode changed.
    for (let index = 0; index < 60; index++) {
      const file = path.join(root, 'src', `file-${index}.txt`);
      if (index % 4 === 0) await fs.rm(file);
      else await fs.writeFile(file, `point two ${index}, longer than before\n`);
    }
    for (let index = 0; index < 15; index++) await fs.writeFile(path.join(root, `added-${index}.txt`), 'new\n');
    await fs.chmod(path.join(root, 'tool.sh'), 0o644);
    await first.take('crash', { seq: 9, phase: 'after_turn' });
    await first.close();
    const later = await listTree(root);

    const victim = await runVictim(script, [root, snapshotsFolder, 'crash', '1', '35']);
    expect(victim.signal).toBe('SIGKILL');
    expect(victim.stdout).not.toContain('finished');
    const half = await listTree(root);
    // Killed midway: some paths are back at the point, some not yet; no file is torn.
    expect(half).not.toEqual(atPoint);
    expect(half).not.toEqual(later);
    for (const [file, value] of Object.entries(half)) {
      if (file.includes('.parley-restore')) continue;
      expect([atPoint[file], later[file]]).toContain(value);
    }
    await expect(fs.stat(path.join(snapshotsFolder, 'restore-intent.json'))).resolves.toBeDefined();

    // The next start finishes the restore before anything else.
    const next = new FileSnapshots({ projectRoot: root, folder: snapshotsFolder, history });
    expect(await next.recover()).toBe(true);
    expect(await listTree(root)).toEqual(atPoint);
    await expect(fs.stat(path.join(snapshotsFolder, 'restore-intent.json'))).rejects.toThrow();
    const entries = await next.list('crash');
    expect(entries.at(-1)).toMatchObject({ phase: 'restore', seq: 1, tree: entries[0]!.tree });
    // And the files count as the agent's: restoring forward again finds nothing of the user's.
    await next.restore('crash', 9);
    expect(await listTree(root)).toEqual(later);
    await next.close();
  });
});
