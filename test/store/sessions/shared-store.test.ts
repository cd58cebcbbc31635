import { describe, expect, it } from 'vitest';
import { createMemoryStore, shareStore, type StoreChange } from '../../../src/store/index.js';
import { collect, sessionRecord, storeErrorOf, userMessageEvent } from '../builders.js';

describe('shareStore', () => {
  it("reports to each view what the other views wrote, never the view's own writes", async () => {
    const shared = shareStore(createMemoryStore());
    const server = shared.view();
    const importer = shared.view();
    const seenByServer: StoreChange[] = [];
    const seenByImporter: StoreChange[] = [];
    server.watch!((change) => seenByServer.push(change));
    importer.watch!((change) => seenByImporter.push(change));

    await importer.createSession(sessionRecord('s1'));
    await importer.append('s1', [userMessageEvent('u1', 'hello')]);
    await importer.append('s1', [userMessageEvent('u2', 'again')]);
    await importer.updateSession('s1', (current) => ({ ...current, title: 'Imported' }));
    await server.append('s1', [userMessageEvent('u3', 'from the server')]);

    expect(seenByServer).toEqual([
      { kind: 'updated', sessionId: 's1' },
      { kind: 'appended', sessionId: 's1', firstSeq: 0 },
      { kind: 'appended', sessionId: 's1', firstSeq: 1 },
      { kind: 'updated', sessionId: 's1' },
    ]);
    expect(seenByImporter).toEqual([{ kind: 'appended', sessionId: 's1', firstSeq: 2 }]);
    // Both views read the one store.
    expect((await collect(server.readLog('s1'))).map((event) => event.seq)).toEqual([0, 1, 2]);
    expect((await server.getSession('s1'))?.title).toBe('Imported');
    await shared.close();
  });

  it('stops reporting to a closed view, refuses its calls, and keeps the store open for the others', async () => {
    const shared = shareStore(createMemoryStore());
    const closed = shared.view();
    const open = shared.view();
    const seen: StoreChange[] = [];
    closed.watch!((change) => seen.push(change));
    await closed.close();
    await open.createSession(sessionRecord('s1'));
    expect(seen).toEqual([]);
    expect((await storeErrorOf(() => closed.getSession('s1'))).code).toBe('STORE_CLOSED');
    expect(await open.getSession('s1')).toBeDefined();
    await shared.close();
    expect((await storeErrorOf(() => open.getSession('s1'))).code).toBe('STORE_CLOSED');
  });
});
