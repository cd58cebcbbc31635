import {
  MAX_SESSION_TAGS,
  SessionFilterSchema,
  SessionTagSchema,
  pageOf,
  matchesFilter,
  type SessionPage,
  type SessionPageQuery,
  type SessionRecord,
  type SessionSearchQuery,
  type SessionSearchResult,
  type SessionStore,
} from '../store/index.js';
import { describeIssues } from '../conversation/index.js';
import { SessionError } from './errors.js';
import type { LiveSession } from './live-sessions.js';
import type { RecordChange } from './session-changes.js';

// Finding sessions: pages in listing order, full-text search, and what people file them by (tags, pins).

/**
 * A page of sessions from the store's index; a session held in memory shows its newest record
 * (session.json is written at most every few seconds while a session is busy). A store without
 * an index is listed whole and paged here.
 */
export async function listSessionPage(
  store: SessionStore,
  query: SessionPageQuery,
  cached: (sessionId: string) => Promise<LiveSession> | undefined,
): Promise<SessionPage> {
  const filter = SessionFilterSchema.safeParse(query.filter ?? {});
  if (!filter.success) {
    throw new SessionError('INVALID_INPUT', `listSessionPage: ${describeIssues(filter.error.issues)}.`, {
      fault: 'user',
    });
  }
  const checked = { ...query, filter: filter.data };
  let page: SessionPage;
  if (store.listSessionPage !== undefined) page = await store.listSessionPage(checked);
  else {
    const records: SessionRecord[] = [];
    for await (const record of store.listSessions(filter.data)) records.push(record);
    page = pageOf(records, checked, (record) => matchesFilter(record, filter.data));
  }
  const sessions = await Promise.all(
    page.sessions.map(async (record) => {
      const live = await cached(record.sessionId)?.catch(() => undefined);
      return live === undefined ? record : structuredClone(live.record);
    }),
  );
  return { ...page, sessions };
}

/** The messages holding every word of the query, newest first, from the store's index. */
export async function searchSessions(store: SessionStore, query: SessionSearchQuery): Promise<SessionSearchResult> {
  if (store.searchSessions === undefined) {
    throw new SessionError(
      'INVALID_INPUT',
      `The ${store.kind} store keeps no search index; search needs the file or the PostgreSQL store.`,
      { fault: 'user' },
    );
  }
  return store.searchSessions(query);
}

/** Adds and removes tags (added ones kept in the order given, each once); a bad tag is refused, naming it. */
export function tagChange(
  change: { add?: readonly string[]; remove?: readonly string[] },
  clock: () => number,
): RecordChange {
  for (const tag of [...(change.add ?? []), ...(change.remove ?? [])]) {
    if (!SessionTagSchema.safeParse(tag).success) {
      throw new SessionError(
        'INVALID_INPUT',
        `The tag ${JSON.stringify(String(tag).slice(0, 60))} is not one Parley keeps: a tag is a letter or digit, then letters, digits or -_.:/ (at most 40 characters).`,
        { fault: 'user', data: { field: 'tags', value: tag } },
      );
    }
  }
  return (current) => {
    const removed = new Set(change.remove ?? []);
    const tags = [...new Set([...(current.tags ?? []), ...(change.add ?? [])])].filter((tag) => !removed.has(tag));
    if (tags.length > MAX_SESSION_TAGS) {
      throw new SessionError(
        'INVALID_INPUT',
        `A session carries at most ${MAX_SESSION_TAGS} tags (this change would give it ${tags.length}); remove some first.`,
        { fault: 'user', data: { field: 'tags' } },
      );
    }
    const { tags: _old, ...rest } = current;
    // Filing a session is not activity: its place in the listing stays.
    return {
      ...rest,
      ...(tags.length > 0 ? { tags } : {}),
      lastActivity: current.lastActivity ?? current.updatedAt,
      updatedAt: clock(),
    };
  };
}

/**
 * Pins or unpins. The session's last activity is kept, not touched: pinning files a session, it
 * is not activity, so it keeps its place among the pinned (or the unpinned) ones.
 */
export function pinChange(pinned: boolean): RecordChange {
  if (typeof pinned !== 'boolean')
    throw new SessionError('INVALID_INPUT', 'pinSession: pinned must be true or false.', { fault: 'user' });
  return (current) => {
    const { pinned: _old, ...rest } = current;
    // The listing falls back to updatedAt without a lastActivity: keep the place it had.
    return { ...rest, lastActivity: current.lastActivity ?? current.updatedAt, ...(pinned ? { pinned: true } : {}) };
  };
}
