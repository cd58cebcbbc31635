import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isParleyError, type StreamEvent } from '../../../src/conversation/index.js';
import type { SessionRecord, SessionStore } from '../../../src/store/index.js';
import {
  BAD_IDS,
  agentDescription,
  checkpointInput,
  collect,
  contextDocument,
  feature,
  sessionRecord,
  storeErrorOf,
  task,
  textEvent,
  userMessageEvent,
} from '../builders.js';

/**
 * How a store's test file plugs into the shared suite. Every store runs
 * every test below; a store that differs must say so here as data with a reason, not skip silently.
 */
export interface StoreInitializer {
  name: string;
  /** A fresh, empty store. */
  create(): Promise<SessionStore>;
  /** Releases what `create` made (temp folders); the store may already be closed. */
  destroy(store: SessionStore): Promise<void>;
}

export function runStoreConformance(initializer: StoreInitializer): void {
  describe(`SessionStore conformance: ${initializer.name}`, () => {
    let store: SessionStore;

    beforeEach(async () => {
      store = await initializer.create();
    });
    afterEach(async () => {
      await initializer.destroy(store);
    });

    describe('sessions', () => {
      it('creates a session and reads back an equal record', async () => {
        const record = sessionRecord('dev-feature-1');
        const created = await store.createSession(record);
        expect(created).toEqual(record);
        expect(await store.getSession('dev-feature-1')).toEqual(record);
      });

      it('returns undefined for a session that does not exist', async () => {
        expect(await store.getSession('nobody')).toBeUndefined();
      });

      it('refuses a second session with the same id with SESSION_EXISTS and keeps the first', async () => {
        await store.createSession(sessionRecord('same', { title: 'first' }));
        const error = await storeErrorOf(() => store.createSession(sessionRecord('same', { title: 'second' })));
        expect(error.code).toBe('SESSION_EXISTS');
        expect(error.message).toContain('same');
        expect((await store.getSession('same'))?.title).toBe('first');
      });

      it('refuses an invalid record and writes nothing', async () => {
        const invalid = { ...sessionRecord('broken'), status: 'exploded' } as unknown as SessionRecord;
        await expect(store.createSession(invalid)).rejects.toSatisfy((error) => isParleyError(error, 'INVALID_INPUT'));
        expect(await store.getSession('broken')).toBeUndefined();
        expect(await collect(store.listSessions())).toEqual([]);
      });

      it('updates metadata through a function of the current record', async () => {
        await store.createSession(sessionRecord('s1'));
        const updated = await store.updateSession('s1', (current) => ({
          ...current,
          title: 'Renamed',
          updatedAt: current.updatedAt + 5,
        }));
        expect(updated.title).toBe('Renamed');
        expect(await store.getSession('s1')).toEqual(updated);
      });

      it('serializes concurrent updates of one session so none is lost', async () => {
        await store.createSession(sessionRecord('counter'));
        await Promise.all(
          Array.from({ length: 25 }, () =>
            store.updateSession('counter', (current) => ({
              ...current,
              stats: { ...current.stats, totalMessages: current.stats.totalMessages + 1 },
            })),
          ),
        );
        expect((await store.getSession('counter'))?.stats.totalMessages).toBe(25);
      });

      it('refuses an update of an unknown session with SESSION_NOT_FOUND naming it', async () => {
        const error = await storeErrorOf(() => store.updateSession('ghost', (current) => current));
        expect(error.code).toBe('SESSION_NOT_FOUND');
        expect(error.message).toContain('ghost');
      });

      it('refuses an update that changes the session id or breaks the schema, and keeps the record', async () => {
        await store.createSession(sessionRecord('fixed'));
        await expect(store.updateSession('fixed', (current) => ({ ...current, sessionId: 'other' }))).rejects.toSatisfy(
          (error) => isParleyError(error, 'INVALID_INPUT'),
        );
        await expect(store.updateSession('fixed', (current) => ({ ...current, createdAt: -1 }))).rejects.toSatisfy(
          (error) => isParleyError(error, 'INVALID_INPUT'),
        );
        expect(await store.getSession('fixed')).toEqual(sessionRecord('fixed'));
        expect(await store.getSession('other')).toBeUndefined();
      });

      it('leaves the record unchanged when the update function throws', async () => {
        await store.createSession(sessionRecord('steady'));
        await expect(
          store.updateSession('steady', () => {
            throw new Error('caller bug');
          }),
        ).rejects.toThrow('caller bug');
        expect(await store.getSession('steady')).toEqual(sessionRecord('steady'));
      });

      it('lists every session, and only those matching each filter', async () => {
        const records = [
          sessionRecord('a', {
            status: 'active',
            type: 'scripted',
            agentType: 'dev',
            scope: { kind: 'feature', featureId: 'f1' },
          }),
          sessionRecord('b', {
            status: 'archived',
            type: 'claude-sdk',
            agentType: 'qa',
            scope: { kind: 'feature', featureId: 'f2' },
          }),
          sessionRecord('c', {
            agentType: 'dev',
            scope: { kind: 'task', featureId: 'f1', taskId: 't1', taskState: 'dev' },
          }),
          sessionRecord('d', {
            agentType: 'qa',
            scope: { kind: 'task', featureId: 'f1', taskId: 't2', taskState: 'qa' },
          }),
          sessionRecord('e', {
            agentType: 'Reviewer',
            type: 'anthropic-api',
            scope: { kind: 'draft', role: 'Reviewer' },
          }),
        ];
        for (const record of records) await store.createSession(record);
        const ids = async (filter?: Parameters<SessionStore['listSessions']>[0]) =>
          (await collect(store.listSessions(filter))).map((record) => record.sessionId).sort();

        expect(await ids()).toEqual(['a', 'b', 'c', 'd', 'e']);
        expect(await ids({})).toEqual(['a', 'b', 'c', 'd', 'e']);
        expect(await ids({ status: 'archived' })).toEqual(['b']);
        expect(await ids({ status: 'active' })).toEqual(['a', 'c', 'd', 'e']);
        expect(await ids({ type: 'claude-sdk' })).toEqual(['b']);
        expect(await ids({ agentType: 'dev' })).toEqual(['a', 'c']);
        expect(await ids({ scopeKind: 'task' })).toEqual(['c', 'd']);
        expect(await ids({ scopeKind: 'draft' })).toEqual(['e']);
        expect(await ids({ featureId: 'f1' })).toEqual(['a', 'c', 'd']);
        expect(await ids({ taskId: 't2' })).toEqual(['d']);
        expect(await ids({ taskState: 'dev' })).toEqual(['c']);
        expect(await ids({ featureId: 'f1', agentType: 'qa' })).toEqual(['d']);
        expect(await ids({ scopeKind: 'imported' })).toEqual([]);
      });

      it('lists the current metadata after an update', async () => {
        await store.createSession(sessionRecord('moving'));
        await store.updateSession('moving', (current) => ({ ...current, status: 'archived' }));
        expect((await collect(store.listSessions({ status: 'archived' }))).map((record) => record.sessionId)).toEqual([
          'moving',
        ]);
        expect(await collect(store.listSessions({ status: 'active' }))).toEqual([]);
      });
    });

    describe('log', () => {
      beforeEach(async () => {
        await store.createSession(sessionRecord('log'));
      });

      it('numbers appended events from 0 with consecutive seqs, stamping session id and time', async () => {
        const before = Date.now();
        const first = await store.append('log', [textEvent('b1', 'Hel'), textEvent('b1', 'lo')]);
        const second = await store.append('log', [userMessageEvent('u1', 'hi')]);
        expect(first.map((event) => event.seq)).toEqual([0, 1]);
        expect(second.map((event) => event.seq)).toEqual([2]);
        expect(first[0]).toMatchObject({
          type: 'text_delta',
          sessionId: 'log',
          conversationId: 'main',
          blockId: 'b1',
          delta: 'Hel',
        });
        expect(first[0]!.at).toBeGreaterThanOrEqual(before);
        expect(second[0]!.at).toBe(1_700_000_000_123);
        expect(await store.lastSeq('log')).toBe(2);
      });

      it('reads the log back in seq order, equal to what append returned', async () => {
        const appended = [
          ...(await store.append('log', [userMessageEvent('u1', 'first')])),
          ...(await store.append('log', [textEvent('a1', 'x'), textEvent('a1', 'y')])),
        ];
        expect(await collect(store.readLog('log'))).toEqual(appended);
      });

      it('reports -1 as the last seq of an empty log and reads nothing', async () => {
        expect(await store.lastSeq('log')).toBe(-1);
        expect(await collect(store.readLog('log'))).toEqual([]);
      });

      it('appends nothing for an empty batch', async () => {
        expect(await store.append('log', [])).toEqual([]);
        expect(await store.lastSeq('log')).toBe(-1);
        await store.append('log', [textEvent('b', 'x')]);
        expect(await store.append('log', [])).toEqual([]);
        expect(await store.lastSeq('log')).toBe(0);
      });

      it('reads only the window asked for with afterSeq and throughSeq', async () => {
        await store.append(
          'log',
          Array.from({ length: 10 }, (_, index) => textEvent('b', String(index))),
        );
        const seqs = async (options: { afterSeq?: number; throughSeq?: number }) =>
          (await collect(store.readLog('log', options))).map((event) => event.seq);
        expect(await seqs({ afterSeq: 6 })).toEqual([7, 8, 9]);
        expect(await seqs({ throughSeq: 2 })).toEqual([0, 1, 2]);
        expect(await seqs({ afterSeq: 3, throughSeq: 5 })).toEqual([4, 5]);
        expect(await seqs({ afterSeq: -1 })).toHaveLength(10);
        expect(await seqs({ afterSeq: 9 })).toEqual([]);
        expect(await seqs({ afterSeq: 5, throughSeq: 5 })).toEqual([]);
      });

      it('keeps call order and consecutive seqs for concurrent appends to one session', async () => {
        const sizes = Array.from({ length: 40 }, (_, index) => (index % 3) + 1);
        const results = await Promise.all(
          sizes.map((size, call) =>
            store.append(
              'log',
              Array.from({ length: size }, (_, part) => textEvent('b', `${call}.${part}`)),
            ),
          ),
        );
        const flat = results.flat();
        expect(flat.map((event) => event.seq)).toEqual(flat.map((_, index) => index));
        expect(flat.map((event) => (event as { delta: string }).delta)).toEqual(
          sizes.flatMap((size, call) => Array.from({ length: size }, (_, part) => `${call}.${part}`)),
        );
        expect(await collect(store.readLog('log'))).toEqual(flat);
      });

      it('numbers each session on its own', async () => {
        await store.createSession(sessionRecord('other'));
        await Promise.all([store.append('log', [textEvent('b', '1')]), store.append('other', [textEvent('b', '2')])]);
        await store.append('log', [textEvent('b', '3')]);
        expect((await collect(store.readLog('log'))).map((event) => event.seq)).toEqual([0, 1]);
        expect((await collect(store.readLog('other'))).map((event) => [event.seq, event.sessionId])).toEqual([
          [0, 'other'],
        ]);
      });

      it('numbers the first event of a fork one past its fork point, and its empty log ends there', async () => {
        await store.createSession(sessionRecord('fork', { forkedFrom: { sessionId: 'log', seq: 41 } }));
        expect(await store.lastSeq('fork')).toBe(41);
        expect(await collect(store.readLog('fork'))).toEqual([]);
        const first = await store.append('fork', [textEvent('b', 'x'), textEvent('b', 'y')]);
        const second = await store.append('fork', [textEvent('b', 'z')]);
        expect([...first, ...second].map((event) => [event.seq, event.sessionId])).toEqual([
          [42, 'fork'],
          [43, 'fork'],
          [44, 'fork'],
        ]);
        expect(await store.lastSeq('fork')).toBe(44);
        const seqs = async (options: { afterSeq?: number; throughSeq?: number }) =>
          (await collect(store.readLog('fork', options))).map((event) => event.seq);
        expect(await seqs({})).toEqual([42, 43, 44]);
        expect(await seqs({ afterSeq: 42 })).toEqual([43, 44]);
        expect(await seqs({ throughSeq: 43 })).toEqual([42, 43]);
        expect(await seqs({ afterSeq: 10, throughSeq: 41 })).toEqual([]);
      });

      it('keeps the segments and head of a record that branched', async () => {
        const branched = { segments: [{ firstSeq: 6, parentSeq: 2 }], head: 4 };
        await store.createSession(sessionRecord('branched', branched));
        expect(await store.getSession('branched')).toMatchObject(branched);
        const updated = await store.updateSession('branched', (current) => {
          const { head: _head, ...rest } = current;
          return { ...rest, segments: [...(current.segments ?? []), { firstSeq: 9, parentSeq: 4 }] };
        });
        expect(updated.head).toBeUndefined();
        expect((await store.getSession('branched'))?.segments).toEqual([
          { firstSeq: 6, parentSeq: 2 },
          { firstSeq: 9, parentSeq: 4 },
        ]);
      });

      it('refuses appends and reads of an unknown session with SESSION_NOT_FOUND', async () => {
        expect((await storeErrorOf(() => store.append('ghost', [textEvent('b', 'x')]))).code).toBe('SESSION_NOT_FOUND');
        expect((await storeErrorOf(() => collect(store.readLog('ghost')))).code).toBe('SESSION_NOT_FOUND');
        expect((await storeErrorOf(() => store.lastSeq('ghost'))).code).toBe('SESSION_NOT_FOUND');
      });
    });

    describe('checkpoints', () => {
      beforeEach(async () => {
        await store.createSession(sessionRecord('cp'));
      });

      it('has no checkpoint before the first is written', async () => {
        expect(await store.readCheckpoint('cp')).toBeUndefined();
        expect(await store.listCheckpoints('cp')).toEqual([]);
      });

      it('numbers versions 1, 2, 3 and keeps every version readable', async () => {
        const written = [];
        for (let index = 0; index < 3; index += 1)
          written.push(await store.writeCheckpoint('cp', checkpointInput(index * 10)));
        expect(written.map((checkpoint) => checkpoint.version)).toEqual([1, 2, 3]);
        expect(written[0]).toMatchObject({ formatVersion: 1, sessionId: 'cp', version: 1, covers: { throughSeq: 0 } });
        expect(await store.readCheckpoint('cp')).toEqual(written[2]);
        for (const checkpoint of written)
          expect(await store.readCheckpoint('cp', checkpoint.version)).toEqual(checkpoint);
        expect(await store.listCheckpoints('cp')).toEqual(written);
        expect(await store.readCheckpoint('cp', 4)).toBeUndefined();
      });

      it('gives concurrent checkpoint writes distinct versions', async () => {
        const written = await Promise.all(
          Array.from({ length: 5 }, (_, index) => store.writeCheckpoint('cp', checkpointInput(index))),
        );
        expect(written.map((checkpoint) => checkpoint.version).sort()).toEqual([1, 2, 3, 4, 5]);
        expect((await store.listCheckpoints('cp')).map((checkpoint) => checkpoint.covers.throughSeq)).toEqual([
          0, 1, 2, 3, 4,
        ]);
      });

      it('refuses an invalid checkpoint and writes no version', async () => {
        const invalid = { ...checkpointInput(1), trigger: 'whenever' } as unknown as Parameters<
          SessionStore['writeCheckpoint']
        >[1];
        await expect(store.writeCheckpoint('cp', invalid)).rejects.toSatisfy((error) =>
          isParleyError(error, 'INVALID_INPUT'),
        );
        expect(await store.listCheckpoints('cp')).toEqual([]);
        expect((await store.writeCheckpoint('cp', checkpointInput(1))).version).toBe(1);
      });

      it('keeps which summarizer wrote a checkpoint, reads checkpoints that do not say, and refuses an unknown kind', async () => {
        const model = await store.writeCheckpoint(
          'cp',
          checkpointInput(1, { summarizer: { kind: 'model', backend: 'anthropic-api', model: 'claude-sonnet-4-5' } }),
        );
        const structural = await store.writeCheckpoint(
          'cp',
          checkpointInput(2, { summarizer: { kind: 'structural', fallback: true } }),
        );
        const older = await store.writeCheckpoint('cp', checkpointInput(3));
        expect((await store.readCheckpoint('cp', model.version))?.summarizer).toEqual({
          kind: 'model',
          backend: 'anthropic-api',
          model: 'claude-sonnet-4-5',
        });
        expect((await store.readCheckpoint('cp', structural.version))?.summarizer).toEqual({
          kind: 'structural',
          fallback: true,
        });
        expect(await store.readCheckpoint('cp', older.version)).not.toHaveProperty('summarizer');
        const invalid = { ...checkpointInput(4), summarizer: { kind: 'guess' } } as unknown as Parameters<
          SessionStore['writeCheckpoint']
        >[1];
        await expect(store.writeCheckpoint('cp', invalid)).rejects.toSatisfy((error) =>
          isParleyError(error, 'INVALID_INPUT'),
        );
        expect(await store.listCheckpoints('cp')).toHaveLength(3);
      });

      it('refuses checkpoints of an unknown session with SESSION_NOT_FOUND', async () => {
        expect((await storeErrorOf(() => store.writeCheckpoint('ghost', checkpointInput(1)))).code).toBe(
          'SESSION_NOT_FOUND',
        );
        expect((await storeErrorOf(() => store.readCheckpoint('ghost'))).code).toBe('SESSION_NOT_FOUND');
        expect((await storeErrorOf(() => store.listCheckpoints('ghost'))).code).toBe('SESSION_NOT_FOUND');
      });
    });

    describe('context, agent description and transcripts', () => {
      beforeEach(async () => {
        await store.createSession(sessionRecord('ctx'));
      });

      it('stores and replaces the context document', async () => {
        expect(await store.readContext('ctx')).toBeUndefined();
        await store.writeContext(contextDocument('ctx'));
        expect(await store.readContext('ctx')).toEqual(contextDocument('ctx'));
        await store.writeContext(contextDocument('ctx', { tokens: 99, sections: { only: 'this' } }));
        expect(await store.readContext('ctx')).toEqual(
          contextDocument('ctx', { tokens: 99, sections: { only: 'this' } }),
        );
      });

      it('stores and replaces the agent description', async () => {
        expect(await store.readAgentDescription('ctx')).toBeUndefined();
        await store.writeAgentDescription(agentDescription('ctx'));
        expect(await store.readAgentDescription('ctx')).toEqual(agentDescription('ctx'));
        await store.writeAgentDescription(agentDescription('ctx', { role: 'QA' }));
        expect((await store.readAgentDescription('ctx'))?.role).toBe('QA');
      });

      it('keeps transcripts verbatim under their names and lists them', async () => {
        const content = '{"type":"user"}\n{"type":"assistant","text":"ünïcødé ✓"}\n';
        expect(await store.listTranscripts('ctx')).toEqual([]);
        expect(await store.readTranscript('ctx', 'claude.jsonl')).toBeUndefined();
        await store.writeTranscript('ctx', 'claude.jsonl', content);
        await store.writeTranscript('ctx', 'gemini.json', '{}');
        expect(await store.readTranscript('ctx', 'claude.jsonl')).toBe(content);
        expect((await store.listTranscripts('ctx')).sort()).toEqual(['claude.jsonl', 'gemini.json']);
        await store.writeTranscript('ctx', 'gemini.json', '{"v":2}');
        expect(await store.readTranscript('ctx', 'gemini.json')).toBe('{"v":2}');
      });

      it('refuses documents of an unknown session with SESSION_NOT_FOUND', async () => {
        expect((await storeErrorOf(() => store.writeContext(contextDocument('ghost')))).code).toBe('SESSION_NOT_FOUND');
        expect((await storeErrorOf(() => store.readContext('ghost'))).code).toBe('SESSION_NOT_FOUND');
        expect((await storeErrorOf(() => store.writeAgentDescription(agentDescription('ghost')))).code).toBe(
          'SESSION_NOT_FOUND',
        );
        expect((await storeErrorOf(() => store.readAgentDescription('ghost'))).code).toBe('SESSION_NOT_FOUND');
        expect((await storeErrorOf(() => store.writeTranscript('ghost', 'a.txt', 'x'))).code).toBe('SESSION_NOT_FOUND');
        expect((await storeErrorOf(() => store.readTranscript('ghost', 'a.txt'))).code).toBe('SESSION_NOT_FOUND');
        expect((await storeErrorOf(() => store.listTranscripts('ghost'))).code).toBe('SESSION_NOT_FOUND');
      });

      it('refuses an invalid context document and keeps the previous one', async () => {
        await store.writeContext(contextDocument('ctx'));
        const invalid = { ...contextDocument('ctx'), tokens: -3 };
        await expect(store.writeContext(invalid)).rejects.toSatisfy((error) => isParleyError(error, 'INVALID_INPUT'));
        expect(await store.readContext('ctx')).toEqual(contextDocument('ctx'));
      });
    });

    describe('features and tasks', () => {
      it('stores, replaces and lists features', async () => {
        expect(await store.getFeature('f1')).toBeUndefined();
        expect(await store.listFeatures()).toEqual([]);
        await store.putFeature(feature('f1'));
        await store.putFeature(feature('f2', { goal: 'ship' }));
        await store.putFeature(feature('f1', { name: 'Renamed' }));
        expect(await store.getFeature('f1')).toEqual(feature('f1', { name: 'Renamed' }));
        expect((await store.listFeatures()).map((each) => each.featureId).sort()).toEqual(['f1', 'f2']);
      });

      it('stores, replaces and lists tasks, all or by feature', async () => {
        await store.putFeature(feature('f1'));
        await store.putFeature(feature('f2'));
        await store.putFeatureTask(task('f1', 't1'));
        await store.putFeatureTask(task('f1', 't2', { dependencies: ['t1'] }));
        await store.putFeatureTask(task('f2', 't1'));
        await store.putFeatureTask(task('f1', 't1', { currentState: 'qa' }));
        expect(await store.getFeatureTask('f1', 't1')).toEqual(task('f1', 't1', { currentState: 'qa' }));
        expect(await store.getFeatureTask('f2', 't2')).toBeUndefined();
        const keys = (tasks: { featureId: string; taskId: string }[]) =>
          tasks.map((each) => `${each.featureId}/${each.taskId}`).sort();
        expect(keys(await store.listFeatureTasks())).toEqual(['f1/t1', 'f1/t2', 'f2/t1']);
        expect(keys(await store.listFeatureTasks('f1'))).toEqual(['f1/t1', 'f1/t2']);
        expect(await store.listFeatureTasks('f3')).toEqual([]);
      });

      it('refuses an invalid feature or task and stores nothing', async () => {
        const badFeature = { ...feature('f1'), name: 42 } as unknown as Parameters<SessionStore['putFeature']>[0];
        await expect(store.putFeature(badFeature)).rejects.toSatisfy((error) => isParleyError(error, 'INVALID_INPUT'));
        const badTask = { ...task('f1', 't1'), dependencies: ['../up'] };
        expect((await storeErrorOf(() => store.putFeatureTask(badTask))).code).toBe('INVALID_ID');
        expect(await store.listFeatures()).toEqual([]);
        expect(await store.listFeatureTasks()).toEqual([]);
      });
    });

    describe('clone safety', () => {
      it('keeps no reference to records passed in or handed out', async () => {
        const record = sessionRecord('clone');
        const created = await store.createSession(record);
        record.settings.tokenBudget = 1;
        created.stats.totalMessages = 99;
        const read = await store.getSession('clone');
        expect(read).toEqual(sessionRecord('clone'));
        read!.scope = { kind: 'draft', role: 'mutated' };
        const [listed] = await collect(store.listSessions());
        expect(listed).toEqual(sessionRecord('clone'));
        listed!.title = 'mutated';
        let seen: SessionRecord | undefined;
        const updated = await store.updateSession('clone', (current) => {
          seen = current;
          return { ...current, title: 'kept' };
        });
        seen!.status = 'archived';
        updated.agentType = 'mutated';
        expect(await store.getSession('clone')).toEqual(sessionRecord('clone', { title: 'kept' }));
      });

      it('keeps no reference to events passed in or handed out', async () => {
        await store.createSession(sessionRecord('clone'));
        const draft = userMessageEvent('u1', 'original');
        const [appended] = await store.append('clone', [draft]);
        (draft as { block: { content: string } }).block.content = 'changed after append';
        (appended as StreamEvent & { block: { content: string } }).block.content = 'changed result';
        const [read] = await collect(store.readLog('clone'));
        expect(read).toMatchObject({ block: { content: 'original', metadata: { nested: { list: [1, 2, 3] } } } });
        (read as StreamEvent & { block: { metadata: { nested: { list: number[] } } } }).block.metadata.nested.list.push(
          4,
        );
        const [again] = await collect(store.readLog('clone'));
        expect(again).toMatchObject({ block: { content: 'original', metadata: { nested: { list: [1, 2, 3] } } } });
      });

      it('keeps no reference to checkpoints, documents, features or tasks', async () => {
        await store.createSession(sessionRecord('clone'));
        const input = checkpointInput(3);
        const checkpoint = await store.writeCheckpoint('clone', input);
        input.summary.completed.push('input mutated');
        checkpoint.pinned.push('result mutated');
        (await store.readCheckpoint('clone'))!.summary.decisions.push('read mutated');
        (await store.listCheckpoints('clone'))[0]!.liveHandles.pop();
        expect(await store.readCheckpoint('clone', 1)).toEqual({
          ...checkpointInput(3),
          formatVersion: 1,
          sessionId: 'clone',
          version: 1,
        });

        const context = contextDocument('clone');
        await store.writeContext(context);
        context.sections.project = 'mutated';
        (await store.readContext('clone'))!.sections.files = 'mutated';
        expect(await store.readContext('clone')).toEqual(contextDocument('clone'));

        const description = agentDescription('clone');
        await store.writeAgentDescription(description);
        description.instructions.push('mutated');
        (await store.readAgentDescription('clone'))!.allowedTools.push('mutated');
        expect(await store.readAgentDescription('clone')).toEqual(agentDescription('clone'));

        const stored = feature('f1');
        await store.putFeature(stored);
        stored.name = 'mutated';
        (await store.getFeature('f1'))!.name = 'mutated';
        (await store.listFeatures())[0]!.name = 'mutated';
        expect(await store.getFeature('f1')).toEqual(feature('f1'));

        const storedTask = task('f1', 't1');
        await store.putFeatureTask(storedTask);
        storedTask.dependencies.push('mutated');
        (await store.getFeatureTask('f1', 't1'))!.dependencies.push('mutated');
        (await store.listFeatureTasks())[0]!.dependencies.push('mutated');
        expect(await store.getFeatureTask('f1', 't1')).toEqual(task('f1', 't1'));
      });
    });

    describe('ids', () => {
      it.each(BAD_IDS.map((id) => [JSON.stringify(id.length > 20 ? `${id.slice(0, 20)}…` : id), id]))(
        'refuses the id %s everywhere with INVALID_ID and writes nothing',
        async (_, id) => {
          await store.createSession(sessionRecord('good'));
          const calls: Array<() => Promise<unknown>> = [
            () => store.createSession(sessionRecord(id)),
            () => store.getSession(id),
            () => store.updateSession(id, (current) => current),
            () => store.append(id, [textEvent('b', 'x')]),
            () => collect(store.readLog(id)),
            () => store.lastSeq(id),
            () => store.writeCheckpoint(id, checkpointInput(0)),
            () => store.readCheckpoint(id),
            () => store.listCheckpoints(id),
            () => store.writeContext(contextDocument(id)),
            () => store.readContext(id),
            () => store.writeAgentDescription(agentDescription(id)),
            () => store.readAgentDescription(id),
            () => store.writeTranscript(id, 'a.txt', 'x'),
            () => store.writeTranscript('good', id, 'x'),
            () => store.readTranscript('good', id),
            () => store.listTranscripts(id),
            () => store.putFeature(feature(id)),
            () => store.getFeature(id),
            () => store.putFeatureTask(task(id, 't1')),
            () => store.putFeatureTask(task('f1', id)),
            () => store.getFeatureTask(id, 't1'),
            () => store.getFeatureTask('f1', id),
            () => store.listFeatureTasks(id),
          ];
          for (const [index, call] of calls.entries()) {
            const error = await storeErrorOf(call).catch((cause: unknown) => {
              throw new Error(`call #${index} did not throw a StoreError`, { cause });
            });
            expect(error.code, `call #${index}`).toBe('INVALID_ID');
            expect(error.fault).toBe('user');
          }
          expect((await collect(store.listSessions())).map((record) => record.sessionId)).toEqual(['good']);
          expect(await store.listTranscripts('good')).toEqual([]);
          expect(await store.listFeatures()).toEqual([]);
          expect(await store.listFeatureTasks()).toEqual([]);
        },
      );

      it('names the offending id in the message', async () => {
        const error = await storeErrorOf(() => store.getSession('../etc'));
        expect(error.message).toContain('"../etc"');
        expect(error.data).toMatchObject({ value: '../etc' });
      });
    });

    describe('close', () => {
      it('rejects every call after close with STORE_CLOSED', async () => {
        await store.createSession(sessionRecord('s'));
        await store.close();
        const calls: Array<() => Promise<unknown>> = [
          () => store.createSession(sessionRecord('t')),
          () => store.getSession('s'),
          () => store.updateSession('s', (current) => current),
          () => collect(store.listSessions()),
          () => store.append('s', [textEvent('b', 'x')]),
          () => collect(store.readLog('s')),
          () => store.lastSeq('s'),
          () => store.writeCheckpoint('s', checkpointInput(0)),
          () => store.readCheckpoint('s'),
          () => store.listCheckpoints('s'),
          () => store.writeContext(contextDocument('s')),
          () => store.readContext('s'),
          () => store.writeAgentDescription(agentDescription('s')),
          () => store.readAgentDescription('s'),
          () => store.writeTranscript('s', 'a.txt', 'x'),
          () => store.readTranscript('s', 'a.txt'),
          () => store.listTranscripts('s'),
          () => store.putFeature(feature('f')),
          () => store.getFeature('f'),
          () => store.listFeatures(),
          () => store.putFeatureTask(task('f', 't')),
          () => store.getFeatureTask('f', 't'),
          () => store.listFeatureTasks(),
        ];
        for (const [index, call] of calls.entries()) {
          expect((await storeErrorOf(call)).code, `call #${index}`).toBe('STORE_CLOSED');
        }
      });

      it('lets appends already in flight finish before close resolves', async () => {
        await store.createSession(sessionRecord('s'));
        const pending = Array.from({ length: 10 }, (_, index) => store.append('s', [textEvent('b', String(index))]));
        await store.close();
        const results = await Promise.all(pending);
        expect(results.flat().map((event) => event.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      });

      it('may be closed twice', async () => {
        await store.close();
        await expect(store.close()).resolves.toBeUndefined();
      });
    });
  });
}
