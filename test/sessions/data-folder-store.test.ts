import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAIN_CONVERSATION, type StreamEvent } from '../../src/conversation/index.js';
import { createSessionManager, type SessionManager } from '../../src/sessions/index.js';
import { createFileStore, type SessionRecord } from '../../src/store/index.js';

let dataDir: string;
const managers: SessionManager[] = [];
beforeEach(async () => {
  dataDir = join(await mkdtemp(join(tmpdir(), 'parley-folder-')), 'data');
});
afterEach(async () => {
  for (const manager of managers.splice(0).reverse()) await manager.close().catch(() => undefined);
  await rm(join(dataDir, '..'), { recursive: true, force: true });
});

async function open(): Promise<SessionManager> {
  const manager = await createSessionManager({ dataDir, preloadTokenizer: false });
  managers.push(manager);
  return manager;
}

describe('a data folder another SessionManager holds', () => {
  it('is used through the holder: both see each other, and follow each other', async () => {
    const holder = await open();
    const guest = await open();
    await holder.createSession({ sessionId: 'one', scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
    expect((await guest.getSession('one')).agentType).toBe('dev');
    holder.followStoreChanges();
    await holder.loadConversation('one');
    const seen: StreamEvent[] = [];
    const arrived = new Promise<void>((resolve) =>
      holder.on('session:event', ({ event }) => {
        seen.push(event);
        resolve();
      }),
    );
    await guest.addMessage('one', { role: 'user', content: 'from the guest' });
    await arrived;
    expect(seen.map((event) => event.type)).toContain('block_complete');
  });

  it('a rewind one makes reaches the other, which reads the active branch again and says so', async () => {
    const holder = await open();
    const guest = await open();
    await holder.createSession({ sessionId: 'rewound', scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
    for (const content of ['first', 'second', 'third']) await holder.addMessage('rewound', { role: 'user', content });
    holder.followStoreChanges();
    await holder.loadConversation('rewound');
    const changed = new Promise<number>((resolve) =>
      holder.on('session:history-changed', ({ sessionId, seq }) => {
        if (sessionId === 'rewound') resolve(seq);
      }),
    );
    await guest.rewind('rewound', { to: 0 });
    expect(await changed).toBe(0);
    expect((await holder.getRecentMessages('rewound')).map((message) => message.content)).toEqual(['first']);
    await holder.addMessage('rewound', { role: 'user', content: 'a new second' });
    expect((await holder.getEvents('rewound')).map((event) => event.seq)).toEqual([0, 3]);
  });

  it('takes writes from both at once: every event is in the log once, numbered in one sequence', async () => {
    const holder = await open();
    const guest = await open();
    await holder.createSession({ sessionId: 'both', scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
    const writes: Array<Promise<unknown>> = [];
    for (let index = 0; index < 40; index += 1) {
      writes.push(holder.addMessage('both', { role: 'user', content: `holder ${index}` }));
      writes.push(guest.addMessage('both', { role: 'user', content: `guest ${index}` }));
    }
    await Promise.all(writes);
    await Promise.all(
      managers
        .splice(0)
        .reverse()
        .map((manager) => manager.close()),
    );

    const reader = await open();
    const events = await reader.getEvents('both');
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
    const said = events.flatMap((event) =>
      event.type === 'block_complete' &&
      event.conversationId === MAIN_CONVERSATION &&
      event.block.type === 'user_message'
        ? [event.block.content]
        : [],
    );
    expect(said.toSorted()).toEqual(
      Array.from({ length: 40 }, (_, index) => [`holder ${index}`, `guest ${index}`])
        .flat()
        .toSorted(),
    );
  });

  it("changes one makes to a session's record reach the other, which keeps them when it writes its own", async () => {
    const holder = await open();
    const guest = await open();
    holder.followStoreChanges();
    guest.followStoreChanges();
    await holder.createSession({ sessionId: 'record', scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
    await Promise.all([holder.loadConversation('record'), guest.loadConversation('record')]);
    const seenBy = (manager: SessionManager, check: (record: SessionRecord) => boolean): Promise<void> =>
      new Promise((resolve) =>
        manager.on('session:updated', ({ session }) => {
          if (check(session)) resolve();
        }),
      );
    const renamed = seenBy(holder, (record) => record.title === 'Both wrote here');
    await guest.relabelSession('record', { title: 'Both wrote here' });
    await renamed;
    const tuned = seenBy(guest, (record) => record.settings.tailTokens === 700);
    await holder.updateSettings('record', { tailTokens: 700 });
    await tuned;
    expect(await guest.getSession('record')).toMatchObject({ title: 'Both wrote here', settings: { tailTokens: 700 } });
    await Promise.all(
      managers
        .splice(0)
        .reverse()
        .map((manager) => manager.close()),
    );
    const record = await (await open()).getSession('record');
    expect(record).toMatchObject({ title: 'Both wrote here', settings: { tailTokens: 700 } });
  });

  it('a guest whose holder stopped is told so, and the folder is free for the next process', async () => {
    const holder = await open();
    const guest = await open();
    await holder.createSession({ sessionId: 'kept', scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
    await guest.addMessage('kept', { role: 'user', content: 'acknowledged' });
    await holder.close();
    await expect(guest.addMessage('kept', { role: 'user', content: 'too late' })).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: expect.stringContaining('stopped'),
    });
    const next = await open();
    const events = await next.getEvents('kept');
    expect(events.filter((event) => event.type === 'block_complete')).toHaveLength(1);
  });

  it('held by a process that serves no socket (an older Parley), it is refused naming the holder', async () => {
    const holder = await createFileStore({ dataDir });
    try {
      await expect(open()).rejects.toMatchObject({
        code: 'STORE_LOCKED',
        message: expect.stringContaining(`process ${process.pid}`),
      });
    } finally {
      await holder.close();
    }
  });
});

describe('relabelSession', () => {
  it('renames a session and changes its role; a blank name is refused and changes nothing', async () => {
    const manager = await open();
    await manager.createSession({ sessionId: 'named', scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
    const renamed = await manager.relabelSession('named', { title: 'A title', role: 'reviewer' });
    expect(renamed).toMatchObject({
      title: 'A title',
      agentType: 'reviewer',
      scope: { kind: 'draft', role: 'reviewer' },
    });
    await expect(manager.relabelSession('named', { title: '  ' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    expect((await manager.getSession('named')).title).toBe('A title');
  });
});
