import type { StreamEvent } from '../conversation/index.js';
import type { Checkpoint, HistorySegment, ReadLogOptions, SessionRecord, SessionStore } from '../store/index.js';
import { SessionError } from './errors.js';

/**
 * A session's history is a tree over append-only logs (the record's `segments`, `head` and
 * `forkedFrom`); the active branch is one path through it. This module is the one place that
 * walks it: every reader above the store reads a session's history through it, and the store's
 * `readLog` keeps meaning "this session's own events".
 */

/** A run of one session's log on the active branch: seqs `firstSeq` to `lastSeq`, both included. */
export interface HistoryRange {
  sessionId: string;
  firstSeq: number;
  lastSeq: number;
}

/** The active branch of a session: its ranges oldest first, and the seq it ends at. */
export interface HistoryPath {
  ranges: HistoryRange[];
  /** The seq the active branch ends at (-1 when it holds nothing). */
  tip: number;
}

/** The implicit first segment: it continues the fork point, or starts the session. */
export function rootSegment(record: SessionRecord): HistorySegment {
  const parentSeq = record.forkedFrom?.seq ?? -1;
  return { firstSeq: parentSeq + 1, parentSeq };
}

/** Every segment of the session's own log, the root first, in `firstSeq` order. */
export function segmentsOf(record: SessionRecord): HistorySegment[] {
  return [rootSegment(record), ...(record.segments ?? [])];
}

/**
 * The ranges of the history that ends at `tip` in `record`'s own log (its segments walked back),
 * oldest first, and the seq where it goes on in the source of a fork (-1 when it does not).
 */
export function ownRanges(record: SessionRecord, tip: number): { ranges: HistoryRange[]; continuesAt: number } {
  const segments = segmentsOf(record);
  const root = segments[0]!;
  const ranges: HistoryRange[] = [];
  let at = tip;
  while (at >= root.firstSeq) {
    // The segment holding `at`: the one with the greatest firstSeq at or below it.
    let segment = root;
    for (const each of segments) if (each.firstSeq <= at && each.firstSeq >= segment.firstSeq) segment = each;
    ranges.push({ sessionId: record.sessionId, firstSeq: segment.firstSeq, lastSeq: at });
    // A segment always continues a seq below its first one, so the walk ends.
    at = Math.min(segment.parentSeq, segment.firstSeq - 1);
  }
  return { ranges: ranges.reverse(), continuesAt: record.forkedFrom === undefined ? -1 : at };
}

/**
 * The active branch of `record`: from `tip` (default: the record's `head`, else its log's end)
 * back through its segments and, for a fork, on in the source it was forked from.
 */
export async function activePath(
  store: Pick<SessionStore, 'getSession' | 'lastSeq'>,
  record: SessionRecord,
  options: { tip?: number } = {},
): Promise<HistoryPath> {
  const tip = options.tip ?? record.head ?? (await store.lastSeq(record.sessionId));
  const ranges: HistoryRange[] = [];
  const visited = new Set<string>();
  let current: SessionRecord = record;
  let at = tip;
  for (;;) {
    visited.add(current.sessionId);
    const own = ownRanges(current, at);
    ranges.unshift(...own.ranges);
    if (current.forkedFrom === undefined || own.continuesAt < 0) break;
    const sourceId = current.forkedFrom.sessionId;
    if (visited.has(sourceId)) break;
    const source = await store.getSession(sourceId);
    if (!source) {
      throw new SessionError(
        'SESSION_NOT_FOUND',
        `Session "${record.sessionId}" continues the history of session "${sourceId}", which is not in the store. ` +
          'Restore that session from a backup (its history is shared, not copied).',
        { fault: 'system', data: { sessionId: record.sessionId, sourceId } },
      );
    }
    current = source;
    at = own.continuesAt;
  }
  return { ranges, tip };
}

/** The part of the path that ends at `seq` (a seq on it): the history a rewind or a fork there keeps. */
export function pathThrough(path: HistoryPath, seq: number): HistoryPath {
  const ranges: HistoryRange[] = [];
  for (const range of path.ranges) {
    if (range.firstSeq > seq) break;
    ranges.push(range.lastSeq > seq ? { ...range, lastSeq: seq } : range);
  }
  return { ranges, tip: seq };
}

/** True when `seq` lies on the path (the start, -1, always does). */
export function onPath(path: HistoryPath, seq: number): boolean {
  if (seq < 0) return true;
  return path.ranges.some((range) => seq >= range.firstSeq && seq <= range.lastSeq);
}

/**
 * The events of the active branch in `seq` order (within the window when given), each carrying
 * `record`'s session id: events shared with a fork's source read as the fork's own.
 */
export async function* readActiveHistory(
  store: Pick<SessionStore, 'getSession' | 'lastSeq' | 'readLog'>,
  record: SessionRecord,
  options: ReadLogOptions & { path?: HistoryPath } = {},
): AsyncGenerator<StreamEvent> {
  const path = options.path ?? (await activePath(store, record));
  for (const range of path.ranges) {
    const after = Math.max(range.firstSeq - 1, options.afterSeq ?? -1);
    const through = Math.min(range.lastSeq, options.throughSeq ?? range.lastSeq);
    if (after >= through) continue;
    const shared = range.sessionId !== record.sessionId;
    for await (const event of store.readLog(range.sessionId, { afterSeq: after, throughSeq: through }))
      yield shared ? { ...event, sessionId: record.sessionId } : event;
  }
}

