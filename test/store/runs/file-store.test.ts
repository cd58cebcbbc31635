import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createFileRunStore, type RunStore } from '../../../src/store/index.js';
import { ValidationError } from '../../../src/conversation/index.js';
import { storeErrorOf } from '../builders.js';
import { killAndWait, startFixture, waitForOutput } from '../child-process.js';
import { runRecord, runRunStoreConformance } from './conformance.js';

const folders = new WeakMap<RunStore, string>();

async function openIn(dataDir: string): Promise<RunStore> {
  const store = await createFileRunStore({ dataDir, onWarning: () => undefined });
  folders.set(store, dataDir);
  return store;
}

runRunStoreConformance({
  name: 'file run store',
  create: async () => openIn(await fs.mkdtemp(join(tmpdir(), 'parley-run-store-'))),
  reopen: async (store) => {
    await store.close();
    return openIn(folders.get(store)!);
  },
  destroy: async (store) => {
    await store.close();
    await fs.rm(folders.get(store)!, { recursive: true, force: true });
  },
});

describe('file run store: the journal on disk', () => {
  const roots: string[] = [];
  afterEach(async () => {
    for (const root of roots.splice(0)) await fs.rm(root, { recursive: true, force: true });
  });
  async function fresh(): Promise<{ root: string; store: RunStore }> {
    const root = await fs.mkdtemp(join(tmpdir(), 'parley-run-store-'));
    roots.push(root);
    return { root, store: await openIn(root) };
  }

  it('a torn last line (a crash mid-write) is left out and set aside; every acknowledged entry survives and numbering goes on', async () => {
    const { root, store } = await fresh();
    await store.createRun(runRecord('run-1'));
    await store.appendJournal('run-1', [
      { kind: 'turn', data: { output: 'one' } },
      { kind: 'turn', data: { output: 'two' } },
    ]);
    await store.close();
    const journal = join(root, 'runs', 'run-1', 'journal.jsonl');
    await fs.appendFile(journal, '{"seq":2,"kind":"turn","at":"2025-01-0');
    const warnings: string[] = [];
    const reopened = await createFileRunStore({ dataDir: root, onWarning: (warning) => warnings.push(warning.code) });
    expect((await reopened.readJournal('run-1')).map((entry) => entry.seq)).toEqual([0, 1]);
    expect((await reopened.appendJournal('run-1', [{ kind: 'turn', data: { output: 'three' } }]))[0]!.seq).toBe(2);
    expect(warnings).toEqual(['TORN_LOG_TAIL']);
    expect((await reopened.readJournal('run-1')).map((entry) => (entry.data as { output: string }).output)).toEqual([
      'one',
      'two',
      'three',
    ]);
    expect((await fs.readdir(join(root, 'runs', 'run-1'))).some((name) => name.startsWith('journal.jsonl.torn-'))).toBe(
      true,
    );
    await reopened.close();
  });

  it('a damaged line before the last is CORRUPT_FILE, not a silent drop', async () => {
    const { root, store } = await fresh();
    await store.createRun(runRecord('run-1'));
    await store.appendJournal('run-1', [{ kind: 'a' }, { kind: 'b' }]);
    const journal = join(root, 'runs', 'run-1', 'journal.jsonl');
    const lines = (await fs.readFile(journal, 'utf8')).split('\n');
    lines[1] = '{not json';
    await fs.writeFile(journal, lines.join('\n'));
    expect((await storeErrorOf(() => store.readJournal('run-1'))).code).toBe('CORRUPT_FILE');
    await store.close();
  });

  it('a deferred append acknowledged before a SIGKILL survives it: written, though not yet synced', async () => {
    const { root, store } = await fresh();
    await store.createRun(runRecord('run-1'));
    await store.close();
    const child = startFixture('deferred-journal.ts', [root, 'run-1', '25']);
    try {
      await waitForOutput(child, (stdout) => stdout.includes('done'));
    } finally {
      await killAndWait(child);
    }
    const reopened = await openIn(root);
    const journal = await reopened.readJournal('run-1');
    expect(journal).toHaveLength(50);
    expect(journal.at(-1)).toMatchObject({ seq: 49, kind: 'turn', data: { turn: 25, output: 'answer 25' } });
    await reopened.close();
  });

  it('deferred entries become durable before a record update of their run and at close; a bad deferredSyncMs is refused', async () => {
    const { root, store } = await fresh();
    await store.createRun(runRecord('run-1'));
    await store.appendJournal('run-1', [{ kind: 'turn', data: { output: 'one' } }], { sync: 'deferred' });
    await store.updateRun({ ...runRecord('run-1'), status: 'waiting' });
    await store.appendJournal('run-1', [{ kind: 'turn', data: { output: 'two' } }], { sync: 'deferred' });
    await store.close();
    const reopened = await openIn(root);
    expect((await reopened.readJournal('run-1')).map((entry) => (entry.data as { output: string }).output)).toEqual([
      'one',
      'two',
    ]);
    expect((await reopened.getRun('run-1'))?.status).toBe('waiting');
    await reopened.close();
    await expect(createFileRunStore({ dataDir: root, deferredSyncMs: -1 })).rejects.toBeInstanceOf(ValidationError);
    await expect(createFileRunStore({ dataDir: root, deferredSyncMs: Number.NaN })).rejects.toThrow(
      /deferredSyncMs must be a number of milliseconds/,
    );
  });

  it('keeps each run in runs/<id>/ as readable JSON', async () => {
    const { root, store } = await fresh();
    await store.createRun(runRecord('run-1'));
    const file = JSON.parse(await fs.readFile(join(root, 'runs', 'run-1', 'run.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(file).toMatchObject({ formatVersion: 1, id: 'run-1', status: 'running' });
    await store.close();
  });
});
