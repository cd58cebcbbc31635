import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isParleyError, type UnsequencedEvent } from '../../../src/conversation/index.js';
import type { SessionRecord, SessionStore } from '../../../src/store/index.js';
import { sessionRecord } from '../builders.js';
import type { StoreInitializer } from './conformance.js';

export function message(
  id: string,
  content: string,
  role: 'user' | 'assistant' = 'user',
  at = 1_700_000_000_500,
): UnsequencedEvent {
  return {
    type: 'block_complete',
    conversationId: 'main',
    at,
    block:
      role === 'user'
        ? { type: 'user_message', id, createdAt: at, content }
        : { type: 'assistant_text', id, createdAt: at, content },
  };
}

function active(id: string, activity: number, overrides: Partial<SessionRecord> = {}): SessionRecord {
  return sessionRecord(id, { lastActivity: activity, updatedAt: activity, ...overrides });
}

async function everyPage(store: SessionStore, limit: number, filter = {}): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.listSessionPage!({ filter, limit, ...(cursor !== undefined ? { cursor } : {}) });
    ids.push(...page.sessions.map((session) => session.sessionId));
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return ids;
}

/** Paged listing and full-text search, run by every store that has them. */
export function runListingSearchConformance(initializer: StoreInitializer): void {
  describe(`listing and search: ${initializer.name}`, () => {
    let store: SessionStore;
    beforeEach(async () => {
      store = await initializer.create();
    });
    afterEach(async () => {
      await initializer.destroy(store);
    });

    it('lists pinned sessions first, then the most recently active, in pages that meet exactly', async () => {
      for (let index = 0; index < 7; index++) await store.createSession(active(`s${index}`, 1_000 + index * 10));
      await store.createSession(active('pinned-old', 5, { pinned: true }));
      expect(await everyPage(store, 3)).toEqual(['pinned-old', 's6', 's5', 's4', 's3', 's2', 's1', 's0']);
      const first = await store.listSessionPage!({ limit: 3 });
      expect(first.sessions.map((session) => session.sessionId)).toEqual(['pinned-old', 's6', 's5']);
      expect(first.nextCursor).toBeDefined();
      const last = await store.listSessionPage!({ limit: 8 });
      expect(last.nextCursor).toBeUndefined();
    });

    it('keeps a cursor stable when sessions change between pages: no repeats, no unchanged session skipped', async () => {
      for (let index = 0; index < 6; index++) await store.createSession(active(`s${index}`, 1_000 + index * 10));
      const first = await store.listSessionPage!({ limit: 2 });
      expect(first.sessions.map((session) => session.sessionId)).toEqual(['s5', 's4']);
      // Between the pages: an unseen session becomes the newest, a new one appears, a seen one is touched.
      await store.updateSession('s1', (current) => ({ ...current, lastActivity: 9_000, updatedAt: 9_000 }));
      await store.createSession(active('new', 9_500));
      await store.updateSession('s5', (current) => ({ ...current, lastActivity: 9_900, updatedAt: 9_900 }));
      const rest: string[] = [];
      let cursor = first.nextCursor;
      while (cursor !== undefined) {
        const page = await store.listSessionPage!({ limit: 2, cursor });
        rest.push(...page.sessions.map((session) => session.sessionId));
        cursor = page.nextCursor;
      }
      // s1 moved above the cursor (it is on the first page now); every unchanged session follows once.
      expect(rest).toEqual(['s3', 's2', 's0']);
    });

    it('filters pages by status, tag and pinned', async () => {
      await store.createSession(active('a', 10, { tags: ['billing', 'urgent'] }));
      await store.createSession(active('b', 20, { status: 'archived', tags: ['billing'] }));
      await store.createSession(active('c', 30, { pinned: true }));
      expect(await everyPage(store, 10, { tag: 'billing' })).toEqual(['b', 'a']);
      expect(await everyPage(store, 10, { tag: 'billing', status: 'active' })).toEqual(['a']);
      expect(await everyPage(store, 10, { pinned: true })).toEqual(['c']);
      expect(await everyPage(store, 10, { pinned: false })).toEqual(['b', 'a']);
    });

    it('refuses a cursor it did not make and a page size out of range', async () => {
      await expect(store.listSessionPage!({ cursor: 'not-a-cursor' })).rejects.toSatisfy(
        (error) => isParleyError(error, 'INVALID_INPUT') && /cursor/.test((error as Error).message),
      );
      await expect(store.listSessionPage!({ limit: 0 })).rejects.toSatisfy((error) =>
        isParleyError(error, 'INVALID_INPUT'),
      );
    });

    it('finds the messages holding every word, newest first, with a snippet around the word', async () => {
      await store.createSession(active('deploy', 10));
      await store.createSession(active('other', 20));
      await store.append('deploy', [
        message('u1', 'Please deploy the billing service to staging'),
        message('a1', 'Deployed billing to staging; the smoke tests pass.', 'assistant', 1_700_000_000_600),
      ]);
      await store.append('other', [message('u2', 'What is the weather in Lisbon?')]);
      await store.append('deploy', [message('u3', 'Now roll BILLING back', 'user', 1_700_000_000_700)]);
      await settle(store);
      const billing = await store.searchSessions!({ text: 'billing' });
      expect(billing.hits.map((hit) => [hit.sessionId, hit.blockId])).toEqual([
        ['deploy', 'u3'],
        ['deploy', 'a1'],
        ['deploy', 'u1'],
      ]);
      expect(billing.hits[0]).toMatchObject({
        seq: 2,
        role: 'user',
        conversationId: 'main',
        snippet: 'Now roll BILLING back',
      });
      const both = await store.searchSessions!({ text: 'Staging,  billing!' });
      expect(both.hits.map((hit) => hit.blockId)).toEqual(['a1', 'u1']);
      expect((await store.searchSessions!({ text: 'lisbon' })).hits.map((hit) => hit.sessionId)).toEqual(['other']);
      expect((await store.searchSessions!({ text: 'billing lisbon' })).hits).toEqual([]);
      expect((await store.searchSessions!({ text: 'billing', limit: 1 })).hits).toHaveLength(1);
    });

    it('finds words in scripts other than Latin, whatever their case', async () => {
      await store.createSession(active('scripts', 10));
      await store.append('scripts', [
        message('ru', 'Привет, МИР: проверка'),
        message('jp', '東京タワー に行きます'),
        message('el', 'ΚΑΛΗΜΈΡΑ κόσμε'),
        message('ar', 'مرحبا بالعالم'),
      ]);
      await settle(store);
      for (const [query, blockId] of [
        ['мир', 'ru'],
        ['привет проверка', 'ru'],
        ['東京タワー', 'jp'],
        ['καλημέρα', 'el'],
        ['مرحبا', 'ar'],
      ] as const) {
        expect(
          (await store.searchSessions!({ text: query })).hits.map((hit) => hit.blockId),
          query,
        ).toEqual([blockId]);
      }
    });

    it('answers bad queries clearly and never treats regex or SQL characters as syntax', async () => {
      await store.createSession(active('s', 10));
      await store.append('s', [message('u1', "it's 100% done (really) [x] a.b*c OR 1=1; DROP TABLE sessions")]);
      await settle(store);
      for (const text of ['', '   ']) {
        await expect(store.searchSessions!({ text })).rejects.toSatisfy(
          (error) => isParleyError(error, 'INVALID_INPUT') && /empty/.test((error as Error).message),
        );
      }
      await expect(store.searchSessions!({ text: 'x'.repeat(10_000) })).rejects.toSatisfy(
        (error) => isParleyError(error, 'INVALID_INPUT') && /at most 1000 characters/.test((error as Error).message),
      );
      expect((await store.searchSessions!({ text: '.*' })).hits).toEqual([]);
      expect((await store.searchSessions!({ text: "'); --" })).hits).toEqual([]);
      expect((await store.searchSessions!({ text: '%' })).hits).toEqual([]);
      expect(
        (await store.searchSessions!({ text: 'OR 1=1; DROP TABLE sessions' })).hits.map((hit) => hit.blockId),
      ).toEqual(['u1']);
      expect((await store.searchSessions!({ text: '(really) [x]' })).hits.map((hit) => hit.blockId)).toEqual(['u1']);
      expect((await store.searchSessions!({ text: 'a.b*c' })).hits.map((hit) => hit.blockId)).toEqual(['u1']);
      expect(await store.getSession('s')).toBeDefined();
    });
  });
}

/** The file store writes its index after each append: let those writes land (the others have nothing pending). */
async function settle(store: SessionStore): Promise<void> {
  const settled = (store as { settled?: () => Promise<void> }).settled;
  if (settled !== undefined) await settled.call(store);
}
