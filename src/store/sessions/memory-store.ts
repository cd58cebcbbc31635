import type { StreamEvent, UnsequencedEvent } from '../../conversation/index.js';
import { firstSeqOf, numberEvents, inWindow } from './numbering.js';
import {
  AgentDescriptionSchema,
  CheckpointSchema,
  ContextDocumentSchema,
  FeatureSchema,
  matchesFilter,
  SessionRecordSchema,
  FeatureTaskSchema,
  type AgentDescription,
  type Checkpoint,
  type CheckpointInput,
  type ContextDocument,
  type Feature,
  type SessionFilter,
  type SessionRecord,
  type FeatureTask,
} from './records.js';
import { FORMAT_VERSION } from '../record-format.js';
import type { ReadLogOptions, SessionStore } from './session-store.js';
import { StoreError } from '../errors.js';
import { checkId, checkRecord, sessionNotFound, storeClosed } from '../validate.js';
import { ValidationError } from '../../conversation/index.js';
import { pageOf } from './session-page.js';
import { messageOf, queryTerms, snippetOf, termsOf, type SessionSearchHit } from './session-search.js';

interface SessionEntry {
  record: SessionRecord;
  /** The seq of the log's first event: 0, or one past the fork point of a fork (which shares the history before it). */
  firstSeq: number;
  log: StreamEvent[];
  checkpoints: Checkpoint[];
  context?: ContextDocument;
  agentDescription?: AgentDescription;
  transcripts: Map<string, string>;
}

/**
 * The reference store: everything in memory, cloned on every read and write so that a caller
 * who mutates what it passed or got back cannot change the store (aliasing bugs show here first).
 * Used by tests and by anything that needs no persistence.
 */