/**
 * The newest `limit` events of the active branch below `beforeSeq` (and above `afterSeq` when
 * given), oldest first: a history read from its end. The ranges are walked from the newest back,
 * each read in windows of the seqs still wanted (a log's seqs count up one by one, so a window of
 * n seqs holds n events and the store reads only those bytes); a window that holds fewer (seqs
 * that skip) is followed by the next one below it, so the answer is right either way.
 */
export async function readActiveHistoryBefore(
  store: Pick<SessionStore, 'getSession' | 'lastSeq' | 'readLog'>,
  record: SessionRecord,
  options: { beforeSeq: number; afterSeq?: number; limit: number; path?: HistoryPath },
): Promise<StreamEvent[]> {
  const path = options.path ?? (await activePath(store, record));
  const floor = options.afterSeq ?? -1;
  const windows: StreamEvent[][] = [];
  let wanted = options.limit;
  for (let index = path.ranges.length - 1; index >= 0 && wanted > 0; index--) {
    const range = path.ranges[index]!;
    const lowest = Math.max(range.firstSeq - 1, floor);
    let through = Math.min(range.lastSeq, options.beforeSeq - 1);
    const shared = range.sessionId !== record.sessionId;
    while (wanted > 0 && through > lowest) {
      const after = Math.max(lowest, through - wanted);
      const window: StreamEvent[] = [];
      for await (const event of store.readLog(range.sessionId, { afterSeq: after, throughSeq: through }))
        window.push(shared ? { ...event, sessionId: record.sessionId } : event);
      // More than wanted only if seqs ever repeat; the newest are the ones asked for.
      const taken = window.length > wanted ? window.slice(window.length - wanted) : window;
      if (taken.length > 0) windows.push(taken);
      wanted -= taken.length;
      through = after;
    }
  }
  return windows.reverse().flat();
}

/** The active branch's events, in an array. */
export async function readActiveEvents(
  store: Pick<SessionStore, 'getSession' | 'lastSeq' | 'readLog'>,
  record: SessionRecord,
  options: ReadLogOptions & { path?: HistoryPath } = {},
): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  for await (const event of readActiveHistory(store, record, options)) events.push(event);
  return events;
}

/**
 * The checkpoints that lie on the path, by the session that holds them, nearest first: the
 * session's own, then its fork source's (through the lineage, never copied), each oldest version
 * first. A checkpoint lies on the path when the seq it covers through does: one written on a
 * branch that was left, or past a rewind point, does not.
 */
export async function checkpointsOnPath(
  store: Pick<SessionStore, 'listCheckpoints'>,
  record: SessionRecord,
  path: HistoryPath,
): Promise<Checkpoint[][]> {
  const sessions = [record.sessionId];
  for (const range of path.ranges) if (!sessions.includes(range.sessionId)) sessions.splice(1, 0, range.sessionId);
  const lists = await Promise.all(sessions.map((sessionId) => store.listCheckpoints(sessionId)));
  return lists.map((list) => list.filter((checkpoint) => onPath(path, checkpoint.covers.throughSeq)));
}

/**
 * The checkpoint a request on the active branch uses: the session's newest version on the path,
 * else the newest on the path in its fork source (and so on up the lineage).
 */
export async function activeCheckpoint(
  store: Pick<SessionStore, 'listCheckpoints'>,
  record: SessionRecord,
  path: HistoryPath,
): Promise<Checkpoint | undefined> {
  for (const list of await checkpointsOnPath(store, record, path)) {
    const newest = list.at(-1);
    if (newest) return newest;
  }
  return undefined;
}

/**
 * The seq `at` names on the active branch: a seq on it, or a block id (the block's last event on
 * it); undefined means the tip. Throws FORK_POINT_NOT_FOUND, naming `verb`, when it is neither.
 * A seq is checked against the ranges alone; only a block id reads events.
 */
export async function resolvePoint(
  store: Pick<SessionStore, 'getSession' | 'lastSeq' | 'readLog'>,
  record: SessionRecord,
  path: HistoryPath,
  at: number | string | undefined,
  verb: string,
): Promise<number> {
  const sessionId = record.sessionId;
  if (at === undefined) return path.tip;
  const described = describeRanges(path);
  if (typeof at === 'number') {
    if (!Number.isInteger(at) || at < 0 || !onPath(path, at)) {
      throw new SessionError(
        'FORK_POINT_NOT_FOUND',
        `Cannot ${verb} session "${sessionId}" at seq ${at}: its active branch holds seqs ${described}. ` +
          'Give a seq on it, or a block id (`parley show` lists them).',
        { fault: 'user', data: { sessionId, at, lastSeq: path.tip } },
      );
    }
    return at;
  }
  let found: number | undefined;
  for await (const event of readActiveHistory(store, record, { path })) if (blockIdOf(event) === at) found = event.seq;
  if (found !== undefined) return found;
  throw new SessionError(
    'FORK_POINT_NOT_FOUND',
    `Cannot ${verb} session "${sessionId}" at "${at}": no block of its active branch has that id and it is not a seq. ` +
      `Give a block id of the session or a seq on its active branch (${described}).`,
    { fault: 'user', data: { sessionId, at, lastSeq: path.tip } },
  );
}

function describeRanges(path: HistoryPath): string {
  if (path.ranges.length === 0) return 'none (it is empty)';
  return path.ranges
    .map((range) => (range.firstSeq === range.lastSeq ? `${range.firstSeq}` : `${range.firstSeq} to ${range.lastSeq}`))
    .join(', ');
}

export function blockIdOf(event: StreamEvent): string | undefined {
  switch (event.type) {
    case 'block_start':
    case 'block_complete':
      return event.block.id;
    case 'text_delta':
    case 'block_update':
      return event.blockId;
    default:
      return undefined;
  }
}
