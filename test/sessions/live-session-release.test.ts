import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { afterEach, describe, expect, it } from 'vitest';
import { isParleyError, type UnsequencedEvent } from '../../src/conversation/index.js';
import { createSessionManager, type SessionManager } from '../../src/sessions/index.js';
import { createMemoryStore } from '../../src/store/index.js';

// A full collection on demand, to see whether anything still holds a session the manager let go.
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as () => void;

async function collected(reference: WeakRef<object>): Promise<boolean> {
  // A WeakRef read in this job keeps its target until the job ends.
  await new Promise((resolve) => setImmediate(resolve));
  collect();
  return reference.deref() === undefined;
}

const managers: SessionManager[] = [];
afterEach(async () => {
  await Promise.all(managers.splice(0).map((manager) => manager.close()));
});

let now = 1_000;
async function open(options: { liveSessionIdleMs?: number; maxLiveSessions?: number } = {}): Promise<SessionManager> {
  const manager = await createSessionManager({ store: createMemoryStore(), clock: () => now, ...options });
  managers.push(manager);
  return manager;
}

const message = (id: string): UnsequencedEvent => ({
  type: 'block_complete',
  conversationId: 'main',
  block: { type: 'assistant_text', id, content: `Answer ${id}, long enough to matter.`, createdAt: 1, completedAt: 1 },
});

async function usedSession(manager: SessionManager): Promise<{ sessionId: string; blocks: WeakRef<object> }> {
  const { sessionId } = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
  await manager.appendEvents(sessionId, [message('a'), message('b')]);
  await manager.buildRequest(sessionId, 'next');
  return { sessionId, blocks: new WeakRef((await manager.loadConversation(sessionId)).blocks) };
}

/** What the request layer keeps per session (its projections, checkpoints, calibrations …). */
function heldByRequests(manager: SessionManager): number {
  return (manager as unknown as { requests: { heldSessions(): number } }).requests.heldSessions();
}

describe('sessions the manager lets go', () => {
  it('keeps nothing of a session after its idle window: neither its conversation nor its request caches', async () => {
    const manager = await open({ liveSessionIdleMs: 60_000 });
    const first = await usedSession(manager);
    expect(heldByRequests(manager)).toBe(1);
    now += 61_000;
    // The cache is swept on use: another session's use lets the idle one go.
    const second = await usedSession(manager);

    expect(manager.liveSessionCount()).toBe(1);
    expect(heldByRequests(manager)).toBe(1);
    expect(await collected(first.blocks)).toBe(true);
    expect(await collected(second.blocks)).toBe(false);
    // Let go, not lost: read again from its log.
    expect((await manager.loadConversation(first.sessionId)).blocks.map((block) => block.id)).toEqual(['a', 'b']);
  });

  it('keeps a session used within the window', async () => {
    const manager = await open({ liveSessionIdleMs: 60_000 });
    const first = await usedSession(manager);
    now += 30_000;
    await usedSession(manager);
    expect(manager.liveSessionCount()).toBe(2);
    expect(await collected(first.blocks)).toBe(false);
  });

  it('keeps at most maxLiveSessions, letting the least recently used go first', async () => {
    const manager = await open({ maxLiveSessions: 2 });
    const first = await usedSession(manager);
    const second = await usedSession(manager);
    now += 1;
    await manager.loadConversation(first.sessionId);
    now += 1;
    await usedSession(manager);

    expect(manager.liveSessionCount()).toBe(2);
    expect(heldByRequests(manager)).toBe(2);
    expect(await collected(second.blocks)).toBe(true);
    expect(await collected(first.blocks)).toBe(false);
  });

  it.each([
    [{ liveSessionIdleMs: 0 }, 'liveSessionIdleMs'],
    [{ liveSessionIdleMs: Number.NaN }, 'liveSessionIdleMs'],
    [{ maxLiveSessions: 0 }, 'maxLiveSessions'],
    [{ maxLiveSessions: 1.5 }, 'maxLiveSessions'],
  ])('refuses %o, naming the setting', async (options, name) => {
    const error = await open(options).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(isParleyError(error) && error.code).toBe('INVALID_INPUT');
    expect(String((error as Error).message)).toContain(name);
  });
});
