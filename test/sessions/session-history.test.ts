import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend, step } from '../../src/backends/index.js';
import { isParleyError, type StreamEvent } from '../../src/conversation/index.js';
import { createSessionManager, runTurn, type FileRestorer, type SessionManager } from '../../src/sessions/index.js';
import { createFileStore, createMemoryStore, type CheckpointInput, type SessionStore } from '../../src/store/index.js';

let clockValue = 1_700_000_000_000;
const clock = () => clockValue++;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function expectCode(promise: Promise<unknown>, code: string): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(isParleyError(error, code), `expected ${code}, got ${String(error)}`).toBe(true);
  return error as Error;
}

async function managerOn(store: SessionStore, options: { fileRestorer?: FileRestorer } = {}): Promise<SessionManager> {
  const manager = await createSessionManager({ store, clock, autoCompact: false, ...options });
  cleanups.push(() => manager.close());
  return manager;
}

/** Six messages, seqs 0 to 5: three user questions, each answered. */
async function threeTurns(manager: SessionManager): Promise<string> {
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

async function ownLog(store: SessionStore, sessionId: string): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  for await (const event of store.readLog(sessionId)) events.push(event);
  return events;
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

describe('rewind', () => {
  it('takes the conversation back to a seq, keeps every event, and the next message starts a new branch', async () => {
    const store = createMemoryStore();
    const manager = await managerOn(store);
    const sessionId = await threeTurns(manager);
    const changes: Array<{ reason: string; seq: number }> = [];
    manager.on('session:history-changed', ({ reason, seq }) => changes.push({ reason, seq }));

    const result = await manager.rewind(sessionId, { to: 3 });
    expect(result).toMatchObject({ seq: 3, conversation: true });
    expect(result.session.head).toBe(3);
    expect(changes).toEqual([{ reason: 'rewound', seq: 3 }]);
    expect(await texts(manager, sessionId)).toEqual(['question 1', 'answer 1', 'question 2', 'answer 2']);
    expect((await manager.getEvents(sessionId)).map((event) => event.seq)).toEqual([0, 1, 2, 3]);
    expect((await ownLog(store, sessionId)).map((event) => event.seq)).toEqual([0, 1, 2, 3, 4, 5]);

    const added = await manager.addMessage(sessionId, { role: 'user', content: 'another question 3' });
    expect(added.seq).toBe(6);
    const record = await store.getSession(sessionId);
    expect(record?.head).toBeUndefined();
    expect(record?.segments).toEqual([{ firstSeq: 6, parentSeq: 3 }]);
    expect((await manager.getEvents(sessionId)).map((event) => event.seq)).toEqual([0, 1, 2, 3, 6]);
    expect(await texts(manager, sessionId)).toEqual([
      'question 1',
      'answer 1',
      'question 2',
      'answer 2',
      'another question 3',
    ]);
  });

  it('the next request holds nothing past the point and uses the checkpoint current at it, across a real compaction', async () => {
    const manager = await managerOn(createMemoryStore());
    const backend = createScriptedBackend({ clock });
    const session = await manager.createSession({
      scope: { kind: 'draft', role: 'dev' },
      agentType: 'dev',
      backend: 'scripted',
      settings: { tailTokens: 0 },
    });
    const sessionId = session.sessionId;
    const turn = async (prompt: string, reply: string) => {
      // Long answers, so that folding them into a checkpoint cuts the request.
      backend.enqueue([step.text(`${reply}. ${'The details run on at length here. '.repeat(60)}`)]);
      for await (const _event of (await runTurn(manager, sessionId, { backend, prompt })).events);
    };
    await turn('plan the parser', 'the parser plan is ready');
    await turn('write the lexer', 'the lexer is written');
    const first = await manager.forceCompact(sessionId);
    const point = first.covers.throughSeq;
    await turn('abandoned idea about a zebra', 'zebra answer');
    const second = await manager.forceCompact(sessionId);
    expect(second.covers.throughSeq).toBeGreaterThan(point);
    expect((await manager.getCheckpoint(sessionId))?.version).toBe(second.version);

    await manager.rewind(sessionId, { to: point });
    expect((await manager.getCheckpoint(sessionId))?.version).toBe(first.version);
    await turn('what next?', 'next answer');
    const sent = backend.calls.at(-1)!;
    const request = `${sent.systemPrompt ?? ''}\n${sent.prompt}`;
    expect(request).toContain('what next?');
    expect(request).not.toContain('zebra');
    // The second checkpoint summarized the branch that was left; it is kept, and not used.
    expect((await manager.listCheckpoints(sessionId)).map((checkpoint) => checkpoint.version)).toEqual([
      first.version,
      second.version,
    ]);
  });

  it('rewinds to a block id, inclusive, as a fork reads it', async () => {
    const manager = await managerOn(createMemoryStore());
    const sessionId = await threeTurns(manager);
    const blocks = (await manager.loadConversation(sessionId)).blocks;
    const result = await manager.rewind(sessionId, { to: blocks[2]!.id });
    expect(result.seq).toBe(blocks[2]!.seq);
    expect(await texts(manager, sessionId)).toEqual(['question 1', 'answer 1', 'question 2']);
  });

  it('drops the native link, so a native back end resumes from a transcript written from the active branch', async () => {
    const manager = await managerOn(createMemoryStore());
    const sessionId = await threeTurns(manager);
    await manager.setNativeSession(sessionId, { backend: 'claude-sdk', nativeSessionId: 'native-1' });
    const result = await manager.rewind(sessionId, { to: 1 });
    expect(result.session.native).toBeUndefined();
    expect((await manager.getSession(sessionId)).native).toBeUndefined();
  });

  it('survives a restart: the active branch, the head and the branch left are read back from the file store', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'parley-history-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    let store = await createFileStore({ dataDir });
    let manager = await createSessionManager({ store, clock, autoCompact: false });
    const sessionId = await threeTurns(manager);
    await manager.rewind(sessionId, { to: 1 });
    await manager.close();
    await store.close();
    store = await createFileStore({ dataDir });
    manager = await managerOn(store);
    cleanups.push(() => store.close());
    expect(await texts(manager, sessionId)).toEqual(['question 1', 'answer 1']);
    await manager.addMessage(sessionId, { role: 'user', content: 'a new question 2' });
    expect(await texts(manager, sessionId)).toEqual(['question 1', 'answer 1', 'a new question 2']);
    expect((await manager.listBranches(sessionId)).map((branch) => [branch.id, branch.tipSeq, branch.active])).toEqual([
      ['b0', 5, false],
      ['b6', 6, true],
    ]);
  });

  it('to -1 goes back to before the first event: nothing is kept, and the next message starts a branch from the start', async () => {
    const manager = await managerOn(createMemoryStore());
    const sessionId = await threeTurns(manager);
    expect(manager.restoresFiles).toBe(false);
    const result = await manager.rewind(sessionId, { to: -1 });
    expect(result).toMatchObject({ seq: -1, conversation: true });
    expect(await texts(manager, sessionId)).toEqual([]);
    await manager.addMessage(sessionId, { role: 'user', content: 'a new first question' });
    expect(await texts(manager, sessionId)).toEqual(['a new first question']);
    const branches = await manager.listBranches(sessionId);
    expect(branches.map((branch) => [branch.forkSeq, branch.active])).toEqual([
      [-1, false],
      [-1, true],
    ]);
  });

  it('restores files through the configured restorer, conversation and files together with both', async () => {
    const asked: Array<{ seq: number; overwrite: boolean }> = [];
    const restorer: FileRestorer = {
      restoreFiles: async ({ seq, overwrite }) => {
        asked.push({ seq, overwrite });
        return { restored: ['src/a.ts'] };
      },
    };
    const manager = await managerOn(createMemoryStore(), { fileRestorer: restorer });
    expect(manager.restoresFiles).toBe(true);
    const sessionId = await threeTurns(manager);
    const files = await manager.rewind(sessionId, { to: 3, restore: 'files' });
    expect(files).toMatchObject({ seq: 3, conversation: false, files: { restored: ['src/a.ts'] } });
    expect(await texts(manager, sessionId)).toHaveLength(6);
    const both = await manager.rewind(sessionId, { to: 1, restore: 'both', overwrite: true });
    expect(both).toMatchObject({ seq: 1, conversation: true, files: { restored: ['src/a.ts'] } });
    expect(await texts(manager, sessionId)).toEqual(['question 1', 'answer 1']);
    expect(asked).toEqual([
      { seq: 3, overwrite: false },
      { seq: 1, overwrite: true },
    ]);
  });

  describe('bad input is refused with a typed error and changes nothing', () => {
    async function unchanged(manager: SessionManager, store: SessionStore, sessionId: string) {
      return { record: await store.getSession(sessionId), events: await manager.getEvents(sessionId) };
    }

    it('a point not on the active branch, a bad restore, no point at all', async () => {
      const store = createMemoryStore();
      const manager = await managerOn(store);
      const sessionId = await threeTurns(manager);
      await manager.rewind(sessionId, { to: 3 });
      await manager.addMessage(sessionId, { role: 'user', content: 'branch two' });
      const before = await unchanged(manager, store, sessionId);
      // Seq 4 is in the log, on the branch that was left.
      const left = await expectCode(manager.rewind(sessionId, { to: 4 }), 'FORK_POINT_NOT_FOUND');
      expect(left.message).toContain('0 to 3, 6');
      await expectCode(manager.rewind(sessionId, { to: 60 }), 'FORK_POINT_NOT_FOUND');
      await expectCode(manager.rewind(sessionId, { to: 'no-such-block' }), 'FORK_POINT_NOT_FOUND');
      await expectCode(manager.rewind(sessionId, { to: 1, restore: 'everything' as never }), 'INVALID_INPUT');
      await expectCode(manager.rewind(sessionId, {} as never), 'INVALID_INPUT');
      await expectCode(manager.rewind('no-such-session', { to: 1 }), 'SESSION_NOT_FOUND');
      expect(await unchanged(manager, store, sessionId)).toEqual(before);
    });

    it('files with no snapshot store, and a restorer that refuses', async () => {
      const store = createMemoryStore();
      const manager = await managerOn(store);
      const sessionId = await threeTurns(manager);
      const before = await unchanged(manager, store, sessionId);
      const error = await expectCode(
        manager.rewind(sessionId, { to: 1, restore: 'both' }),
        'FILE_SNAPSHOTS_NOT_CONFIGURED',
      );
      expect(error.message).toContain('restore "conversation"');
      await expectCode(manager.rewind(sessionId, { to: 1, restore: 'files' }), 'FILE_SNAPSHOTS_NOT_CONFIGURED');
      expect(await unchanged(manager, store, sessionId)).toEqual(before);

      const refusing = await managerOn(store, {
        fileRestorer: {
          restoreFiles: async () => {
            throw Object.assign(new Error('src/a.ts was changed by you'), { code: 'FILES_CHANGED' });
          },
        },
      });
      await expect(refusing.rewind(sessionId, { to: 1, restore: 'both' })).rejects.toThrow('changed by you');
      expect(await unchanged(refusing, store, sessionId)).toEqual(before);
    });

    it('a rewind, an edit or a branch switch while a turn runs: cancel it first', async () => {
      const store = createMemoryStore();
      const manager = await managerOn(store);
      const sessionId = await threeTurns(manager);
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const backend = createScriptedBackend({
        clock,
        turns: [[step.text('thinking…'), { type: 'wait', until: gate }]],
      });
      const turn = await runTurn(manager, sessionId, { backend, prompt: 'a long task' });
      const iterator = turn.events[Symbol.asyncIterator]();
      await iterator.next();
      const before = await unchanged(manager, store, sessionId);
      const error = await expectCode(manager.rewind(sessionId, { to: 1 }), 'TURN_IN_PROGRESS');
      expect(error.message).toContain('cancel it first');
      const userMessage = (await manager.loadConversation(sessionId)).blocks[0]!;
      await expectCode(manager.editMessage(sessionId, userMessage.id), 'TURN_IN_PROGRESS');
      await expectCode(manager.switchBranch(sessionId, 'b0'), 'TURN_IN_PROGRESS');
      expect(await unchanged(manager, store, sessionId)).toEqual(before);
      release();
      while (!(await iterator.next()).done);
      expect((await manager.rewind(sessionId, { to: 1 })).seq).toBe(1);
    });

    it('a read-only (imported) session', async () => {
      const store = createMemoryStore();
      const manager = await managerOn(store);
      const session = await manager.createSession({
        scope: { kind: 'imported', source: 'claude-code', path: '/tmp/x.jsonl' },
        agentType: 'dev',
        readOnly: true,
      });
      await expectCode(manager.rewind(session.sessionId, { to: 0 }), 'READ_ONLY_SESSION');
    });
  });
});

