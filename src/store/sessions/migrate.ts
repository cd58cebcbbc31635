import { sameJson } from '../canonical-json.js';
import { copySession, type SessionCopy } from './migrate-session.js';
import type { Feature, FeatureTask } from './records.js';
import { digestDifferences, digestSession, type SessionDigest } from './digest.js';
import type { SessionStore } from './session-store.js';

export type { SessionCopy, SessionMigrationStatus, SessionWrites } from './migrate-session.js';
export type { SessionDigest } from './digest.js';

/** Options of `migrateStore`: the batch size and progress callbacks. */
export interface MigrateStoreOptions {
  /** Events per append (default 500). Each append is durable, so an interrupted run continues after the last one. */
  batchSize?: number;
  /** Called after each session is copied and verified. */
  onSession?: (migration: SessionMigration, index: number, total: number) => void;
}

/** One session's copy and its check: both stores' digests, and where they differ. */
export interface SessionMigration extends SessionCopy {
  /** Absent for a `conflict` (the target's copy was left as it was). */
  verification?: {
    source: SessionDigest;
    target: SessionDigest;
    /** Empty when the two copies match. */
    differences: string[];
  };
}

/** A feature or task record (the SessionStore's own, seed 002's feature.json and task.json). */
export interface RecordMigration {
  kind: 'feature' | 'task';
  /** `featureId`, or `featureId/taskId`. */
  id: string;
  status: 'copied' | 'updated' | 'unchanged' | 'conflict';
  reason?: string;
  /** False when the target's record does not equal the source's after the run. */
  verified: boolean;
}

/** What a store migration did: each session and record copied and verified, and what only the target holds. */
export interface MigrationReport {
  sessions: SessionMigration[];
  records: RecordMigration[];
  /** Sessions the target holds that the source does not: left alone. */
  targetOnlySessions: string[];
  /** True when nothing was written to the target. */
  nothingCopied: boolean;
  /** True when every session and record was copied (or already there) and verified equal. */
  ok: boolean;
}

/**
 * Copies everything a SessionStore holds from `from` into `to`: session records, every log with the
 * same `seq`s, every checkpoint version with the same version numbers, context documents, agent
 * descriptions, native transcripts, features and tasks. Store-agnostic: either side may be any
 * SessionStore (file, PostgreSQL, memory).
 *
 * Idempotent and resumable: what the target already holds of a session is checked against the
 * source first, and only the rest is written; a session whose target copy is not an earlier state of
 * the source's is a conflict and is left unchanged, never overwritten. Every session is then
 * verified: event count, last `seq`, and SHA-256 hashes of its events, checkpoints, transcripts and
 * records in both stores (see digest.ts).
 *
 * The source should not be written to meanwhile (stop the servers using it): a session that grows
 * during the run fails its verification, and the next run copies the rest.
 */
export async function migrateStore(
  from: SessionStore,
  to: SessionStore,
  options: MigrateStoreOptions = {},
): Promise<MigrationReport> {
  const batchSize = options.batchSize ?? 500;
  const sourceRecords = await collect(from.listSessions());
  sourceRecords.sort((left, right) => compareText(left.sessionId, right.sessionId));

  const sessions: SessionMigration[] = [];
  for (const [index, record] of sourceRecords.entries()) {
    const copy = await copySession(from, to, record, { batchSize });
    const migration: SessionMigration =
      copy.status === 'conflict' ? copy : { ...copy, verification: await verifySession(from, to, record.sessionId) };
    sessions.push(migration);
    options.onSession?.(migration, index, sourceRecords.length);
  }

  const records = [
    ...(await copyRecords<Feature>(
      'feature',
      await from.listFeatures(),
      (feature) => feature.featureId,
      (feature) => to.getFeature(feature.featureId),
      (feature) => to.putFeature(feature),
    )),
    ...(await copyRecords<FeatureTask>(
      'task',
      await from.listFeatureTasks(),
      (task) => `${task.featureId}/${task.taskId}`,
      (task) => to.getFeatureTask(task.featureId, task.taskId),
      (task) => to.putFeatureTask(task),
    )),
  ];

  const sourceIds = new Set(sourceRecords.map((record) => record.sessionId));
  const targetOnlySessions = (await collect(to.listSessions()))
    .map((record) => record.sessionId)
    .filter((sessionId) => !sourceIds.has(sessionId))
    .sort(compareText);

  const nothingCopied =
    sessions.every((session) => !wroteAnything(session)) &&
    records.every((record) => record.status === 'unchanged' || record.status === 'conflict');
  const ok =
    sessions.every(
      (session) =>
        session.status !== 'conflict' && session.status !== 'failed' && session.verification?.differences.length === 0,
    ) && records.every((record) => record.status !== 'conflict' && record.verified);
  return { sessions, records, targetOnlySessions, nothingCopied, ok };
}

async function verifySession(
  from: SessionStore,
  to: SessionStore,
  sessionId: string,
): Promise<NonNullable<SessionMigration['verification']>> {
  const target = await to.getSession(sessionId);
  const source = await digestSession(from, sessionId);
  if (target === undefined) {
    // A failed copy may have stopped before the session was created.
    const empty = {
      ...source,
      events: 0,
      lastSeq: -1,
      eventsSha256: '',
      checkpoints: 0,
      checkpointsSha256: '',
      transcripts: 0,
      transcriptsSha256: '',
      recordSha256: '',
    };
    return { source, target: empty, differences: ['the target has no such session'] };
  }
  const copy = await digestSession(to, sessionId);
  return { source, target: copy, differences: digestDifferences(source, copy) };
}

/** Features and tasks: copied when missing, replaced when the target's is older, a conflict otherwise. */
async function copyRecords<Item extends { updatedAt: string }>(
  kind: RecordMigration['kind'],
  items: Item[],
  idOf: (item: Item) => string,
  read: (item: Item) => Promise<Item | undefined>,
  write: (item: Item) => Promise<void>,
): Promise<RecordMigration[]> {
  const results: RecordMigration[] = [];
  for (const item of [...items].sort((left, right) => compareText(idOf(left), idOf(right)))) {
    const id = idOf(item);
    const existing = await read(item);
    let status: RecordMigration['status'];
    let reason: string | undefined;
    if (existing === undefined) status = 'copied';
    else if (sameJson(existing, item)) status = 'unchanged';
    else if (Date.parse(existing.updatedAt) < Date.parse(item.updatedAt)) status = 'updated';
    else {
      status = 'conflict';
      reason = `the target's ${kind} differs from the source's and is not older (updatedAt ${existing.updatedAt} in the target, ${item.updatedAt} in the source)`;
    }
    if (status === 'copied' || status === 'updated') await write(item);
    const verified = status === 'conflict' ? false : sameJson(await read(item), item);
    results.push({ kind, id, status, verified, ...(reason === undefined ? {} : { reason }) });
  }
  return results;
}

function wroteAnything(session: SessionMigration): boolean {
  const written = session.written;
  return (
    written.record ||
    written.events > 0 ||
    written.checkpoints > 0 ||
    written.context ||
    written.agentDescription ||
    written.transcripts > 0
  );
}

async function collect<Item>(items: AsyncIterable<Item>): Promise<Item[]> {
  const result: Item[] = [];
  for await (const item of items) result.push(item);
  return result;
}

/** Code-point order, the same on every machine (no locale). */
function compareText(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}

export { digestDifferences, digestSession } from './digest.js';
