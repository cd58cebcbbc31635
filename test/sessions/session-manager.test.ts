import { afterEach, describe, expect, it, vi } from 'vitest';
import { applyEvents, emptyConversation, isParleyError, type UnsequencedEvent } from '../../src/conversation/index.js';
import { createSessionManager, type SessionManager, type SessionManagerEvents } from '../../src/sessions/index.js';
import { createMemoryStore, type SessionStore } from '../../src/store/index.js';
import { heldStore } from '../helpers/held-store.js';

let clockValue = 1_700_000_000_000;
const clock = () => clockValue++;

async function open(store: SessionStore = createMemoryStore()): Promise<SessionManager> {
  return createSessionManager({ store, clock });
}

async function expectCode(promise: Promise<unknown>, code: string): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(isParleyError(error, code), `expected ${code}, got ${String(error)}`).toBe(true);
}

const managers: SessionManager[] = [];
afterEach(async () => {
  await Promise.all(managers.splice(0).map((manager) => manager.close()));
});

describe('SessionManager', () => {
  it('getOrCreateSession builds the scoped ids and returns the same session twice', async () => {
    const manager = await open();
    managers.push(manager);
    const feature = await manager.getOrCreateSession({ type: 'feature', agentType: 'pm', featureId: 'my-feature' });
    expect(feature.sessionId).toBe('pm-feature-my-feature');
    const task = await manager.getOrCreateSession({
      type: 'task',
      agentType: 'dev',
      featureId: 'f1',
      taskId: 't1',
      taskState: 'in_dev',
    });
    expect(task.sessionId).toBe('dev-task-f1-t1-in_dev');
    const again = await manager.getOrCreateSession({
      type: 'task',
      agentType: 'dev',
      featureId: 'f1',
      taskId: 't1',
      taskState: 'in_dev',
    });
    expect(again.createdAt).toBe(task.createdAt);
    expect((await manager.listSessions()).map((session) => session.sessionId).sort()).toEqual([
      'dev-task-f1-t1-in_dev',
      'pm-feature-my-feature',
    ]);
  });

  it('concurrent getOrCreateSession calls create one session', async () => {
    const manager = await open();
    managers.push(manager);
    const created: string[] = [];
    manager.on('session:updated', (event) => event.action === 'created' && created.push(event.sessionId));
    await Promise.all(
      Array.from({ length: 5 }, () => manager.getOrCreateSession({ type: 'feature', agentType: 'qa', featureId: 'x' })),
    );
    expect(created).toEqual(['qa-feature-x']);
  });

  it('tasks keep a session list per state and a current state', async () => {
    const store = createMemoryStore();
    const manager = await open(store);
    managers.push(manager);
    await manager.getOrCreateSession({
      type: 'task',
      agentType: 'dev',
      featureId: 'f1',
      taskId: 't1',
      taskState: 'in_dev',
    });
    await manager.getOrCreateSession({
      type: 'task',
      agentType: 'qa',
      featureId: 'f1',
      taskId: 't1',
      taskState: 'in_qa',
    });
    const task = await store.getFeatureTask('f1', 't1');
    expect(task?.states).toEqual({
      in_dev: { sessionIds: ['dev-task-f1-t1-in_dev'] },
      in_qa: { sessionIds: ['qa-task-f1-t1-in_qa'] },
    });
    expect(task?.currentState).toBe('in_qa');
  });

  it('addMessage stores the message with id, timestamp and tokens, and updates stats', async () => {
    const manager = await open();
    managers.push(manager);
    const { sessionId } = await manager.getOrCreateSession({ type: 'feature', agentType: 'pm', featureId: 'f' });
    const events: Array<SessionManagerEvents['session:updated']> = [];
    manager.on('session:updated', (event) => events.push(event));
    const first = await manager.addMessage(sessionId, { role: 'user', content: 'Create a task for auth' });
    await manager.addMessage(sessionId, { role: 'assistant', content: 'Created it.', metadata: { agentType: 'pm' } });
    expect(first).toMatchObject({ role: 'user', content: 'Create a task for auth', seq: 0 });
    expect(first.id).toBeTruthy();
    expect(first.tokens).toBeGreaterThan(0);
    expect(Date.parse(first.timestamp)).not.toBeNaN();
    const recent = await manager.getRecentMessages(sessionId, 10);
    expect(recent.map((message) => message.content)).toEqual(['Create a task for auth', 'Created it.']);
    expect(recent[1]!.metadata).toMatchObject({ agentType: 'pm' });
    expect(await manager.getRecentMessages(sessionId, 1)).toHaveLength(1);
    const stats = await manager.getStats(sessionId);
    expect(stats.totalMessages).toBe(2);
    expect(stats.totalTokens).toBeGreaterThan(0);
    expect(events.filter((event) => event.action === 'message_added')).toHaveLength(2);
  });

  it('clearMessages hides history from the next request but keeps it on disk', async () => {
    const manager = await open();
    managers.push(manager);
    const { sessionId } = await manager.getOrCreateSession({ type: 'feature', agentType: 'pm', featureId: 'f' });
    await manager.addMessage(sessionId, { role: 'user', content: 'one' });
    await manager.clearMessages(sessionId);
    await manager.addMessage(sessionId, { role: 'user', content: 'two' });
    expect((await manager.getRecentMessages(sessionId)).map((message) => message.content)).toEqual(['two']);
    expect(
      (await manager.getRecentMessages(sessionId, 50, { includeCleared: true })).map((message) => message.content),
    ).toEqual(['one', 'two']);
    const log = await manager.getEvents(sessionId);
    expect(
      log.some(
        (event) =>
          event.type === 'block_complete' && event.block.type === 'system' && event.block.subtype === 'cleared',
      ),
    ).toBe(true);
  });

  it('archiveSession keeps the session readable and refuses new messages', async () => {
    const manager = await open();
    managers.push(manager);
    const { sessionId } = await manager.getOrCreateSession({ type: 'feature', agentType: 'pm', featureId: 'f' });
    await manager.addMessage(sessionId, { role: 'user', content: 'hello' });
    const archived = await manager.archiveSession(sessionId);
    expect(archived.status).toBe('archived');
    expect((await manager.getRecentMessages(sessionId)).map((message) => message.content)).toEqual(['hello']);
    await expectCode(manager.addMessage(sessionId, { role: 'user', content: 'more' }), 'SESSION_ARCHIVED');
    expect(await manager.listSessions({ status: 'active' })).toHaveLength(0);
  });

  it('the conversation reloaded from the store equals the live one', async () => {
    const store = createMemoryStore();
    const first = await open(store);
    const { sessionId } = await first.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
    const unsequenced: UnsequencedEvent[] = [
      {
        type: 'block_start',
        conversationId: 'main',
        block: { id: 'a', type: 'assistant_text', content: '', createdAt: 1 },
      },
      { type: 'text_delta', conversationId: 'main', blockId: 'a', delta: 'Hi' },
      {
        type: 'block_complete',
        conversationId: 'main',
        block: { id: 'a', type: 'assistant_text', content: 'Hi', createdAt: 1 },
      },
      { type: 'block_start', conversationId: 'w1', block: { id: 'b', type: 'thinking', content: 'hmm', createdAt: 2 } },
      {
        type: 'metadata_update',
        conversationId: 'main',
        metadata: {
          usage: { inputTokens: 10, outputTokens: 2, cacheReadTokens: 0, cacheWriteTokens: 0 },
          costUsd: 0.5,
          turnComplete: true,
        },
      },
    ];
    await first.addMessage(sessionId, { role: 'user', content: 'hello' });
    await first.appendEvents(sessionId, unsequenced);
    const live = await first.loadConversation(sessionId);
    await first.close();
    const second = await open(store);
    managers.push(second);
    const reloaded = await second.loadConversation(sessionId);
    expect(reloaded).toEqual(live);
    expect(applyEvents(emptyConversation(sessionId), await second.getEvents(sessionId))).toEqual(live);
    expect(reloaded.metrics).toMatchObject({ turns: 1, costUsd: 0.5 });
    expect((await second.getSession(sessionId)).stats.totalMessages).toBe(2);
  });

  it('getEvents after a seq returns only later events, and session:event streams them live in order', async () => {
    const manager = await open();
    managers.push(manager);
    const { sessionId } = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
    const seen: number[] = [];
    manager.on('session:event', ({ event }) => seen.push(event.seq));
    await Promise.all(
      Array.from({ length: 20 }, (_, index) => manager.addMessage(sessionId, { role: 'user', content: `m${index}` })),
    );
    expect(seen).toEqual(Array.from({ length: 20 }, (_, index) => index));
    const after = await manager.getEvents(sessionId, { afterSeq: 14 });
    expect(after.map((event) => event.seq)).toEqual([15, 16, 17, 18, 19]);
    expect((await manager.getRecentMessages(sessionId, 100)).map((message) => message.content)).toEqual(
      Array.from({ length: 20 }, (_, index) => `m${index}`),
    );
  });

  it('bad input gets a typed error that names the problem and changes nothing', async () => {
    const store = createMemoryStore();
    const manager = await open(store);
    managers.push(manager);
    await expectCode(manager.getSession('nope'), 'SESSION_NOT_FOUND');
    await expectCode(manager.getSession('../etc/passwd'), 'INVALID_ID');
    await expectCode(manager.addMessage('../x', { role: 'user', content: 'x' }), 'INVALID_ID');
    await expectCode(manager.addMessage('missing', { role: 'user', content: 'x' }), 'SESSION_NOT_FOUND');
    // @ts-expect-error: role is checked at run time too
    await expectCode(manager.addMessage('missing', { role: 'robot', content: 'x' }), 'INVALID_INPUT');
    await expectCode(
      // @ts-expect-error: agent types are pm, dev, qa, harness, merge
      manager.getOrCreateSession({ type: 'feature', agentType: 'cook', featureId: 'f' }),
      'INVALID_INPUT',
    );
    await expectCode(
      manager.getOrCreateSession({ type: 'feature', agentType: 'pm', featureId: '../../x' }),
      'INVALID_INPUT',
    );
    expect(await manager.listSessions()).toHaveLength(0);
    const error = await manager.getSession('nope').catch((reason: unknown) => reason as Error);
    expect((error as Error).message).toContain('nope');
    expect((error as Error).message).toContain('parley sessions');
  });

  it('read-only (imported) sessions refuse appends', async () => {
    const manager = await open();
    managers.push(manager);
    const { sessionId } = await manager.createSession({
      scope: { kind: 'imported', source: 'claude-code', path: '/x.jsonl' },
      agentType: 'imported',
      readOnly: true,
    });
    await expectCode(manager.addMessage(sessionId, { role: 'user', content: 'hi' }), 'READ_ONLY_SESSION');
  });

  describe('appends made while a write is being flushed', () => {
    const text = (delta: string): UnsequencedEvent => ({
      type: 'text_delta',
      conversationId: 'main',
      blockId: 'b',
      delta,
    });

    it('are issued at once, then applied and announced strictly in call order', async () => {
      const { store, held, hold } = heldStore();
      const manager = await open(store);
      managers.push(manager);
      const { sessionId } = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
      await manager.appendEvents(sessionId, [
        {
          type: 'block_start',
          conversationId: 'main',
          block: { type: 'assistant_text', id: 'b', content: '', createdAt: 1 },
        },
      ]);
      hold();
      const announced: number[] = [];
      manager.on('session:event', ({ event }) => announced.push(event.seq));
      const appends = ['a', 'b', 'c'].map((delta) => manager.appendEvents(sessionId, [text(delta)]));
      // All three reach the store before the first is durable: they can share one flush.
      await vi.waitFor(() => expect(held).toHaveLength(3));
      held[2]!.release();
      held[1]!.release();
      await new Promise((resolve) => setImmediate(resolve));
      expect(announced).toEqual([]);
      held[0]!.release();
      const results = await Promise.all(appends);
      expect(results.map(([event]) => event!.seq)).toEqual([1, 2, 3]);
      expect(announced).toEqual([1, 2, 3]);
      const conversation = await manager.loadConversation(sessionId);
      expect(conversation.blocks[0]).toMatchObject({ content: 'abc' });
    });

    it('a failed write fails only its own caller; the appends around it are applied in order', async () => {
      const { store, held, hold } = heldStore();
      const manager = await open(store);
      managers.push(manager);
      const { sessionId } = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
      hold();
      const announced: string[] = [];
      manager.on('session:event', ({ event }) => event.type === 'block_complete' && announced.push(event.block.id));
      const message = (id: string): UnsequencedEvent => ({
        type: 'block_complete',
        conversationId: 'main',
        block: { type: 'assistant_text', id, content: id, createdAt: 1, completedAt: 1 },
      });
      const first = manager.appendEvents(sessionId, [message('one')]);
      const second = manager.appendEvents(sessionId, [message('two')]);
      const third = manager.appendEvents(sessionId, [message('three')]);
      await vi.waitFor(() => expect(held).toHaveLength(3));
      held[1]!.fail(new Error('disk full'));
      held[2]!.release();
      held[0]!.release();
      await expect(second).rejects.toThrow('disk full');
      await first;
      await third;
      expect(announced).toEqual(['one', 'three']);
    });

    it('a record update waits until the appends issued before it are applied', async () => {
      const { store, held, hold } = heldStore();
      const manager = await open(store);
      managers.push(manager);
      const { sessionId } = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
      hold();
      const added = manager.appendEvents(sessionId, [
        {
          type: 'block_complete',
          conversationId: 'main',
          block: { type: 'user_message', id: 'u1', content: 'before the archive', createdAt: 1, completedAt: 1 },
        },
      ]);
      const archived = manager.archiveSession(sessionId);
      await vi.waitFor(() => expect(held).toHaveLength(1));
      let archivedYet = false;
      void archived.then(() => (archivedYet = true));
      await new Promise((resolve) => setImmediate(resolve));
      expect(archivedYet).toBe(false);
      held[0]!.release();
      await added;
      const record = await archived;
      expect(record.status).toBe('archived');
      expect(record.stats.totalMessages).toBe(1);
      await expectCode(manager.addMessage(sessionId, { role: 'user', content: 'after' }), 'SESSION_ARCHIVED');
    });
  });

  it('while messages stream, session.json is rewritten now and then, not once per append, and close writes the last state', async () => {
    const inner = createMemoryStore();
    let updates = 0;
    const store = new Proxy(inner, {
      get(target, key) {
        const value = Reflect.get(target, key) as (...args: unknown[]) => unknown;
        if (key === 'updateSession') updates++;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const manager = await open(store);
    const { sessionId } = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
    updates = 0;
    for (let index = 0; index < 100; index++) {
      await manager.appendEvents(sessionId, [
        {
          type: 'block_complete',
          conversationId: 'main',
          block: { type: 'assistant_text', id: `m${index}`, content: 'x', createdAt: 1, completedAt: 1 },
        },
      ]);
    }
    expect(updates).toBeLessThan(10);
    // This manager's own listing is current at once.
    expect((await manager.listSessions())[0]?.stats.totalMessages).toBe(100);
    await manager.close();
    expect((await inner.getSession(sessionId))?.stats.totalMessages).toBe(100);
  });

  it('lets go of a session unused for ten minutes and loads it from its log when needed again, but never one with a write in flight', async () => {
    const { store: held, held: appends, hold } = heldStore();
    const reads = new Map<string, number>();
    const store = new Proxy(held, {
      get(target, key) {
        if (key === 'readLog') {
          return (sessionId: string, options?: object) => {
            reads.set(sessionId, (reads.get(sessionId) ?? 0) + 1);
            return target.readLog(sessionId, options);
          };
        }
        const value = Reflect.get(target, key) as unknown;
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const manager = await open(store);
    managers.push(manager);
    const create = async () =>
      (await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' })).sessionId;
    const [idle, busy, other] = [await create(), await create(), await create()];
    const message = (id: string): UnsequencedEvent => ({
      type: 'block_complete',
      conversationId: 'main',
      block: { type: 'assistant_text', id, content: id, createdAt: 1, completedAt: 1 },
    });
    await manager.appendEvents(idle, [message('kept')]);
    await manager.appendEvents(busy, [message('first')]);
    hold();
    const inFlight = manager.appendEvents(busy, [message('in flight')]);
    await vi.waitFor(() => expect(appends).toHaveLength(1));
    // An empty log is not read at all (its branch holds nothing), so a session may have no reads yet.
    const readsBefore = { idle: reads.get(idle) ?? 0, busy: reads.get(busy) ?? 0 };

    clockValue += 11 * 60_000;
    await manager.loadConversation(other);
    appends[0]!.release();
    await inFlight;

    // Kept: the write in flight landed in the cached conversation, which was not read again.
    expect((await manager.loadConversation(busy)).blocks.map((block) => block.id)).toEqual(['first', 'in flight']);
    expect(reads.get(busy) ?? 0).toBe(readsBefore.busy);
    // Let go, and back whole from its log.
    expect((await manager.loadConversation(idle)).blocks.map((block) => block.id)).toEqual(['kept']);
    expect(reads.get(idle)).toBe(readsBefore.idle + 1);
  });

  it('rejects calls after close', async () => {
    const manager = await open();
    await manager.close();
    await expectCode(manager.listSessions(), 'MANAGER_CLOSED');
  });
});
