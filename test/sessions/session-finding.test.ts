import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isParleyError } from '../../src/conversation/index.js';
import { createSessionManager, type SessionManager } from '../../src/sessions/index.js';
import { createFileStore, createMemoryStore } from '../../src/store/index.js';

let manager: SessionManager | undefined;
const folders: string[] = [];
afterEach(async () => {
  await manager?.close();
  manager = undefined;
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

describe('finding sessions', () => {
  it('titles an untitled session by the words of its first request, and keeps a title it has', async () => {
    manager = await createSessionManager({ store: createMemoryStore() });
    const { sessionId } = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
    expect((await manager.getSession(sessionId)).title).toBeUndefined();
    await manager.addMessage(sessionId, {
      role: 'user',
      content: '  Make the nightly export resumable after a crash, please.\nDetails follow.',
    });
    await manager.addMessage(sessionId, { role: 'user', content: 'A second request does not rename it' });
    expect((await manager.getSession(sessionId)).title).toBe('Make the nightly export resumable after a crash, please');
    const named = await manager.createSession({
      scope: { kind: 'draft', role: 'dev' },
      agentType: 'dev',
      title: 'Mine',
    });
    await manager.addMessage(named.sessionId, { role: 'user', content: 'hello' });
    expect((await manager.getSession(named.sessionId)).title).toBe('Mine');
  });

  it('tags, untags and pins without moving a session among the ones listed by activity', async () => {
    let now = 1_000;
    manager = await createSessionManager({ store: createMemoryStore(), clock: () => (now += 10) });
    const older = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
    const newer = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
    await manager.tagSession(older.sessionId, { add: ['billing', 'urgent', 'billing'] });
    expect((await manager.getSession(older.sessionId)).tags).toEqual(['billing', 'urgent']);
    await manager.tagSession(older.sessionId, { remove: ['urgent'] });
    expect((await manager.getSession(older.sessionId)).tags).toEqual(['billing']);
    const ids = async (query = {}) =>
      (await manager!.listSessionPage(query)).sessions.map((session) => session.sessionId);
    expect(await ids()).toEqual([newer.sessionId, older.sessionId]);
    await manager.pinSession(older.sessionId, true);
    expect(await ids()).toEqual([older.sessionId, newer.sessionId]);
    await manager.pinSession(older.sessionId, false);
    expect(await ids()).toEqual([newer.sessionId, older.sessionId]);
    expect(await ids({ filter: { tag: 'billing' } })).toEqual([older.sessionId]);
    await expect(manager.tagSession(older.sessionId, { add: ['two words'] })).rejects.toSatisfy(
      (error) => isParleyError(error, 'INVALID_INPUT') && /"two words"/.test((error as Error).message),
    );
  });

  it('searches every session of a file store through the manager', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-finding-'));
    folders.push(dataDir);
    const store = await createFileStore({ dataDir, onWarning: () => {} });
    manager = await createSessionManager({ store });
    const { sessionId } = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
    await manager.addMessage(sessionId, { role: 'user', content: 'Where is the quarterly report?' });
    const result = await manager.searchSessions({ text: 'quarterly' });
    expect(result.hits).toMatchObject([{ sessionId, role: 'user', snippet: 'Where is the quarterly report?' }]);
    await manager.close();
    await store.close();
    manager = undefined;
  });
});
