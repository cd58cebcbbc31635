import type { StreamEvent, UnsequencedEvent } from '../../conversation/index.js';
import { isParleyError } from '../../conversation/index.js';
import { sameJson } from '../canonical-json.js';
import type { AgentDescription, Checkpoint, CheckpointInput, ContextDocument, SessionRecord } from './records.js';
import type { SessionStore } from './session-store.js';

/**
 * How one session fared:
 * - `copied`: the target had none of it; all of it was written;
 * - `continued`: the target held an earlier state of it (a prefix of the log, fewer checkpoints, an
 *   older record: an interrupted run, or a source that moved on); the rest was written;
 * - `unchanged`: the target already held all of it;
 * - `conflict`: the target holds something the source does not (other or more events, another
 *   checkpoint, a newer record); nothing of the session was written;
 * - `failed`: the source could not be read, or the target refused or misnumbered a write; what was
 *   written before is a prefix that the next run continues from.
 */
export type SessionMigrationStatus = 'copied' | 'continued' | 'unchanged' | 'conflict' | 'failed';

/** What this run wrote to the target for one session. */
export interface SessionWrites {
  record: boolean;
  events: number;
  checkpoints: number;
  context: boolean;
  agentDescription: boolean;
  transcripts: number;
}

export interface SessionCopy {
  sessionId: string;
  status: SessionMigrationStatus;
  written: SessionWrites;
  /** Why a `conflict` or `failed` session was not (wholly) copied. */
  reason?: string;
}

export interface SessionCopyOptions {
  /** Events per append; each append is durable, so an interrupted copy continues after the last one. */
  batchSize: number;
}

/** Store errors that concern one session's data; others (a lost connection, a full disk) stop the whole run. */
const SESSION_ERROR_CODES = new Set([
  'CORRUPT_FILE',
  'UNSUPPORTED_FORMAT_VERSION',
  'INVALID_ID',
  'INVALID_INPUT',
  'SESSION_NOT_FOUND',
  'SESSION_EXISTS',
]);

/** The source's session cannot be copied as it is, or the target did not number a write as the source did. */
class SessionNotCopied extends Error {}

/**
 * Copies one session from `from` to `to`, or continues an earlier copy. Nothing of the session is
 * written unless everything the target already holds is an earlier state of the source's (checked
 * first, before any write), so a conflict leaves the target as it was.
 */
export async function copySession(
  from: SessionStore,
  to: SessionStore,
  record: SessionRecord,
  options: SessionCopyOptions,
): Promise<SessionCopy> {
  const sessionId = record.sessionId;
  const written: SessionWrites = {
    record: false,
    events: 0,
    checkpoints: 0,
    context: false,
    agentDescription: false,
    transcripts: 0,
  };
  let fresh = false;
  try {
    const plan = await planSession(from, to, record);
    if (plan.conflict !== undefined) return { sessionId, status: 'conflict', written, reason: plan.conflict };

    if (plan.target === undefined) {
      await to.createSession(record);
      written.record = true;
      fresh = true;
    }
    written.events = await copyLog(from, to, sessionId, plan.targetLastSeq, options.batchSize);
    for (const checkpoint of plan.checkpointsToWrite) {
      const stored = await to.writeCheckpoint(sessionId, checkpointInput(checkpoint));
      if (stored.version !== checkpoint.version) {
        throw new SessionNotCopied(
          `the target stored checkpoint version ${checkpoint.version} as version ${stored.version}: something else writes checkpoints of this session in the target; stop it and run the migration again`,
        );
      }
      written.checkpoints += 1;
    }
    if (plan.context !== undefined) {
      await to.writeContext(plan.context);
      written.context = true;
    }
    if (plan.agentDescription !== undefined) {
      await to.writeAgentDescription(plan.agentDescription);
      written.agentDescription = true;
    }
    for (const [name, content] of plan.transcriptsToWrite) {
      await to.writeTranscript(sessionId, name, content);
      written.transcripts += 1;
    }
    // The record goes last: an interrupted run leaves the target's older record, which the next run may still replace.
    if (plan.target !== undefined && !sameJson(plan.target, record)) {
      await to.updateSession(sessionId, () => record);
      written.record = true;
    }
  } catch (error) {
    if (error instanceof SessionNotCopied || (isParleyError(error) && SESSION_ERROR_CODES.has(error.code))) {
      return { sessionId, status: 'failed', written, reason: error.message };
    }
    throw error;
  }
  const wroteSomething =
    written.record ||
    written.events > 0 ||
    written.checkpoints > 0 ||
    written.context ||
    written.agentDescription ||
    written.transcripts > 0;
  const status = fresh ? 'copied' : wroteSomething ? 'continued' : 'unchanged';
  return { sessionId, status, written };
}