export function createMemoryStore(): SessionStore {
  const sessions = new Map<string, SessionEntry>();
  const features = new Map<string, Feature>();
  const tasks = new Map<string, FeatureTask>();
  let closed = false;
  /** The order events were appended in, across sessions: search lists the newest messages first. */
  const appendOrder = new WeakMap<StreamEvent, number>();
  let appended = 0;

  function open(): void {
    if (closed) throw storeClosed('memory');
  }
  function entryOf(sessionId: string): SessionEntry {
    open();
    const id = checkId(sessionId, 'session id');
    const entry = sessions.get(id);
    if (entry === undefined) throw sessionNotFound(id);
    return entry;
  }

  return {
    kind: 'memory',

    async createSession(record) {
      open();
      checkId(record?.sessionId, 'session id');
      const stored = checkRecord(SessionRecordSchema, record, 'session record');
      if (sessions.has(stored.sessionId)) {
        throw new StoreError(
          'SESSION_EXISTS',
          `A session "${stored.sessionId}" already exists; pick another id or load that one.`,
          {
            fault: 'user',
            data: { sessionId: stored.sessionId },
          },
        );
      }
      sessions.set(stored.sessionId, {
        record: stored,
        firstSeq: firstSeqOf(stored),
        log: [],
        checkpoints: [],
        transcripts: new Map(),
      });
      return structuredClone(stored);
    },

    async getSession(sessionId) {
      open();
      const entry = sessions.get(checkId(sessionId, 'session id'));
      return entry === undefined ? undefined : structuredClone(entry.record);
    },

    async updateSession(sessionId, update) {
      const entry = entryOf(sessionId);
      const next = checkRecord(SessionRecordSchema, update(structuredClone(entry.record)), 'session record');
      if (next.sessionId !== entry.record.sessionId) {
        throw new ValidationError(
          `An update of session "${entry.record.sessionId}" may not change its id (got "${next.sessionId}").`,
          { data: { sessionId: entry.record.sessionId, newSessionId: next.sessionId } },
        );
      }
      entry.record = next;
      return structuredClone(next);
    },

    async *listSessions(filter?: SessionFilter) {
      open();
      const records = [...sessions.values()]
        .map((entry) => entry.record)
        .filter((record) => matchesFilter(record, filter));
      for (const record of records) yield structuredClone(record);
    },

    async listSessionPage(query) {
      open();
      const page = pageOf(
        [...sessions.values()].map((entry) => entry.record),
        query ?? {},
        (record) => matchesFilter(record, query?.filter),
      );
      return structuredClone(page);
    },

    // The reference store reads every message: it holds few sessions, and the indexed stores are checked against it.
    async searchSessions(query) {
      open();
      const { terms, limit } = queryTerms(query);
      const hits: Array<SessionSearchHit & { order: number }> = [];
      for (const entry of sessions.values()) {
        for (const event of entry.log) {
          const message = messageOf(event);
          if (message === undefined) continue;
          const words = new Set(termsOf(message.text));
          if (terms.length === 0 || !terms.every((term) => words.has(term))) continue;
          const { text, ...rest } = message;
          hits.push({
            sessionId: event.sessionId,
            seq: event.seq,
            ...rest,
            snippet: snippetOf(text, terms),
            order: appendOrder.get(event) ?? 0,
          });
        }
      }
      hits.sort((a, b) => b.order - a.order);
      return { hits: hits.slice(0, limit).map(({ order: _order, ...hit }) => hit), terms };
    },

    async append(sessionId: string, drafts: readonly UnsequencedEvent[]) {
      const entry = entryOf(sessionId);
      const events = numberEvents(entry.record.sessionId, entry.firstSeq + entry.log.length, drafts);
      for (const event of events) appendOrder.set(event, ++appended);
      entry.log.push(...events);
      return structuredClone(events);
    },

    async *readLog(sessionId: string, options: ReadLogOptions = {}) {
      const entry = entryOf(sessionId);
      // Event `seq` is its index in the log past `firstSeq`, so a window is a slice: reading the
      // events after the last user message each turn must not cost the whole history.
      const from = Math.max(0, options.afterSeq === undefined ? 0 : Math.floor(options.afterSeq) + 1 - entry.firstSeq);
      const events = entry.log.slice(from).filter((event) => inWindow(event.seq, options.afterSeq, options.throughSeq));
      for (const event of events) yield structuredClone(event);
    },

    async lastSeq(sessionId) {
      const entry = entryOf(sessionId);
      return entry.firstSeq + entry.log.length - 1;
    },

    async writeCheckpoint(sessionId: string, input: CheckpointInput) {
      const entry = entryOf(sessionId);
      const checkpoint = checkRecord(
        CheckpointSchema,
        {
          ...input,
          formatVersion: FORMAT_VERSION,
          sessionId: entry.record.sessionId,
          version: entry.checkpoints.length + 1,
        },
        'checkpoint',
      );
      entry.checkpoints.push(checkpoint);
      return structuredClone(checkpoint);
    },

    async readCheckpoint(sessionId, version) {
      const entry = entryOf(sessionId);
      const checkpoint =
        version === undefined ? entry.checkpoints.at(-1) : entry.checkpoints.find((each) => each.version === version);
      return checkpoint === undefined ? undefined : structuredClone(checkpoint);
    },

    async listCheckpoints(sessionId) {
      return structuredClone(entryOf(sessionId).checkpoints);
    },

    async writeContext(document) {
      const entry = entryOf(document?.sessionId);
      entry.context = checkRecord(ContextDocumentSchema, document, 'context document');
    },

    async readContext(sessionId) {
      const context = entryOf(sessionId).context;
      return context === undefined ? undefined : structuredClone(context);
    },

    async writeAgentDescription(description) {
      const entry = entryOf(description?.sessionId);
      entry.agentDescription = checkRecord(AgentDescriptionSchema, description, 'agent description');
    },

    async readAgentDescription(sessionId) {
      const description = entryOf(sessionId).agentDescription;
      return description === undefined ? undefined : structuredClone(description);
    },

    async writeTranscript(sessionId, name, content) {
      const entry = entryOf(sessionId);
      entry.transcripts.set(checkId(name, 'transcript name'), String(content));
    },

    async readTranscript(sessionId, name) {
      const entry = entryOf(sessionId);
      return entry.transcripts.get(checkId(name, 'transcript name'));
    },

    async listTranscripts(sessionId) {
      return [...entryOf(sessionId).transcripts.keys()].sort();
    },

    async putFeature(feature) {
      open();
      const stored = checkRecord(FeatureSchema, feature, 'feature');
      features.set(stored.featureId, stored);
    },

    async getFeature(featureId) {
      open();
      const feature = features.get(checkId(featureId, 'feature id'));
      return feature === undefined ? undefined : structuredClone(feature);
    },

    async listFeatures() {
      open();
      return [...features.values()]
        .sort((a, b) => compare(a.featureId, b.featureId))
        .map((feature) => structuredClone(feature));
    },

    async putFeatureTask(task) {
      open();
      const stored = checkRecord(FeatureTaskSchema, task, 'task');
      tasks.set(taskKey(stored.featureId, stored.taskId), stored);
    },

    async getFeatureTask(featureId, taskId) {
      open();
      const task = tasks.get(taskKey(checkId(featureId, 'feature id'), checkId(taskId, 'task id')));
      return task === undefined ? undefined : structuredClone(task);
    },

    async listFeatureTasks(featureId) {
      open();
      const wanted = featureId === undefined ? undefined : checkId(featureId, 'feature id');
      return [...tasks.values()]
        .filter((task) => wanted === undefined || task.featureId === wanted)
        .sort((a, b) => compare(taskKey(a.featureId, a.taskId), taskKey(b.featureId, b.taskId)))
        .map((task) => structuredClone(task));
    },

    async close() {
      closed = true;
    },
  };
}

// Ids cannot contain "/", so this key is unambiguous.
function taskKey(featureId: string, taskId: string): string {
  return `${featureId}/${taskId}`;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
