import { randomUUID } from 'node:crypto';
import { FORMAT_VERSION, type SessionRecord, type SessionStore } from '../store/index.js';
import { SessionError } from './errors.js';
import { activePath, checkpointsOnPath, onPath, pathThrough, readActiveEvents, resolvePoint } from './history-path.js';
import { liveSessionOf, type LiveSession } from './live-sessions.js';
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
 * Plans the fork of `source` at its resolved point: the fork's record, naming its origin. Its
 * history is shared, not copied: the fork's own log starts empty and numbers its first event one
 * past the fork point, and every reader walks on into the source (history-path.ts), checkpoints
 * included. The source's native link is not carried over: the native session goes on past the
 * point, so a native back end resumes the fork from a transcript Parley writes from its history.
 * `sourceLive` is the source as cached, when it is: a fork at its tip then reads no events.
 * Throws a typed error, having changed nothing, when `at` is not a seq or a block id of the
 * source's active branch.
 */
export async function planFork(
  store: SessionStore,
  source: SessionRecord,
  sourceLive: LiveSession | undefined,
  options: ForkSessionOptions,
  now: number,
): Promise<SessionRecord> {
  const sessionId = options.sessionId === undefined ? randomUUID() : checkSessionId(options.sessionId);
  const path = await activePath(store, source);
  const seq = await resolvePoint(store, source, path, options.at, 'fork');
  const kept = pathThrough(path, seq);
  const checkpoints = (await checkpointsOnPath(store, source, kept)).flat();
  const newest = checkpoints.reduce<string | undefined>(
    (latest, checkpoint) => (latest === undefined || checkpoint.createdAt > latest ? checkpoint.createdAt : latest),
    undefined,
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
      ...(newest !== undefined ? { lastCompactionAt: newest } : {}),
    },
    forkedFrom: { sessionId: source.sessionId, seq },
    ...(source.title !== undefined || options.title !== undefined ? { title: options.title ?? source.title } : {}),
    ...(source.clearedThroughSeq !== undefined && onPath(kept, source.clearedThroughSeq)
      ? { clearedThroughSeq: source.clearedThroughSeq }
      : {}),
  };
  // The stats and metrics are a cache of what the history says: taken from the cached source when
  // the fork keeps all of it, else counted from the kept history, as on any load.
  if (sourceLive !== undefined && seq === path.tip && sourceLive.conversation.lastSeq === seq) {
    const { totalMessages, totalTokens } = sourceLive.record.stats;
    return {
      ...base,
      stats: { ...base.stats, totalMessages, totalTokens },
      ...(sourceLive.record.metrics ? { metrics: sourceLive.record.metrics } : {}),
    };
  }
  const events = await readActiveEvents(store, source, { path: kept });
  return liveSessionOf(sessionId, base, events).record;
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