interface SessionPlan {
  /** The target's record, when the target has the session. */
  target?: SessionRecord;
  conflict?: string;
  targetLastSeq: number;
  checkpointsToWrite: Checkpoint[];
  context?: ContextDocument;
  agentDescription?: AgentDescription;
  transcriptsToWrite: Array<[string, string]>;
}

/** Compares what the target holds of the session with the source's, before anything is written. */
async function planSession(from: SessionStore, to: SessionStore, record: SessionRecord): Promise<SessionPlan> {
  const sessionId = record.sessionId;
  const target = await to.getSession(sessionId);
  const conflict = (reason: string): SessionPlan => ({
    target,
    conflict: reason,
    targetLastSeq: -1,
    checkpointsToWrite: [],
    transcriptsToWrite: [],
  });

  if (target !== undefined && !sameJson(target, record) && !(target.updatedAt < record.updatedAt)) {
    return conflict(
      `the target's session record differs from the source's and is not older (updatedAt ${target.updatedAt} in the target, ${record.updatedAt} in the source)`,
    );
  }

  const targetLastSeq = target === undefined ? -1 : await to.lastSeq(sessionId);
  if (targetLastSeq >= 0) {
    const logConflict = await compareLogPrefix(from, to, sessionId, targetLastSeq);
    if (logConflict !== undefined) return conflict(logConflict);
  }

  const sourceCheckpoints = await from.listCheckpoints(sessionId);
  const gap = sourceCheckpoints.findIndex((checkpoint, index) => checkpoint.version !== index + 1);
  if (gap !== -1) {
    throw new SessionNotCopied(
      `its checkpoint versions are not 1, 2, 3…: version ${sourceCheckpoints[gap]!.version} comes where ${gap + 1} was expected, and a store numbers new versions itself; restore the missing version from a backup`,
    );
  }
  const targetCheckpoints = target === undefined ? [] : await to.listCheckpoints(sessionId);
  if (targetCheckpoints.length > sourceCheckpoints.length) {
    return conflict(
      `the target has ${targetCheckpoints.length} checkpoint versions, the source only ${sourceCheckpoints.length}`,
    );
  }
  const differentCheckpoint = targetCheckpoints.find(
    (checkpoint, index) => !sameJson(checkpoint, sourceCheckpoints[index]),
  );
  if (differentCheckpoint !== undefined)
    return conflict(`checkpoint version ${differentCheckpoint.version} differs between the source and the target`);

  const context = await newerPart(
    'context document',
    await from.readContext(sessionId),
    target === undefined ? undefined : await to.readContext(sessionId),
    (document) => document.updatedAt,
  );
  if (typeof context === 'string') return conflict(context);
  const agentDescription = await newerPart(
    'agent description',
    await from.readAgentDescription(sessionId),
    target === undefined ? undefined : await to.readAgentDescription(sessionId),
    (description) => description.createdAt,
  );
  if (typeof agentDescription === 'string') return conflict(agentDescription);

  const transcriptsToWrite: Array<[string, string]> = [];
  const sourceNames = new Set(await from.listTranscripts(sessionId));
  const targetNames = new Set(target === undefined ? [] : await to.listTranscripts(sessionId));
  const extra = [...targetNames].filter((name) => !sourceNames.has(name));
  if (extra.length > 0) return conflict(`the target has transcripts the source does not: ${extra.join(', ')}`);
  for (const name of [...sourceNames].sort()) {
    const content = (await from.readTranscript(sessionId, name)) ?? '';
    const existing = targetNames.has(name) ? await to.readTranscript(sessionId, name) : undefined;
    if (existing === content) continue;
    // Native transcripts grow at their end: a target copy that is a beginning of the source's is an earlier state.
    if (existing !== undefined && !content.startsWith(existing))
      return conflict(`transcript "${name}" differs between the source and the target`);
    transcriptsToWrite.push([name, content]);
  }

  return {
    ...(target === undefined ? {} : { target }),
    targetLastSeq,
    checkpointsToWrite: sourceCheckpoints.slice(targetCheckpoints.length),
    ...(context === undefined ? {} : { context }),
    ...(agentDescription === undefined ? {} : { agentDescription }),
    transcriptsToWrite,
  };
}

