import { createHash } from 'node:crypto';
import { canonicalJson } from '../canonical-json.js';
import type { SessionStore } from './session-store.js';

/**
 * What `parley migrate` compares between the two copies of a session: counts, and SHA-256 hashes of
 * the canonical JSON (keys sorted, see canonical-json.ts) of each part, so two stores that return
 * the same data with keys in another order hash equal.
 */
export interface SessionDigest {
  sessionId: string;
  /** Events in the log. */
  events: number;
  /** The newest `seq`, -1 when the log is empty. */
  lastSeq: number;
  /** SHA-256 over each event's canonical JSON and a newline, in `seq` order. */
  eventsSha256: string;
  checkpoints: number;
  /** SHA-256 over each checkpoint version's canonical JSON and a newline, oldest first. */
  checkpointsSha256: string;
  transcripts: number;
  /** SHA-256 over each transcript's name, its length and its content, by name. */
  transcriptsSha256: string;
  /** SHA-256 of the canonical JSON of the session record, context document and agent description. */
  recordSha256: string;
}

export async function digestSession(store: SessionStore, sessionId: string): Promise<SessionDigest> {
  const events = createHash('sha256');
  let count = 0;
  let lastSeq = -1;
  for await (const event of store.readLog(sessionId)) {
    events.update(canonicalJson(event)).update('\n');
    count += 1;
    lastSeq = event.seq;
  }

  const checkpointList = await store.listCheckpoints(sessionId);
  const checkpoints = createHash('sha256');
  for (const checkpoint of checkpointList) checkpoints.update(canonicalJson(checkpoint)).update('\n');

  const names = (await store.listTranscripts(sessionId)).sort();
  const transcripts = createHash('sha256');
  for (const name of names) {
    const content = (await store.readTranscript(sessionId, name)) ?? '';
    // Name and length first, so moving text from one transcript to the next changes the hash.
    transcripts.update(`${JSON.stringify(name)} ${Buffer.byteLength(content)}\n`).update(content);
  }

  const [record, context, agentDescription] = await Promise.all([
    store.getSession(sessionId),
    store.readContext(sessionId),
    store.readAgentDescription(sessionId),
  ]);
  const recordHash = createHash('sha256').update(canonicalJson({ record, context, agentDescription }));

  return {
    sessionId,
    events: count,
    lastSeq,
    eventsSha256: events.digest('hex'),
    checkpoints: checkpointList.length,
    checkpointsSha256: checkpoints.digest('hex'),
    transcripts: names.length,
    transcriptsSha256: transcripts.digest('hex'),
    recordSha256: recordHash.digest('hex'),
  };
}

/** The parts in which two digests of one session differ, in words; empty when they match. */
export function digestDifferences(source: SessionDigest, target: SessionDigest): string[] {
  const differences: string[] = [];
  if (source.events !== target.events || source.lastSeq !== target.lastSeq) {
    differences.push(
      `events: ${source.events} in the source (last seq ${source.lastSeq}), ${target.events} in the target (last seq ${target.lastSeq})`,
    );
  } else if (source.eventsSha256 !== target.eventsSha256) {
    differences.push('events: same count, different content (SHA-256 differs)');
  }
  if (source.checkpoints !== target.checkpoints)
    differences.push(`checkpoints: ${source.checkpoints} in the source, ${target.checkpoints} in the target`);
  else if (source.checkpointsSha256 !== target.checkpointsSha256)
    differences.push('checkpoints: same count, different content');
  if (source.transcripts !== target.transcripts)
    differences.push(`transcripts: ${source.transcripts} in the source, ${target.transcripts} in the target`);
  else if (source.transcriptsSha256 !== target.transcriptsSha256) differences.push('transcripts: different content');
  if (source.recordSha256 !== target.recordSha256)
    differences.push('session record, context document or agent description differ');
  return differences;
}
