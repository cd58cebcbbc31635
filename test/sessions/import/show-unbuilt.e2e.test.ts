import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parleyNodeArguments } from '../../helpers/parley-cli.js';
import { createSessionManager } from '../../../src/sessions/index.js';
import { createFileStore } from '../../../src/store/index.js';
import { generateClaudeCodeTranscript } from '../../fixtures/transcripts/generate.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..', '..');
const PROJECT = join(ROOT, 'test', 'fixtures', 'transcripts', 'claude-code', '-home-dev-src-demo');
/** Fixture sessions copied without their subagent files (so they are imported deferred): a rewind with an inline sidechain, a compaction. */
const FIXTURE_IDS = ['9a7d4c21-0b6e-4f3a-8d52-7c1e0f9b3a64', '5f2b1c9e-3d4a-4e8b-9f10-2a6c7d8e9f01'];
const GENERATED_ID = '0f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b';

async function parley(dataDir: string, ...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [...parleyNodeArguments(), '--data-dir', dataDir, ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1' },
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout;
}

describe('parley show of an imported session whose blocks are not built yet', () => {
  let work: string;
  let dataDir: string;
  beforeAll(async () => {
    work = await fs.mkdtemp(join(tmpdir(), 'parley-show-unbuilt-'));
    dataDir = join(work, 'data');
    const folder = join(work, 'project');
    await fs.mkdir(folder);
    for (const id of FIXTURE_IDS) await fs.copyFile(join(PROJECT, `${id}.jsonl`), join(folder, `${id}.jsonl`));
    await generateClaudeCodeTranscript(join(folder, `${GENERATED_ID}.jsonl`), { targetBytes: 1_000_000, seed: 5 });
    await parley(dataDir, 'import', folder);
  });
  afterAll(async () => {
    await fs.rm(work, { recursive: true, force: true });
  });

  it.each([
    ['a rewind with an inline sidechain', `cc-${FIXTURE_IDS[0]}`],
    ['a compaction', `cc-${FIXTURE_IDS[1]}`],
    ['a generated 1 MB transcript', `cc-${GENERATED_ID}`],
  ])('prints exactly what it prints once the log is built, and builds nothing itself: %s', async (_name, id) => {
    const before = [await parley(dataDir, 'show', id), await parley(dataDir, 'show', id, '--json')];
    const store = await createFileStore({ dataDir, onWarning: () => {} });
    expect(await store.lastSeq(id)).toBe(-1);
    expect(await store.readTranscript(id, 'import-manifest.json')).toContain('pendingEvents');
    await store.close();

    // The first reader of the stored events (here `get_events`'s path) builds the log.
    const manager = await createSessionManager({ dataDir, preloadTokenizer: false });
    expect((await manager.getEvents(id)).length).toBeGreaterThan(0);
    await manager.close();

    const after = [await parley(dataDir, 'show', id), await parley(dataDir, 'show', id, '--json')];
    expect(before.every((output) => output.length > 200)).toBe(true);
    expect(after).toEqual(before);
  });
});
