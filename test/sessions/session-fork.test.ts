import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isParleyError, MAIN_CONVERSATION, type StreamEvent } from '../../src/conversation/index.js';
import { createSessionManager, parseForkPoint, type SessionManager } from '../../src/sessions/index.js';
import { createFileStore, createMemoryStore, type CheckpointInput, type SessionStore } from '../../src/store/index.js';

let clockValue = 1_700_000_000_000;
const clock = () => clockValue++;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface StoreKind {
  name: string;
  open: () => Promise<{ store: SessionStore; reopen: () => Promise<SessionStore> }>;
}

const stores: StoreKind[] = [
  {
    name: 'memory',
    open: async () => {
      const store = createMemoryStore();
      // The same store stands for a restart: nothing of it lives in the manager.
      return { store, reopen: async () => store };
    },
  },
  {
    name: 'file',
    open: async () => {
      const dataDir = await mkdtemp(join(tmpdir(), 'parley-fork-'));
      cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
      let store = await createFileStore({ dataDir });
      cleanups.push(() => store.close());
      return {
        store,
        reopen: async () => {
          await store.close();
          store = await createFileStore({ dataDir });
          return store;
        },
      };
    },
  },
];

async function expectCode(promise: Promise<unknown>, code: string): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(isParleyError(error, code), `expected ${code}, got ${String(error)}`).toBe(true);
  return error as Error;
}

function checkpointThrough(throughSeq: number, completed: string): CheckpointInput {
  return {
    createdAt: new Date(clock()).toISOString(),
    trigger: 'manual',
    summary: { completed: [completed], inProgress: [], pending: [], decisions: [], blockers: [] },
    pinned: [],
    liveHandles: [],
    covers: { throughSeq, messageCount: throughSeq + 1 },
    tokens: { checkpoint: 10, lastCompactionInput: 100, totalSaved: 90 },
  };
}

/** A managed session of six messages, seqs 0 to 5: three user questions, each answered. */
async function sessionOfThreeTurns(manager: SessionManager): Promise<string> {
  const session = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
  for (const turn of [1, 2, 3]) {
    await manager.addMessage(session.sessionId, { role: 'user', content: `question ${turn}` });
    await manager.addMessage(session.sessionId, { role: 'assistant', content: `answer ${turn}` });
  }
  return session.sessionId;
}

async function texts(manager: SessionManager, sessionId: string): Promise<string[]> {
  return (await manager.getRecentMessages(sessionId, 100)).map((message) => message.content);
}