describe('edit and resend', () => {
  it('branches just before the user message, so the edited text goes there', async () => {
    const manager = await managerOn(createMemoryStore());
    const sessionId = await threeTurns(manager);
    const blocks = (await manager.loadConversation(sessionId)).blocks;
    const second = blocks.find((block) => block.type === 'user_message' && block.content === 'question 2')!;
    const result = await manager.editMessage(sessionId, second.id);
    expect(result.seq).toBe(second.seq! - 1);
    expect(await texts(manager, sessionId)).toEqual(['question 1', 'answer 1']);
    await manager.addMessage(sessionId, { role: 'user', content: 'question 2, edited' });
    expect(await texts(manager, sessionId)).toEqual(['question 1', 'answer 1', 'question 2, edited']);

    const first = blocks.find((block) => block.type === 'user_message')!;
    expect((await manager.editMessage(sessionId, first.id)).seq).toBe(-1);
    expect(await texts(manager, sessionId)).toEqual([]);
  });

  it('refuses a block that is not a user message, or not on the active branch', async () => {
    const manager = await managerOn(createMemoryStore());
    const sessionId = await threeTurns(manager);
    const blocks = (await manager.loadConversation(sessionId)).blocks;
    const answer = blocks.find((block) => block.type === 'assistant_text')!;
    await expectCode(manager.editMessage(sessionId, answer.id), 'INVALID_INPUT');
    await manager.rewind(sessionId, { to: 1 });
    await expectCode(manager.editMessage(sessionId, blocks[4]!.id), 'FORK_POINT_NOT_FOUND');
  });
});

