import { ValidationError } from '../../conversation/index.js';
import type { SessionFilter, SessionRecord } from './records.js';

/**
 * Paged listing, shared by every store: sessions in one total order (pinned first, then the most
 * recently active, then by id), and a cursor that is the position of the last session a page
 * held. A page after a cursor holds the sessions strictly after that position, so paging never
 * repeats a session and never skips one that did not change meanwhile; a session that became
 * active since moves above the cursor (it is on the first page again), one created meanwhile too.
 */

/** What `SessionStore.listSessionPage` is asked. */
export interface SessionPageQuery {
  filter?: SessionFilter;
  /** Sessions per page: 1 to 1,000, default 50. */
  limit?: number;
  /** `nextCursor` of the page before; absent for the first page. */
  cursor?: string;
}

/** One page of sessions in listing order, and the cursor of the next page (absent after the last). */
export interface SessionPage {
  sessions: SessionRecord[];
  nextCursor?: string;
}

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 1_000;

/** Where a session sits in the listing order. */
export interface ListingKey {
  pinned: boolean;
  /** Milliseconds since the epoch: `lastActivity`, else `updatedAt`. */
  activity: number;
  sessionId: string;
}

export function listingKeyOf(record: SessionRecord): ListingKey {
  return {
    pinned: record.pinned === true,
    activity: record.lastActivity ?? record.updatedAt,
    sessionId: record.sessionId,
  };
}

/** Negative when `a` is listed before `b`. */
export function compareListingKeys(a: ListingKey, b: ListingKey): number {
  if (a.pinned !== b.pinned) return a.pinned ? -1 : 1;
  if (a.activity !== b.activity) return b.activity - a.activity;
  return a.sessionId < b.sessionId ? 1 : a.sessionId > b.sessionId ? -1 : 0;
}

export function encodeCursor(key: ListingKey): string {
  return Buffer.from(JSON.stringify([key.pinned ? 1 : 0, key.activity, key.sessionId])).toString('base64url');
}

/** The position a cursor names; a cursor this code did not make is refused, saying where to get one. */
export function decodeCursor(cursor: string): ListingKey {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  if (
    Array.isArray(parsed) &&
    parsed.length === 3 &&
    (parsed[0] === 0 || parsed[0] === 1) &&
    Number.isSafeInteger(parsed[1]) &&
    typeof parsed[2] === 'string'
  ) {
    return { pinned: parsed[0] === 1, activity: parsed[1] as number, sessionId: parsed[2] };
  }
  throw new ValidationError(
    `The cursor ${JSON.stringify(cursor.slice(0, 60))} is not one a session listing gave; pass the nextCursor of the page before, or none for the first page.`,
    { data: { field: 'cursor' } },
  );
}

export function pageLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
    throw new ValidationError(`A page holds 1 to ${MAX_PAGE_SIZE} sessions; got ${String(limit)}.`, {
      data: { field: 'limit', value: limit },
    });
  }
  return limit;
}

/**
 * A page out of records in any order: the reference a store without an index uses (the memory
 * store), and what the conformance suite checks the indexed stores against.
 */
export function pageOf(
  records: readonly SessionRecord[],
  query: SessionPageQuery,
  match: (record: SessionRecord) => boolean,
): SessionPage {
  const limit = pageLimit(query.limit);
  const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
  const sorted = records
    .filter(match)
    .map((record) => ({ record, key: listingKeyOf(record) }))
    .filter(({ key }) => after === undefined || compareListingKeys(key, after) > 0)
    .sort((a, b) => compareListingKeys(a.key, b.key));
  const page = sorted.slice(0, limit);
  return {
    sessions: page.map(({ record }) => record),
    ...(sorted.length > limit ? { nextCursor: encodeCursor(page.at(-1)!.key) } : {}),
  };
}
