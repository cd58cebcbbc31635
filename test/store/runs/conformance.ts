import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../../../src/conversation/index.js';
import type { RunRecord, RunStore } from '../../../src/store/index.js';
import { BAD_IDS, storeErrorOf } from '../builders.js';

/** How a RunStore's test file plugs into the shared suite (file, memory and PostgreSQL run it all). */
export interface RunStoreInitializer {
  name: string;
  /** A fresh, empty store. */
  create(): Promise<RunStore>;
  /** Opens the same store again (a restart); its old handle is closed first. */
  reopen?(store: RunStore): Promise<RunStore>;
  /** Releases what `create` made; the store may already be closed. */
  destroy(store: RunStore): Promise<void>;
}

export function runRecord(id: string, overrides: Partial<RunRecord> = {}): RunRecord {
  return {
    id,
    harness: 'code-review',
    workflow: { ref: 'workflows/review.ts', path: '/project/workflows/review.ts' },
    input: { file: 'a.ts' },
    state: {},
    status: 'running',
    phases: [],
    pendingPrompts: [],
    agents: [],
    journalLength: 0,
    createdAt: '2025-01-02T03:04:05.000Z',
    updatedAt: '2025-01-02T03:04:05.000Z',
    ...overrides,
  };
}

export function runRunStoreConformance(initializer: RunStoreInitializer): void {
  describe(`RunStore conformance: ${initializer.name}`, () => {
    let store: RunStore;
    beforeEach(async () => {
      store = await initializer.create();
    });
    afterEach(async () => {
      await initializer.destroy(store);
    });

    describe('records', () => {
      it('creates, reads back and updates a run, never keeping the caller’s object', async () => {
        const record = runRecord('run-1', {
          pendingPrompts: [
            { promptId: 'prompt-1', prompt: 'Approve?', choices: ['yes', 'no'], askedAt: '2025-01-02T03:04:06.000Z' },
          ],
        });
        const created = await store.createRun(record);
        record.status = 'failed';
        expect(created.status).toBe('running');
        expect(await store.getRun('run-1')).toEqual(created);
        const updated = await store.updateRun({
          ...created,
          status: 'waiting',
          phase: 'review',
          phases: ['review'],
          updatedAt: '2025-01-02T03:05:00.000Z',
        });
        expect(await store.getRun('run-1')).toEqual(updated);
        (await store.getRun('run-1'))!.status = 'aborted';
        expect((await store.getRun('run-1'))!.status).toBe('waiting');
      });

      it('an unknown run is undefined; updating it is RUN_NOT_FOUND; a taken id is RUN_EXISTS', async () => {
        expect(await store.getRun('nope')).toBeUndefined();
        expect((await storeErrorOf(() => store.updateRun(runRecord('nope')))).code).toBe('RUN_NOT_FOUND');
        await store.createRun(runRecord('run-1'));
        expect((await storeErrorOf(() => store.createRun(runRecord('run-1', { harness: 'other' })))).code).toBe(
          'RUN_EXISTS',
        );
        expect((await store.getRun('run-1'))!.harness).toBe('code-review');
      });

      it('lists newest first, filtered by project and status', async () => {
        await store.createRun(runRecord('a', { createdAt: '2025-01-01T00:00:00.000Z', project: 'shop' }));
        await store.createRun(
          runRecord('b', { createdAt: '2025-01-03T00:00:00.000Z', project: 'shop', status: 'waiting' }),
        );
        await store.createRun(runRecord('c', { createdAt: '2025-01-02T00:00:00.000Z', status: 'complete' }));
        expect((await store.listRuns()).map((run) => run.id)).toEqual(['b', 'c', 'a']);
        expect((await store.listRuns({ project: 'shop' })).map((run) => run.id)).toEqual(['b', 'a']);
        expect((await store.listRuns({ status: ['running', 'waiting'] })).map((run) => run.id)).toEqual(['b', 'a']);
        expect(await store.listRuns({ status: [] })).toEqual([]);
      });

      it('refuses bad ids and invalid records with a clear error, storing nothing', async () => {
        for (const id of BAD_IDS)
          expect((await storeErrorOf(() => store.createRun(runRecord(id)))).code).toBe('INVALID_ID');
        await expect(
          store.createRun({ ...runRecord('run-1'), status: 'sleeping' } as unknown as RunRecord),
        ).rejects.toBeInstanceOf(ValidationError);
        await expect(store.createRun({ ...runRecord('run-1'), createdAt: 'yesterday' })).rejects.toThrow(/createdAt/);
        expect(await store.listRuns()).toEqual([]);
        expect((await storeErrorOf(() => store.getRun('../x'))).code).toBe('INVALID_ID');
      });
    });

    describe('the journal', () => {
      it('numbers entries 0, 1, 2… in call order, concurrent appends included, and reads from a seq', async () => {
        await store.createRun(runRecord('run-1'));
        const first = await store.appendJournal('run-1', [
          { kind: 'turn', data: { agent: 'writer', output: 'draft' } },
          { kind: 'now', data: { value: 5 } },
        ]);
        expect(first.map((entry) => entry.seq)).toEqual([0, 1]);
        const concurrent = await Promise.all(
          Array.from({ length: 20 }, (_, index) =>
            store.appendJournal('run-1', [{ kind: 'random', data: { value: index } }]),
          ),
        );
        expect(concurrent.map((entries) => entries[0]!.seq)).toEqual(
          Array.from({ length: 20 }, (_, index) => index + 2),
        );
        const all = await store.readJournal('run-1');
        expect(all.map((entry) => entry.seq)).toEqual(Array.from({ length: 22 }, (_, index) => index));
        expect(all[0]).toMatchObject({ kind: 'turn', data: { agent: 'writer', output: 'draft' } });
        expect(all.slice(2).map((entry) => (entry.data as { value: number }).value)).toEqual(
          Array.from({ length: 20 }, (_, index) => index),
        );
        expect((await store.readJournal('run-1', { fromSeq: 20 })).map((entry) => entry.seq)).toEqual([20, 21]);
        expect(await store.readJournal('run-1', { fromSeq: 99 })).toEqual([]);
        expect(Number.isNaN(Date.parse(all[0]!.at))).toBe(false);
      });

      it('keeps each run’s journal apart', async () => {
        await store.createRun(runRecord('a'));
        await store.createRun(runRecord('b'));
        await store.appendJournal('a', [{ kind: 'x', data: 1 }]);
        await store.appendJournal('b', [{ kind: 'y', data: 2 }, { kind: 'z' }]);
        expect((await store.readJournal('a')).map((entry) => entry.kind)).toEqual(['x']);
        expect((await store.readJournal('b')).map((entry) => [entry.seq, entry.kind, entry.data])).toEqual([
          [0, 'y', 2],
          [1, 'z', null],
        ]);
      });

      it('deferred appends (agent turn results) are numbered in call order with durable ones, read back at once, and kept across a reopen', async () => {
        await store.createRun(runRecord('run-1'));
        const mixed = await Promise.all([
          store.appendJournal(
            'run-1',
            [
              { kind: 'turn-start', data: { turn: 1 } },
              { kind: 'turn', data: { turn: 1 } },
            ],
            { sync: 'deferred' },
          ),
          store.appendJournal('run-1', [{ kind: 'prompt', data: { promptId: 'p1' } }]),
          store.appendJournal('run-1', [{ kind: 'turn', data: { turn: 2 } }], { sync: 'deferred' }),
        ]);
        expect(mixed.map((entries) => entries.map((entry) => entry.seq))).toEqual([[0, 1], [2], [3]]);
        expect((await store.readJournal('run-1')).map((entry) => entry.kind)).toEqual([
          'turn-start',
          'turn',
          'prompt',
          'turn',
        ]);
        if (initializer.reopen) {
          store = await initializer.reopen(store);
          expect((await store.readJournal('run-1')).map((entry) => entry.seq)).toEqual([0, 1, 2, 3]);
          expect((await store.appendJournal('run-1', [{ kind: 'turn' }], { sync: 'deferred' }))[0]!.seq).toBe(4);
        }
      });

      it('an unknown run is RUN_NOT_FOUND; data that is not JSON and a bad fromSeq are refused', async () => {
        expect((await storeErrorOf(() => store.appendJournal('nope', [{ kind: 'x' }]))).code).toBe('RUN_NOT_FOUND');
        expect((await storeErrorOf(() => store.readJournal('nope'))).code).toBe('RUN_NOT_FOUND');
        await store.createRun(runRecord('run-1'));
        const cyclic: Record<string, unknown> = {};
        cyclic.self = cyclic;
        await expect(store.appendJournal('run-1', [{ kind: 'x', data: cyclic }])).rejects.toBeInstanceOf(
          ValidationError,
        );
        await expect(store.appendJournal('run-1', [{ kind: '' }])).rejects.toBeInstanceOf(ValidationError);
        await expect(store.readJournal('run-1', { fromSeq: -1 })).rejects.toBeInstanceOf(ValidationError);
        expect(await store.readJournal('run-1')).toEqual([]);
      });

      it.runIf(initializer.reopen !== undefined)(
        'records and journals survive a reopen, and numbering goes on after them',
        async () => {
          await store.createRun(runRecord('run-1', { status: 'waiting' }));
          await store.appendJournal('run-1', [{ kind: 'a' }, { kind: 'b' }]);
          store = await initializer.reopen!(store);
          expect((await store.getRun('run-1'))!.status).toBe('waiting');
          expect((await store.appendJournal('run-1', [{ kind: 'c' }]))[0]!.seq).toBe(2);
          expect((await store.readJournal('run-1')).map((entry) => entry.kind)).toEqual(['a', 'b', 'c']);
        },
      );

      it('a run with no input and no state reads back as it was written', async () => {
        const created = await store.createRun(runRecord('bare', { input: undefined, state: undefined }));
        expect(await store.getRun('bare')).toEqual(created);
        if (initializer.reopen) store = await initializer.reopen(store);
        expect((await store.getRun('bare'))!).toMatchObject({ id: 'bare', status: 'running' });
        expect((await store.listRuns()).map((run) => run.id)).toEqual(['bare']);
      });
    });

    it('after close(), every call is STORE_CLOSED', async () => {
      await store.createRun(runRecord('run-1'));
      await store.close();
      expect((await storeErrorOf(() => store.getRun('run-1'))).code).toBe('STORE_CLOSED');
      expect((await storeErrorOf(() => store.listRuns())).code).toBe('STORE_CLOSED');
      expect((await storeErrorOf(() => store.appendJournal('run-1', [{ kind: 'x' }]))).code).toBe('STORE_CLOSED');
      expect((await storeErrorOf(() => store.updateRun(runRecord('run-1')))).code).toBe('STORE_CLOSED');
    });
  });
}