/**
 * The source's part when the target lacks it or holds an older one; undefined when there is nothing
 * to write; a sentence when the target's part is not an earlier state of the source's.
 */
async function newerPart<Part>(
  what: string,
  source: Part | undefined,
  target: Part | undefined,
  time: (part: Part) => string,
): Promise<Part | string | undefined> {
  if (target === undefined) return source;
  if (sameJson(source, target)) return undefined;
  if (source === undefined) return `the target has a ${what} and the source has none`;
  if (Date.parse(time(target)) < Date.parse(time(source))) return source;
  return `the target's ${what} differs from the source's and is not older (${time(target)} in the target, ${time(source)} in the source)`;
}

/** Undefined when the target's log (through `targetLastSeq`) equals the beginning of the source's, event by event. */
async function compareLogPrefix(
  from: SessionStore,
  to: SessionStore,
  sessionId: string,
  targetLastSeq: number,
): Promise<string | undefined> {
  const sourceLastSeq = await from.lastSeq(sessionId);
  if (targetLastSeq > sourceLastSeq) {
    return `the target's log has ${targetLastSeq + 1} events, more than the source's ${sourceLastSeq + 1}`;
  }
  const source = from.readLog(sessionId, { throughSeq: targetLastSeq })[Symbol.asyncIterator]();
  try {
    for await (const event of to.readLog(sessionId, { throughSeq: targetLastSeq })) {
      const next = await source.next();
      if (next.done === true) return `the target's log has event ${event.seq}, which the source's lacks`;
      if (!sameJson(next.value, event)) return `event ${event.seq} differs between the source's log and the target's`;
    }
  } finally {
    await source.return?.();
  }
  return undefined;
}

/** Appends the source's events after `targetLastSeq`, in batches, checking that the target numbers them as the source did. */
async function copyLog(
  from: SessionStore,
  to: SessionStore,
  sessionId: string,
  targetLastSeq: number,
  batchSize: number,
): Promise<number> {
  let nextSeq = targetLastSeq + 1;
  let batch: UnsequencedEvent[] = [];
  let copied = 0;
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    const stored = await to.append(sessionId, batch);
    const first = stored[0]?.seq;
    const last = stored.at(-1)?.seq;
    if (stored.length !== batch.length || first !== nextSeq || last !== nextSeq + batch.length - 1) {
      throw new SessionNotCopied(
        `the target numbered events ${nextSeq}–${nextSeq + batch.length - 1} as ${String(first)}–${String(last)}: something else appends to this session in the target; stop it, then compare the two copies`,
      );
    }
    nextSeq += batch.length;
    copied += batch.length;
    batch = [];
  };
  for await (const event of from.readLog(sessionId, { afterSeq: targetLastSeq })) {
    if (event.seq !== nextSeq + batch.length) {
      throw new SessionNotCopied(
        `its log skips from seq ${nextSeq + batch.length - 1} to ${event.seq}, and a store numbers events itself`,
      );
    }
    batch.push(draftOf(event));
    if (batch.length >= batchSize) await flush();
  }
  await flush();
  return copied;
}

/** The event as the target's `append` takes it: without the numbering the target gives it (`at` is kept). */
function draftOf(event: StreamEvent): UnsequencedEvent {
  const { sessionId: _sessionId, seq: _seq, ...draft } = event;
  return draft as UnsequencedEvent;
}

function checkpointInput(checkpoint: Checkpoint): CheckpointInput {
  const { formatVersion: _formatVersion, sessionId: _sessionId, version: _version, ...input } = checkpoint;
  return input;
}