describe('branches', () => {
  it('lists every branch with its fork point, tip, last message, turns and cost, and switches between them', async () => {
    const store = createMemoryStore();
    const manager = await managerOn(store);
    const sessionId = await threeTurns(manager);
    await manager.rewind(sessionId, { to: 1 });
    await manager.addMessage(sessionId, { role: 'user', content: 'second branch question' });
    const branches = await manager.listBranches(sessionId);
    expect(
      branches.map(({ id, forkSeq, firstSeq, tipSeq, active, lastMessage }) => ({
        id,
        forkSeq,
        firstSeq,
        tipSeq,
        active,
        lastMessage,
      })),
    ).toEqual([
      { id: 'b0', forkSeq: -1, firstSeq: 0, tipSeq: 5, active: false, lastMessage: 'answer 3' },
      { id: 'b6', forkSeq: 1, firstSeq: 6, tipSeq: 6, active: true, lastMessage: 'second branch question' },
    ]);
    expect(branches.every((branch) => typeof branch.turns === 'number' && typeof branch.costUsd === 'number')).toBe(
      true,
    );

    const switched: string[] = [];
    manager.on('session:history-changed', ({ reason }) => switched.push(reason));
    const result = await manager.switchBranch(sessionId, 'b0');
    expect(result.seq).toBe(5);
    expect(switched).toEqual(['branch_switched']);
    expect(await texts(manager, sessionId)).toHaveLength(6);
    // The first branch goes on: a third segment continues it from its tip.
    await manager.addMessage(sessionId, { role: 'user', content: 'question 4' });
    expect((await texts(manager, sessionId)).at(-1)).toBe('question 4');
    expect((await manager.listBranches(sessionId)).map((branch) => [branch.id, branch.tipSeq, branch.active])).toEqual([
      ['b6', 6, false],
      ['b7', 7, true],
    ]);
    await manager.switchBranch(sessionId, 'b6');
    expect(await texts(manager, sessionId)).toEqual(['question 1', 'answer 1', 'second branch question']);
  });

  it('lists a rewound branch that has not gone on yet, and refuses a branch it does not have', async () => {
    const store = createMemoryStore();
    const manager = await managerOn(store);
    const sessionId = await threeTurns(manager);
    await manager.rewind(sessionId, { to: 2 });
    expect((await manager.listBranches(sessionId)).map((branch) => [branch.id, branch.tipSeq, branch.active])).toEqual([
      ['b0', 5, false],
      ['b0:2', 2, true],
    ]);
    const before = await store.getSession(sessionId);
    const error = await expectCode(manager.switchBranch(sessionId, 'b9'), 'BRANCH_NOT_FOUND');
    expect(error.message).toContain('b0, b0:2 (active)');
    expect(await store.getSession(sessionId)).toEqual(before);
  });

  it("a fork's branches are its own; rewinding a fork into its source's history works", async () => {
    const manager = await managerOn(createMemoryStore());
    const sourceId = await threeTurns(manager);
    const fork = await manager.forkSession(sourceId, { at: 3 });
    expect((await manager.listBranches(fork.sessionId)).map((branch) => [branch.id, branch.tipSeq])).toEqual([
      ['b4', 3],
    ]);
    await manager.rewind(fork.sessionId, { to: 1 });
    await manager.addMessage(fork.sessionId, { role: 'user', content: 'fork question' });
    expect(await texts(manager, fork.sessionId)).toEqual(['question 1', 'answer 1', 'fork question']);
    expect(await texts(manager, sourceId)).toHaveLength(6);
  });
});

