import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createFileRunStore, createMemoryRunStore, migrateRuns, type RunStore } from '../../../src/store/index.js';
import { runRecord } from './conformance.js';

const waiting = runRecord('run-waiting', {
  status: 'waiting',
  pendingPrompts: [{ promptId: 'p1', prompt: 'Ship it?', askedAt: '2025-01-02T03:04:06.000Z', choices: ['yes', 'no'] }],
  journalLength: 3,
});

async function fill(store: RunStore): Promise<void> {
  await store.createRun(waiting);
  await store.appendJournal('run-waiting', [
    { kind: 'session', data: { agent: 'writer', index: 1, sessionId: 's-1' } },
    { kind: 'turn', data: { agent: 'writer', turn: 1, output: 'draft' } },
    { kind: 'prompt', data: { promptId: 'p1', prompt: 'Ship it?', askedAt: 1 } },
  ]);
  await store.createRun(runRecord('run-done', { status: 'complete', createdAt: '2025-01-03T00:00:00.000Z' }));
}

describe('migrateRuns: durable runs from one store to another', () => {
  const folders: string[] = [];
  afterEach(async () => {
    for (const folder of folders.splice(0)) await fs.rm(folder, { recursive: true, force: true });
  });

  it('copies every run with its record and journal, verifies them, and a second migration changes nothing', async () => {
    const source = createMemoryRunStore();
    await fill(source);
    const folder = await fs.mkdtemp(join(tmpdir(), 'parley-run-migrate-'));
    folders.push(folder);
    const target = await createFileRunStore({ dataDir: folder });
    const report = await migrateRuns(source, target);
    expect(report.ok).toBe(true);
    expect(report.runs.map((run) => [run.runId, run.status, run.entries, run.written, run.verified])).toEqual([
      ['run-waiting', 'copied', 3, 3, true],
      ['run-done', 'copied', 0, 0, true],
    ]);
    expect(await target.getRun('run-waiting')).toEqual(waiting);
    expect((await target.readJournal('run-waiting')).map((entry) => [entry.seq, entry.kind, entry.data])).toEqual(
      (await source.readJournal('run-waiting')).map((entry) => [entry.seq, entry.kind, entry.data]),
    );

    const again = await migrateRuns(source, target);
    expect(again.ok).toBe(true);
    expect(again.runs.map((run) => [run.status, run.written])).toEqual([
      ['unchanged', 0],
      ['unchanged', 0],
    ]);
    await target.close();
  });

  it('continues a run the source ran on since the last migration: only the new entries, and the newer record', async () => {
    const source = createMemoryRunStore();
    const target = createMemoryRunStore();
    await fill(source);
    await migrateRuns(source, target);
    await source.appendJournal('run-waiting', [
      { kind: 'reply', data: { promptId: 'p1', content: 'yes', timestamp: 2 } },
    ]);
    const answered = { ...waiting, status: 'running' as const, pendingPrompts: [], journalLength: 4 };
    await source.updateRun(answered);
    const report = await migrateRuns(source, target);
    expect(report.ok).toBe(true);
    expect(report.runs[0]).toMatchObject({
      runId: 'run-waiting',
      status: 'continued',
      entries: 4,
      written: 1,
      verified: true,
    });
    expect(await target.getRun('run-waiting')).toEqual(answered);
    expect((await target.readJournal('run-waiting')).map((entry) => entry.kind)).toEqual([
      'session',
      'turn',
      'prompt',
      'reply',
    ]);
  });

  it('leaves a run that ran on in the target alone, as a conflict that says why, and changes neither side', async () => {
    const source = createMemoryRunStore();
    const target = createMemoryRunStore();
    await fill(source);
    await migrateRuns(source, target);
    await target.appendJournal('run-waiting', [
      { kind: 'reply', data: { promptId: 'p1', content: 'no', timestamp: 3 } },
    ]);
    await source.appendJournal('run-waiting', [
      { kind: 'reply', data: { promptId: 'p1', content: 'yes', timestamp: 2 } },
    ]);
    const report = await migrateRuns(source, target);
    expect(report.ok).toBe(false);
    expect(report.runs[0]).toMatchObject({ runId: 'run-waiting', status: 'conflict', written: 0, verified: false });
    expect(report.runs[0]!.reason).toMatch(/not a prefix of the source's.*neither copy was changed/);
    expect(((await target.readJournal('run-waiting')).at(-1)!.data as { content: string }).content).toBe('no');
    expect(((await source.readJournal('run-waiting')).at(-1)!.data as { content: string }).content).toBe('yes');
    expect(report.runs[1]).toMatchObject({ runId: 'run-done', status: 'unchanged', verified: true });
  });
});
