import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  connectSocketStore,
  createFileStore,
  serveStoreOnSocket,
  shareStore,
  type SessionStore,
} from '../../../src/store/index.js';
import { collect, sessionRecord, textEvent } from '../builders.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A file store served on a socket, and a client of it: what a second process on the data folder uses. */
async function socketStore(): Promise<SessionStore> {
  const folder = await mkdtemp(join(tmpdir(), 'parley-socket-store-'));
  cleanups.push(() => rm(folder, { recursive: true, force: true }));
  const shared = shareStore(await createFileStore({ dataDir: join(folder, 'data') }));
  cleanups.push(() => shared.close());
  const server = await serveStoreOnSocket(join(folder, 'store.sock'), () => shared.view());
  cleanups.push(() => server.close());
  const store = await connectSocketStore(join(folder, 'store.sock'), { label: 'test' });
  cleanups.push(() => store.close());
  return store;
}

describe('the socket store and the history tree', () => {
  it("numbers a fork's first append one past its fork point, as the store it serves does", async () => {
    const store = await socketStore();
    await store.createSession(sessionRecord('fork', { forkedFrom: { sessionId: 'source', seq: 9 } }));
    expect(await store.lastSeq('fork')).toBe(9);
    const appended = await store.append('fork', [textEvent('b', 'x'), textEvent('b', 'y')]);
    expect(appended.map((event) => event.seq)).toEqual([10, 11]);
    expect((await collect(store.readLog('fork', { afterSeq: 10 }))).map((event) => event.seq)).toEqual([11]);
  });

  it('keeps the segments and head of a record', async () => {
    const store = await socketStore();
    const branched = { segments: [{ firstSeq: 6, parentSeq: 2 }], head: 4 };
    await store.createSession(sessionRecord('branched', branched));
    expect(await store.getSession('branched')).toMatchObject(branched);
  });
});