describe('restoreCheckpoint', () => {
  it('makes an older version current again as a new version, deleting none', async () => {
    const store = createMemoryStore();
    const manager = await managerOn(store);
    const sessionId = await threeTurns(manager);
    await store.writeCheckpoint(sessionId, checkpointThrough(1, 'turn one'));
    await store.writeCheckpoint(sessionId, checkpointThrough(3, 'turns one and two'));
    const restored = await manager.restoreCheckpoint(sessionId, 1);
    expect(restored).toMatchObject({ version: 3, restoredFrom: 1, summary: { completed: ['turn one'] } });
    expect((await manager.getCheckpoint(sessionId))?.version).toBe(3);
    expect((await manager.listCheckpoints(sessionId)).map((checkpoint) => checkpoint.version)).toEqual([1, 2, 3]);
    const request = await manager.buildRequest(sessionId, 'go on');
    expect(request.systemPrompt).toContain('turn one');
    expect(request.systemPrompt).not.toContain('turns one and two');
  });

  it('refuses an unknown version, and one that lies off the active branch, writing none', async () => {
    const store = createMemoryStore();
    const manager = await managerOn(store);
    const sessionId = await threeTurns(manager);
    await store.writeCheckpoint(sessionId, checkpointThrough(5, 'all three turns'));
    const unknown = await expectCode(manager.restoreCheckpoint(sessionId, 7), 'CHECKPOINT_NOT_FOUND');
    expect(unknown.message).toContain('versions are 1');
    await manager.rewind(sessionId, { to: 1 });
    await expectCode(manager.restoreCheckpoint(sessionId, 1), 'CHECKPOINT_NOT_ON_BRANCH');
    expect(await store.listCheckpoints(sessionId)).toHaveLength(1);
  });
});
