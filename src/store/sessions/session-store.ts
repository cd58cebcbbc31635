import type { StreamEvent, UnsequencedEvent } from '../../conversation/index.js';
import type {
  AgentDescription,
  Checkpoint,
  CheckpointInput,
  ContextDocument,
  Feature,
  SessionFilter,
  SessionRecord,
  FeatureTask,
} from './records.js';
import type { SessionPage, SessionPageQuery } from './session-page.js';
import type { SessionSearchQuery, SessionSearchResult } from './session-search.js';

/** Options of reading a session's log: from which `seq`, and how many events. */
export interface ReadLogOptions {
  /** Only events with `seq` greater than this. */
  afterSeq?: number;
  /** Only events with `seq` at or below this. */
  throughSeq?: number;
}

/**
 * A change to a session made through another store instance (another process, another server),
 * as `SessionStore.watch` reports it.
 * - `appended`: events from `firstSeq` on were appended (read them with `readLog({ afterSeq })`);
 * - `updated`: the session's record was replaced;
 * - `unknown`: reports may have been lost (the watch reconnected): any session may have changed.
 */
export type StoreChange =
  | { kind: 'appended'; sessionId: string; firstSeq: number }
  | { kind: 'updated'; sessionId: string }
  | { kind: 'unknown' };

/** A transcript of a session being created (`createSessionWithTranscripts`): its text, or a file to copy verbatim. */
export type NewTranscript = { name: string; content: string } | { name: string; sourcePath: string };

/**
 * Where sessions live. Implementations: the file store (default) and the memory store; every
 * implementation passes the shared conformance suite in `test/store/sessions/conformance.ts`.
 *
 * Every implementer must:
 * - validate ids with `IdSchema` and refuse anything else with `INVALID_ID` (no path may leave the data folder);
 * - throw `SESSION_NOT_FOUND` for an unknown session id, naming it;
 * - never hand out or keep references to a caller's objects (clone on read and write); the one
 *   exception is `append`'s result: its events may share nested values with the drafts passed in
 *   (the file store returns the objects it serialized rather than a copy), so callers treat both
 *   drafts and appended events as immutable, as they do every event;
 * - resolve `append` only once the events are durable, numbering them with consecutive `seq`s
 *   that only grow within a session; appends to one session are applied in call order;
 * - keep every checkpoint version; a checkpoint is never overwritten;
 * - after `close()`, reject every call with `STORE_CLOSED`.
 */
export interface SessionStore {
  readonly kind: string;

  /** Creates a session; `SESSION_EXISTS` if the id is taken. */
  createSession(record: SessionRecord): Promise<SessionRecord>;
  /** The session's metadata, or undefined when there is none. */
  getSession(sessionId: string): Promise<SessionRecord | undefined>;
  /** Replaces the metadata with `update(current)`; updates to one session are serialized. */
  updateSession(sessionId: string, update: (current: SessionRecord) => SessionRecord): Promise<SessionRecord>;
  /** Every session matching the filter, in no particular order. */
  listSessions(filter?: SessionFilter): AsyncIterable<SessionRecord>;
  /**
   * Optional: one page of the sessions matching the filter, pinned first, then the most recently
   * active (see session-page.ts for the order and the cursor). Implementers serve it from an index,
   * never by reading every record, and must never repeat a session across the pages of one
   * listing, nor skip one that did not change meanwhile. A store without it is listed whole.
   */
  listSessionPage?(query: SessionPageQuery): Promise<SessionPage>;
  /**
   * Optional: the messages holding every word of the query, newest first, from an index kept as
   * events are appended (see session-search.ts for words and messages). Bad input (an empty or
   * over-long query) is refused with `INVALID_INPUT`; a query with no words finds nothing. The log
   * stays the truth: an index that fails to update never fails an append, and is rebuilt from the logs.
   */
  searchSessions?(query: SessionSearchQuery): Promise<SessionSearchResult>;

  /** Appends events to the session's log; resolves with them numbered, once durable. */
  append(sessionId: string, events: readonly UnsequencedEvent[]): Promise<StreamEvent[]>;
  /** The session's log in `seq` order. */
  readLog(sessionId: string, options?: ReadLogOptions): AsyncIterable<StreamEvent>;
  /** The newest `seq` in the log, -1 when it is empty. */
  lastSeq(sessionId: string): Promise<number>;

  /** Writes a new checkpoint version (one more than the newest) and returns it. */
  writeCheckpoint(sessionId: string, checkpoint: CheckpointInput): Promise<Checkpoint>;
  /** The newest checkpoint, or the given version; undefined when there is none. */
  readCheckpoint(sessionId: string, version?: number): Promise<Checkpoint | undefined>;
  /** Every checkpoint version, oldest first. */
  listCheckpoints(sessionId: string): Promise<Checkpoint[]>;

  writeContext(document: ContextDocument): Promise<void>;
  readContext(sessionId: string): Promise<ContextDocument | undefined>;
  writeAgentDescription(description: AgentDescription): Promise<void>;
  readAgentDescription(sessionId: string): Promise<AgentDescription | undefined>;

  /** Raw native transcripts (seed 004's saved data), kept verbatim under a name. */
  writeTranscript(sessionId: string, name: string, content: string): Promise<void>;
  readTranscript(sessionId: string, name: string): Promise<string | undefined>;
  listTranscripts(sessionId: string): Promise<string[]>;
  /**
   * Optional: creates a session whole, with its first transcripts, in one atomic step: readers see
   * the session with all of them or not at all (the file store builds its folder in `tmp/` and
   * renames it once). A transcript is given as text, or as the path of a file copied verbatim
   * without passing through memory (a store on a file system lets the kernel copy it). Resolves
   * once everything is durable, with each copied file's size (it may have grown since the caller
   * read it). Refuses an existing session with `SESSION_EXISTS`, as `createSession` does. A store
   * without it creates the session, then writes each transcript (`writeTranscript`).
   */
  createSessionWithTranscripts?(
    record: SessionRecord,
    transcripts: readonly NewTranscript[],
  ): Promise<{ session: SessionRecord; copiedBytes: Record<string, number> }>;
  /** Optional: a transcript read in chunks, so a large one is never held whole; undefined when there is none. */
  streamTranscript?(sessionId: string, name: string): Promise<AsyncIterable<Uint8Array> | undefined>;

  putFeature(feature: Feature): Promise<void>;
  getFeature(featureId: string): Promise<Feature | undefined>;
  listFeatures(): Promise<Feature[]>;
  putFeatureTask(task: FeatureTask): Promise<void>;
  getFeatureTask(featureId: string, taskId: string): Promise<FeatureTask | undefined>;
  listFeatureTasks(featureId?: string): Promise<FeatureTask[]>;

  /**
   * Optional: reports changes that other store instances (other processes sharing the database)
   * make, so a process can show them live. A store that only one process may open (the file
   * store) has no such changes and leaves this out. Implementers must:
   * - report each change after it is durable, never before; reports are wake-ups, not data: the
   *   log and the records stay the truth, and a reader reads them after each report;
   * - not report changes made through this same instance (its caller made them);
   * - report `unknown` whenever reports may have been lost (a dropped connection, once it is back);
   * - stop calling `onChange` once the returned function is called, and at `close()`.
   */
  watch?(onChange: (change: StoreChange) => void): () => void;

  /** Releases the data folder (the lock) after pending writes are durable. */
  close(): Promise<void>;
}
