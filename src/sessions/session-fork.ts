import { randomUUID } from 'node:crypto';
import type { StreamEvent } from '../conversation/index.js';
import { FORMAT_VERSION, type Checkpoint, type SessionRecord, type SessionStore } from '../store/index.js';
import { SessionError } from './errors.js';
import { liveSessionOf } from './live-sessions.js';
import { checkSessionId } from './session-ids.js';

/** Where `forkSession` cuts the source's history, and what the fork runs on. */
export interface ForkSessionOptions {
  /**
   * The last point the fork keeps: a `seq` of the source's log, or a block id (the fork keeps the
   * block's last event). Default: the end of the source's history.
   */
  at?: number | string;
  /** The back end the fork continues on (default: the source's). */
  backend?: string;
  /** The fork's id (default: a random UUID). */
  sessionId?: string;
  /** The fork's title (default: the source's). */
  title?: string;
}

/**
 * The fork of `source` at its resolved point: a new record naming its origin, the source's events
 * through that point renumbered as the fork's own, and the checkpoints that were written over that
 * history only. The source's native link is not carried over: the native session goes on past the
 * point, so a native back end resumes the fork from a transcript Parley writes from the fork's log.
 */
export interface ForkPlan {
  record: SessionRecord;
  events: StreamEvent[];
  checkpoints: Checkpoint[];
}

/**
 * Reads the source's history through `at` and plans its fork. Throws a typed error, having changed
 * nothing, when `at` is not a seq or a block id of the source.
 */
export async function planFork(
  store: SessionStore,
  source: SessionRecord,
  options: ForkSessionOptions,
  now: number,
): Promise<ForkPlan> {
  const sessionId = options.sessionId === undefined ? randomUUID() : checkSessionId(options.sessionId);
  const events: StreamEvent[] = [];
  for await (const event of store.readLog(source.sessionId)) events.push(event);
  const seq = forkPoint(source.sessionId, events, options.at);
  const kept = events.slice(0, seq + 1).map((event) => ({ ...event, sessionId }));
  const checkpoints = (await store.listCheckpoints(source.sessionId)).filter(
    (checkpoint) => checkpoint.covers.throughSeq <= seq,
  );
  const base: SessionRecord = {
    formatVersion: FORMAT_VERSION,
    sessionId,
    type: options.backend ?? source.native?.backend ?? source.type,
    agentProfileReference: source.agentProfileReference,
    agentType: source.agentType,
    status: 'active',
    scope: source.scope,
    createdAt: now,
    updatedAt: now,
    lastActivity: now,
    settings: source.settings,
    stats: {
      totalMessages: 0,
      totalTokens: 0,
      totalCompactions: checkpoints.length,
      ...(checkpoints.length > 0 ? { lastCompactionAt: checkpoints.at(-1)!.createdAt } : {}),
    },
    forkedFrom: { sessionId: source.sessionId, seq },
    ...(source.title !== undefined || options.title !== undefined ? { title: options.title ?? source.title } : {}),
    ...(source.clearedThroughSeq !== undefined && source.clearedThroughSeq <= seq
      ? { clearedThroughSeq: source.clearedThroughSeq }
      : {}),
  };
  // The stats and metrics are what the kept history says, as on any load from a log.
  const record = liveSessionOf(sessionId, base, kept).record;
  return { record, events: kept, checkpoints };
}

/** The `seq` the fork ends at: `at` checked against the source's log. */
function forkPoint(sourceId: string, events: readonly StreamEvent[], at: number | string | undefined): number {
  const lastSeq = events.length - 1;
  if (at === undefined) return lastSeq;
  if (typeof at === 'number') {
    if (!Number.isInteger(at) || at < 0 || at > lastSeq) {
      throw new SessionError(
        'FORK_POINT_NOT_FOUND',
        `Cannot fork session "${sourceId}" at seq ${at}: its log holds seqs 0 to ${lastSeq}. ` +
          'Give a whole number in that range, or a block id (`parley show` lists them).',
        { fault: 'user', data: { sessionId: sourceId, at, lastSeq } },
      );
    }
    return at;
  }
  for (let index = lastSeq; index >= 0; index--) {
    if (blockIdOf(events[index]!) === at) return index;
  }
  throw new SessionError(
    'FORK_POINT_NOT_FOUND',
    `Cannot fork session "${sourceId}" at "${at}": no block has that id and it is not a seq. ` +
      `Give a block id of the session or a seq from 0 to ${lastSeq}.`,
    { fault: 'user', data: { sessionId: sourceId, at, lastSeq } },
  );
}

function blockIdOf(event: StreamEvent): string | undefined {
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

/**
 * Reads a fork point typed by a person: digits are a seq, anything else a block id. A number with
 * a sign, a point or an exponent is refused rather than read as a block id nobody meant.
 */
export function parseForkPoint(text: string): number | string {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  if (/^[-+]?\d*\.?\d+(e[-+]?\d+)?$/i.test(trimmed)) {
    throw new SessionError(
      'INVALID_INPUT',
      `"${text}" is not a fork point: a seq is a whole number from 0, or give a block id.`,
      { fault: 'user', data: { at: text } },
    );
  }
  return trimmed;
}
