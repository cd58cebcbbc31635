import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createFileStore, createMemoryStore, type SessionStore, type StoreWarning } from '../../../src/store/index.js';
import { sessionRecord, collect } from '../builders.js';
import { diskFaults } from './disk-faults.js';
import { message, runListingSearchConformance } from './listing-search-conformance.js';

vi.mock('node:fs', async (importOriginal) => (await import('./disk-faults.js')).withDiskFaults(await importOriginal()));

const folders = new WeakMap<SessionStore, string>();

runListingSearchConformance({
  name: 'memory store',
  create: () => Promise.resolve(createMemoryStore()),
  destroy: (store) => store.close(),
});

runListingSearchConformance({
  name: 'file store',
  create: async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-listing-'));
    const store = await createFileStore({ dataDir, onWarning: () => {} });
    folders.set(store, dataDir);
    return store;
  },
  destroy: async (store) => {
    await store.close();
    rmSync(folders.get(store)!, { recursive: true, force: true });
  },
});

describe('file store indexes', () => {
  let dataDir: string;
  let warnings: StoreWarning[];
  const open = () => createFileStore({ dataDir, onWarning: (warning) => warnings.push(warning) });

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'parley-indexes-'));
    warnings = [];
    diskFaults.reset();
  });
  afterEach(() => {
    diskFaults.reset();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Every file of every session folder, by path: what an index must never change. */
  function sessionFiles(): Record<string, string> {
    const files: Record<string, string> = {};
    const sessions = join(dataDir, 'sessions');
    for (const id of readdirSync(sessions))
      for (const name of readdirSync(join(sessions, id)))
        if (statSync(join(sessions, id, name)).isFile())
          files[`${id}/${name}`] = readFileSync(join(sessions, id, name), 'utf8');
    return files;
  }

  async function seed(): Promise<void> {
    const store = await open();
    for (let index = 0; index < 4; index++) {
      await store.createSession(sessionRecord(`s${index}`, { lastActivity: 100 + index, updatedAt: 100 + index }));
      await store.append(`s${index}`, [
        message(`u${index}`, `question ${index} about invoices`),
        message(`a${index}`, `answer ${index}`, 'assistant'),
      ]);
    }
    await store.close();
  }

  it('keeps both indexes beside the sessions and serves a fresh process from them', async () => {
    await seed();
    expect(existsSync(join(dataDir, 'index', 'sessions.jsonl'))).toBe(true);
    expect(existsSync(join(dataDir, 'index', 'messages.jsonl'))).toBe(true);
    expect(existsSync(join(dataDir, 'index', 'open'))).toBe(false);
    const store = await open();
    expect((await store.listSessionPage!({ limit: 2 })).sessions.map((session) => session.sessionId)).toEqual([
      's3',
      's2',
    ]);
    expect((await store.searchSessions!({ text: 'invoices 2' })).hits.map((hit) => hit.blockId)).toEqual(['u2']);
    await store.close();
    expect(warnings).toEqual([]);
  });

  it('rebuilds a damaged index from the sessions, and the sessions stay byte for byte the same', async () => {
    await seed();
    const before = sessionFiles();
    writeFileSync(
      join(dataDir, 'index', 'messages.jsonl'),
      '{"kind":"parley-message-index","formatVersion":1}\n[garbage\n',
    );
    writeFileSync(join(dataDir, 'index', 'sessions.jsonl'), 'not an index at all\n');
    const store = await open();
    expect((await store.listSessionPage!({})).sessions.map((session) => session.sessionId)).toEqual([
      's3',
      's2',
      's1',
      's0',
    ]);
    expect((await store.searchSessions!({ text: 'invoices' })).hits).toHaveLength(4);
    await store.close();
    expect(warnings.filter((warning) => warning.code === 'INDEX_REBUILT')).toHaveLength(2);
    expect(sessionFiles()).toEqual(before);
  });

  it("a fresh process's first page, read from the snapshot's head, is the page the whole index gives", async () => {
    await seed();
    const store = await open();
    // Changed after the snapshot was written: s0 moves to the top, s2 is pinned, a new one joins.
    await store.updateSession('s0', (current) => ({ ...current, lastActivity: 900 }));
    await store.updateSession('s2', (current) => ({ ...current, pinned: true }));
    await store.createSession(sessionRecord('s9', { lastActivity: 150, updatedAt: 150 }));
    await store.close();
    const fresh = await open();
    const first = await fresh.listSessionPage!({ limit: 3 });
    expect(first.sessions.map((session) => session.sessionId)).toEqual(['s2', 's0', 's9']);
    // The next page parses the whole index: it goes on where the head left off.
    const second = await fresh.listSessionPage!({ limit: 3, cursor: first.nextCursor! });
    expect(second.sessions.map((session) => session.sessionId)).toEqual(['s3', 's1']);
    expect(second.nextCursor).toBeUndefined();
    expect(
      (await fresh.listSessionPage!({ limit: 3, filter: { pinned: false } })).sessions.map((s) => s.sessionId),
    ).toEqual(['s0', 's9', 's3']);
    await fresh.close();
    expect(warnings).toEqual([]);
  });

  it('a damaged line in the listing snapshot is found when read, and the listing is rebuilt from the records', async () => {
    await seed();
    const path = join(dataDir, 'index', 'sessions.jsonl');
    const lines = readFileSync(path, 'utf8').split('\n');
    lines[1] = '["s3",0,"not a number"]';
    writeFileSync(path, lines.join('\n'));
    const store = await open();
    expect((await store.listSessionPage!({ limit: 2 })).sessions.map((session) => session.sessionId)).toEqual([
      's3',
      's2',
    ]);
    await store.close();
    expect(warnings.map((warning) => warning.code)).toEqual(['INDEX_REBUILT']);
  });

  it('rebuilds a missing search index from the logs', async () => {
    await seed();
    rmSync(join(dataDir, 'index'), { recursive: true });
    const store = await open();
    expect((await store.searchSessions!({ text: 'answer 1' })).hits.map((hit) => hit.blockId)).toEqual(['a1']);
    await store.close();
  });

  it('an index write that fails never fails the append; the index catches up at the next open', async () => {
    await seed();
    const store = await open();
    diskFaults.root = join(dataDir, 'index');
    diskFaults.failNext('write', 'messages.jsonl', 'EIO', 10);
    diskFaults.failNext('write', 'sessions.jsonl', 'EIO', 10);
    await store.createSession(sessionRecord('late', { lastActivity: 500, updatedAt: 500 }));
    const appended = await store.append('late', [message('late-u', 'a late question about refunds')]);
    expect(appended[0]!.seq).toBe(0);
    // This process still finds it (its index in memory is whole) …
    expect((await store.searchSessions!({ text: 'refunds' })).hits.map((hit) => hit.sessionId)).toEqual(['late']);
    await store.close();
    expect(diskFaults.injected.length).toBeGreaterThan(0);
    expect(warnings.some((warning) => warning.code === 'INDEX_WRITE_FAILED')).toBe(true);
    // … the log is durable, the marker says the index missed something …
    expect(existsSync(join(dataDir, 'index', 'open'))).toBe(true);
    diskFaults.reset();
    const reopened = await open();
    expect((await collect(reopened.readLog('late'))).map((event) => event.seq)).toEqual([0]);
    // … and the next open catches up from the logs.
    expect((await reopened.searchSessions!({ text: 'refunds' })).hits.map((hit) => hit.sessionId)).toEqual(['late']);
    expect((await reopened.listSessionPage!({ limit: 1 })).sessions.map((session) => session.sessionId)).toEqual([
      'late',
    ]);
    await reopened.close();
    expect(existsSync(join(dataDir, 'index', 'open'))).toBe(false);
  });

  it('after a crash (the open marker left behind) the search index catches up from the logs written since', async () => {
    await seed();
    const store = await open();
    await store.append('s1', [message('u-crash', 'written just before the crash: kumquat')]);
    // A crash: the index lines written without fsync are lost, the marker stays.
    const path = join(dataDir, 'index', 'messages.jsonl');
    const lines = readFileSync(path, 'utf8').split('\n');
    await (store as unknown as { indexes: { settled(): Promise<void> } }).indexes.settled();
    writeFileSync(path, lines.filter((line) => !line.includes('kumquat')).join('\n'));
    const marker = readFileSync(join(dataDir, 'index', 'open'), 'utf8');
    await store.close();
    writeFileSync(join(dataDir, 'index', 'open'), marker);
    writeFileSync(path, lines.filter((line) => !line.includes('kumquat')).join('\n'));
    const reopened = await open();
    expect((await reopened.searchSessions!({ text: 'kumquat' })).hits.map((hit) => hit.blockId)).toEqual(['u-crash']);
    expect((await reopened.searchSessions!({ text: 'invoices' })).hits).toHaveLength(4);
    await reopened.close();
  });
});