for (const kind of stores) {
  describe(`forkSession on the ${kind.name} store`, () => {
    async function openManager(): Promise<{ manager: SessionManager; reopen: () => Promise<SessionManager> }> {
      const { store, reopen } = await kind.open();
      const manager = await createSessionManager({ store, clock });
      let current = manager;
      cleanups.push(() => current.close());
      return {
        manager,
        reopen: async () => {
          await current.close();
          current = await createSessionManager({ store: await reopen(), clock });
          return current;
        },
      };
    }

    it('a fork whose description copy was lost (a crash after its record) runs as its source agent, and keeps it', async () => {
      const { manager, reopen } = await openManager();
      const sourceId = await sessionOfThreeTurns(manager);
      await manager.setAgentDescription(sourceId, { role: 'You review pull requests, line by line.' });
      // The copy of the description fails after the fork's record is written: what a crash between the two leaves.
      const write = manager.store.writeAgentDescription.bind(manager.store);
      manager.store.writeAgentDescription = () => Promise.reject(new Error('killed before the copy'));
      const failed = await manager
        .forkSession(sourceId, { at: 3, sessionId: 'fork-without-copy' })
        .catch((e: Error) => e);
      expect(String(failed)).toContain('killed before the copy');
      manager.store.writeAgentDescription = write;
      const after = await reopen();
      const fork = await after.getSession('fork-without-copy');
      expect(fork.forkedFrom).toEqual({ sessionId: sourceId, seq: 3 });
      expect(await after.store.readAgentDescription(fork.sessionId)).toBeUndefined();
      expect((await after.getAgentDescription(fork.sessionId)).role).toBe('You review pull requests, line by line.');
      // Its first request stores the description it ran with, so a later change to the source's does not move it.
      await after.buildRequest(fork.sessionId, 'question 3 again');
      expect((await after.store.readAgentDescription(fork.sessionId))?.role).toBe(
        'You review pull requests, line by line.',
      );
    });

    it('a fork at a seq holds the source history through it, renumbered as its own, and the source is unchanged', async () => {
      const { manager } = await openManager();
      const sourceId = await sessionOfThreeTurns(manager);
      const sourceBefore = await manager.getEvents(sourceId);
      const fork = await manager.forkSession(sourceId, { at: 3 });
      expect(fork.sessionId).not.toBe(sourceId);
      expect(fork.forkedFrom).toEqual({ sessionId: sourceId, seq: 3 });
      expect(fork.native).toBeUndefined();
      expect(fork.stats.totalMessages).toBe(4);
      // Shared, not copied: the fork's own log holds nothing until it goes on.
      const own: StreamEvent[] = [];
      for await (const event of manager.store.readLog(fork.sessionId)) own.push(event);
      expect(own).toEqual([]);
      expect(await manager.store.lastSeq(fork.sessionId)).toBe(3);
      const forkEvents = await manager.getEvents(fork.sessionId);
      expect(forkEvents.map((event) => event.seq)).toEqual([0, 1, 2, 3]);
      expect(forkEvents.every((event) => event.sessionId === fork.sessionId)).toBe(true);
      expect(forkEvents.map(({ sessionId: _id, ...rest }) => rest)).toEqual(
        sourceBefore.slice(0, 4).map(({ sessionId: _id, ...rest }) => rest),
      );
      expect(await texts(manager, fork.sessionId)).toEqual(['question 1', 'answer 1', 'question 2', 'answer 2']);

      // The branches go their own ways from here.
      const added = await manager.addMessage(fork.sessionId, { role: 'user', content: 'another question 3' });
      expect(added.seq).toBe(4);
      await manager.addMessage(sourceId, { role: 'user', content: 'question 4' });
      expect(await texts(manager, fork.sessionId)).toEqual([
        'question 1',
        'answer 1',
        'question 2',
        'answer 2',
        'another question 3',
      ]);
      expect((await manager.getEvents(sourceId)).slice(0, 6)).toEqual(sourceBefore);
      expect((await manager.getSession(sourceId)).forkedFrom).toBeUndefined();
    });

    it("the fork's first request holds the history up to the point and nothing after it", async () => {
      const { manager } = await openManager();
      const sourceId = await sessionOfThreeTurns(manager);
      const fork = await manager.forkSession(sourceId, { at: 3, backend: 'openai-compatible' });
      expect(fork.type).toBe('openai-compatible');
      const request = await manager.buildRequest(fork.sessionId, 'what now?');
      const sent = `${request.systemPrompt}\n${request.userPrompt}`;
      expect(sent).toContain('question 2');
      expect(sent).toContain('answer 2');
      expect(sent).not.toContain('question 3');
      expect(sent).not.toContain('answer 3');
    });

    it('a fork at a block id keeps that block, and the default point is the end', async () => {
      const { manager } = await openManager();
      const sourceId = await sessionOfThreeTurns(manager);
      const blocks = (await manager.getEvents(sourceId)).filter(
        (event): event is Extract<StreamEvent, { type: 'block_complete' }> => event.type === 'block_complete',
      );
      const fork = await manager.forkSession(sourceId, { at: blocks[2]!.block.id });
      expect(fork.forkedFrom).toEqual({ sessionId: sourceId, seq: blocks[2]!.seq });
      expect(await texts(manager, fork.sessionId)).toEqual(['question 1', 'answer 1', 'question 2']);
      const whole = await manager.forkSession(sourceId);
      expect(whole.forkedFrom).toEqual({ sessionId: sourceId, seq: 5 });
      expect(await texts(manager, whole.sessionId)).toEqual(await texts(manager, sourceId));
    });

    it("the fork reads the source's checkpoints over its part of the history, without copying them", async () => {
      const { manager } = await openManager();
      const sourceId = await sessionOfThreeTurns(manager);
      await manager.store.writeCheckpoint(sourceId, checkpointThrough(1, 'turn one'));
      await manager.store.writeCheckpoint(sourceId, checkpointThrough(5, 'all three turns'));
      const fork = await manager.forkSession(sourceId, { at: 3 });
      expect(await manager.listCheckpoints(fork.sessionId)).toEqual([]);
      const current = await manager.getCheckpoint(fork.sessionId);
      expect([current?.sessionId, current?.version, current?.summary.completed]).toEqual([sourceId, 1, ['turn one']]);
      expect(fork.stats.totalCompactions).toBe(1);
      const request = await manager.buildRequest(fork.sessionId, 'what now?');
      expect(`${request.systemPrompt}\n${request.userPrompt}`).not.toContain('all three turns');
    });

    it('a fork of a fork reads on through both sources, and each goes its own way', async () => {
      const { manager } = await openManager();
      const sourceId = await sessionOfThreeTurns(manager);
      const first = await manager.forkSession(sourceId, { at: 3 });
      await manager.addMessage(first.sessionId, { role: 'user', content: 'fork question' });
      const second = await manager.forkSession(first.sessionId);
      expect(second.forkedFrom).toEqual({ sessionId: first.sessionId, seq: 4 });
      await manager.addMessage(second.sessionId, { role: 'assistant', content: 'fork of fork answer' });
      await manager.addMessage(first.sessionId, { role: 'assistant', content: 'first fork answer' });
      expect(await texts(manager, second.sessionId)).toEqual([
        'question 1',
        'answer 1',
        'question 2',
        'answer 2',
        'fork question',
        'fork of fork answer',
      ]);
      expect((await manager.getEvents(second.sessionId)).map((event) => event.seq)).toEqual([0, 1, 2, 3, 4, 5]);
      expect((await texts(manager, first.sessionId)).at(-1)).toBe('first fork answer');
      expect(await texts(manager, sourceId)).toHaveLength(6);
    });

    it('a fork survives a restart with its origin', async () => {
      const { manager, reopen } = await openManager();
      const sourceId = await sessionOfThreeTurns(manager);
      const fork = await manager.forkSession(sourceId, { at: 1 });
      const reopened = await reopen();
      expect((await reopened.getSession(fork.sessionId)).forkedFrom).toEqual({ sessionId: sourceId, seq: 1 });
      expect(await texts(reopened, fork.sessionId)).toEqual(['question 1', 'answer 1']);
    });

    it('bad fork points are refused with a typed error and create nothing', async () => {
      const { manager } = await openManager();
      const sourceId = await sessionOfThreeTurns(manager);
      await expectCode(manager.forkSession('no-such-session'), 'SESSION_NOT_FOUND');
      const beyond = await expectCode(manager.forkSession(sourceId, { at: 6 }), 'FORK_POINT_NOT_FOUND');
      expect(beyond.message).toContain('seqs 0 to 5');
      await expectCode(manager.forkSession(sourceId, { at: -1 }), 'FORK_POINT_NOT_FOUND');
      await expectCode(manager.forkSession(sourceId, { at: 2.5 }), 'FORK_POINT_NOT_FOUND');
      const unknownBlock = await expectCode(
        manager.forkSession(sourceId, { at: 'no-such-block' }),
        'FORK_POINT_NOT_FOUND',
      );
      expect(unknownBlock.message).toContain('no-such-block');
      await expectCode(manager.forkSession(sourceId, { sessionId: sourceId }), 'INVALID_INPUT');
      expect((await manager.listSessions()).map((session) => session.sessionId)).toEqual([sourceId]);
    });
  });
}

describe('parseForkPoint', () => {
  it('reads digits as a seq and anything else as a block id', () => {
    expect(parseForkPoint('12')).toBe(12);
    expect(parseForkPoint(' 0 ')).toBe(0);
    expect(parseForkPoint('block-7f3a')).toBe('block-7f3a');
  });

  it('refuses a number that is not a whole seq', () => {
    for (const text of ['2.5', '-1', '1e3', '+4']) {
      expect(() => parseForkPoint(text), text).toThrow(/not a fork point/);
    }
  });
});

describe('forkSession of a conversation with a worker thread', () => {
  it('keeps the events of every conversation up to the point', async () => {
    const manager = await createSessionManager({ store: createMemoryStore(), clock });
    cleanups.push(() => manager.close());
    const session = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
    await manager.addMessage(session.sessionId, { role: 'user', content: 'hello' });
    await manager.appendEvents(session.sessionId, [
      { type: 'metadata_update', conversationId: MAIN_CONVERSATION, metadata: { turnComplete: true } },
    ]);
    const fork = await manager.forkSession(session.sessionId);
    expect((await manager.getEvents(fork.sessionId)).map((event) => event.type)).toEqual([
      'block_complete',
      'metadata_update',
    ]);
  });
});
