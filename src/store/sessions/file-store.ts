import { constants as fsConstants, promises as fs } from 'node:fs';
import { join, resolve } from 'node:path';
import { ValidationError, type StreamEvent, type UnsequencedEvent } from '../../conversation/index.js';
import {
  createFileOnce,
  ensureDirectory,
  ioError,
  isErrno,
  replaceFile,
  syncDirectory,
  tempPath,
  writeDurably,
} from '../atomic-file.js';
import { StoreError, type StoreWarning } from '../errors.js';
import { FileLayout, checkpointVersionOf } from './file-layout.js';
import { corruptFile, formatJson, readJsonFile } from '../json-file.js';
import { SessionLog, logHeaderLine } from './jsonl-log.js';
import { firstSeqOf } from './numbering.js';
import { KeyedQueue } from '../keyed-queue.js';
import { prepareDataFolder } from '../data-folder.js';
import { acquireLock, type StoreLock } from './lock.js';
import {
  AgentDescriptionSchema,
  CheckpointSchema,
  ContextDocumentSchema,
  FeatureSchema,
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
import { FORMAT_VERSION, IdSchema } from '../record-format.js';
import { RecordIndex } from './record-index.js';
import { readSessionRecords, sessionAdvice } from './file-records.js';
import type { NewTranscript, ReadLogOptions, SessionStore } from './session-store.js';
import { FileIndexes } from './file-indexes.js';
import type { SessionPage, SessionPageQuery } from './session-page.js';
import { queryTerms, type SessionSearchQuery, type SessionSearchResult } from './session-search.js';
import { checkId, checkRecord, sessionNotFound, storeClosed } from '../validate.js';

/** Options of `createFileStore`: the data folder, and where recovered problems are reported. */
export interface FileStoreOptions {
  /** The data folder; created when missing. */
  dataDir: string;
  /** Recovered problems (torn log tail, stray temp file, unreadable session, stale lock); default: printed to stderr. */
  onWarning?: (warning: StoreWarning) => void;
}

/** Bytes per chunk when a transcript is streamed. */
const TRANSCRIPT_CHUNK_BYTES = 1024 * 1024;

/** Log file handles kept open at once; the least recently appended are closed beyond this. */
const MAX_OPEN_LOGS = 128;

const ADVICE = {
  checkpoint:
    'Every earlier checkpoint version is kept beside it: restore this file from a backup, or remove it to fall back to the version before.',
  context: 'It is rebuilt from its sources on the next request: remove the file, or restore it from a backup.',
  agentDescription: "Restore it from a backup, or remove it and set the session's agent up again.",
  feature: 'Restore feature.json from a backup, or remove the file.',
  task: 'Restore task.json from a backup, or remove the file.',
};

/**
 * The default store: one folder per session under `dataDir`, human-readable JSON, an append-only
 * JSONL log, every other file replaced by write-temp + fsync + rename. Takes `store.lock`, so this
 * process is the only writer: that is what lets it keep an index of session records in memory.
 */
export async function createFileStore(options: FileStoreOptions): Promise<SessionStore> {
  const layout = new FileLayout(resolve(options.dataDir));
  const warn = options.onWarning ?? ((warning: StoreWarning) => console.warn(`parley store: ${warning.message}`));
  await prepareDataFolder(layout.dataDir);
  const lock = await acquireLock(layout.lockFile, warn);
  try {
    await Promise.all([
      ensureDirectory(layout.sessionsDir),
      ensureDirectory(layout.featuresDir),
      ensureDirectory(layout.tmpDir),
    ]);
    await removeStrayTemps(layout.tmpDir, warn);
  } catch (error) {
    await lock.release();
    throw ioError('prepare the data folder', layout.dataDir, error);
  }
  let indexes: FileIndexes;
  try {
    indexes = await FileIndexes.open(layout, warn);
  } catch (error) {
    await lock.release();
    throw ioError('open the indexes in', layout.indexDir, error);
  }
  return new FileStore(layout, lock, warn, indexes);
}

/** Only this process writes under the lock, so anything left in `tmp/` is from a crash. */
async function removeStrayTemps(tmpDir: string, warn: (warning: StoreWarning) => void): Promise<void> {
  for (const name of await fs.readdir(tmpDir)) {
    const path = join(tmpDir, name);
    await fs.rm(path, { recursive: true, force: true });
    warn({
      code: 'STRAY_TEMP_FILE',
      file: path,
      message: `Removed ${path}, a temp file left by a crash in the middle of a write; the file it was meant to replace is unchanged.`,
    });
  }
}

class FileStore implements SessionStore {
  readonly kind = 'file';
  private closed = false;
  private readonly queue = new KeyedQueue();
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Sessions whose folder is known to exist. */
  private readonly known = new Set<string>();
  /** Session records read or written by this process (the only writer). */
  private readonly records = new RecordIndex();
  /** Sessions whose session.json could not be read at the last listing; retried at each listing. */
  private readonly unreadable = new Set<string>();
  private listedAll = false;
  /** Logs opened so far (their line index stays in memory). */
  private readonly logs = new Map<string, SessionLog>();
  /** Logs that may hold a file handle, least recently appended first (Map order). */
  private readonly recentLogs = new Map<string, SessionLog>();
  private readonly logOpenings = new Map<string, Promise<SessionLog>>();
  /** Per session whose log is still opening: settles when the last append waiting for it has reached the log. */
  private readonly appendsWaitingForLog = new Map<string, Promise<void>>();
  private readonly newestCheckpoint = new Map<string, number>();

  constructor(
    private readonly layout: FileLayout,
    private readonly lock: StoreLock,
    private readonly warn: (warning: StoreWarning) => void,
    /** The listing and search indexes, beside the sessions (derived from them). */
    private readonly indexes: FileIndexes,
  ) {}

  /** Runs a call unless the store is closed, and tracks it so `close()` waits for it. */
  private guard<T>(task: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(storeClosed(this.kind));
    const running = task();
    this.inFlight.add(running);
    const forget = () => this.inFlight.delete(running);
    running.then(forget, forget);
    return running;
  }

  private async requireSession(sessionId: string): Promise<string> {
    const id = checkId(sessionId, 'session id');
    if (this.known.has(id)) return id;
    try {
      if ((await fs.stat(this.layout.sessionDir(id))).isDirectory()) {
        this.known.add(id);
        return id;
      }
    } catch (error) {
      if (!isErrno(error, 'ENOENT')) throw ioError('read', this.layout.sessionDir(id), error);
    }
    throw sessionNotFound(id);
  }

  // Sessions

  createSession(record: SessionRecord): Promise<SessionRecord> {
    return this.createSessionWithTranscripts(record, []).then(({ session }) => session);
  }

  createSessionWithTranscripts(
    record: SessionRecord,
    transcripts: readonly NewTranscript[],
  ): Promise<{ session: SessionRecord; copiedBytes: Record<string, number> }> {
    return this.guard(async () => {
      const id = checkId(record?.sessionId, 'session id');
      const stored = checkRecord(SessionRecordSchema, record, 'session record');
      const files = checkNewTranscripts(transcripts);
      return this.queue.run(id, async () => {
        const exists = () =>
          new StoreError('SESSION_EXISTS', `A session "${id}" already exists; pick another id or load that one.`, {
            fault: 'user',
            data: { sessionId: id },
          });
        if (this.known.has(id) || (await pathExists(this.layout.sessionDir(id)))) throw exists();
        // The folder is built in tmp/ and renamed into place, so a session appears whole or not at all.
        const staging = tempPath(this.layout.tmpDir, id);
        let copiedBytes: Record<string, number>;
        try {
          await fs.mkdir(staging);
          if (files.length > 0) await fs.mkdir(join(staging, 'transcripts'));
          // Every file is written, then all are fsynced at once: the journal commits them together.
          const written = await Promise.all([
            writeDurably(join(staging, 'session.json'), formatJson(stored)).then(() => undefined),
            writeDurably(join(staging, 'log.jsonl'), logHeaderLine(id, firstSeqOf(stored))).then(() => undefined),
            ...files.map((file) => stageTranscript(join(staging, 'transcripts', file.name), file)),
          ]);
          copiedBytes = {};
          files.forEach((file, index) => {
            const bytes = written[index + 2];
            if ('sourcePath' in file && bytes !== undefined) copiedBytes[file.name] = bytes;
          });
          await Promise.all([
            syncDirectory(staging),
            ...(files.length > 0 ? [syncDirectory(join(staging, 'transcripts'))] : []),
          ]);
          await fs.rename(staging, this.layout.sessionDir(id));
        } catch (error) {
          await fs.rm(staging, { recursive: true, force: true });
          if (isErrno(error, 'ENOTEMPTY') || isErrno(error, 'EEXIST')) throw exists();
          throw ioError('create the session folder', this.layout.sessionDir(id), error);
        }
        await syncDirectory(this.layout.sessionsDir).catch((error: unknown) => {
          throw ioError('sync the folder of', this.layout.sessionDir(id), error);
        });
        this.known.add(id);
        this.records.set(stored);
        this.indexes.recordChanged(stored);
        return { session: this.records.copy(id)!, copiedBytes };
      });
    });
  }

  getSession(sessionId: string): Promise<SessionRecord | undefined> {
    return this.guard(async () => {
      const id = checkId(sessionId, 'session id');
      if (!this.records.has(id) && !this.known.has(id) && !(await pathExists(this.layout.sessionDir(id))))
        return undefined;
      await this.loadRecord(id);
      return this.records.copy(id);
    });
  }

  private async loadRecord(id: string): Promise<SessionRecord> {
    const cached = this.records.peek(id);
    if (cached !== undefined) return cached;
    const path = this.layout.sessionFile(id);
    const record = await readJsonFile(path, SessionRecordSchema, sessionAdvice(this.layout, id));
    if (record === undefined) throw corruptFile(path, 'the file is missing', sessionAdvice(this.layout, id));
    if (record.sessionId !== id) {
      throw corruptFile(
        path,
        `it names session "${record.sessionId}" but lives in the folder of "${id}"`,
        sessionAdvice(this.layout, id),
      );
    }
    this.known.add(id);
    this.records.set(record);
    this.unreadable.delete(id);
    return record;
  }

  updateSession(sessionId: string, update: (current: SessionRecord) => SessionRecord): Promise<SessionRecord> {
    return this.guard(async () => {
      const id = await this.requireSession(sessionId);
      return this.queue.run(id, async () => {
        const current = await this.loadRecord(id);
        const next = checkRecord(SessionRecordSchema, update(structuredClone(current)), 'session record');
        if (next.sessionId !== id) {
          throw new ValidationError(`An update of session "${id}" may not change its id (got "${next.sessionId}").`, {
            data: { sessionId: id, newSessionId: next.sessionId },
          });
        }
        await replaceFile(this.layout.tmpDir, this.layout.sessionFile(id), formatJson(next), id);
        this.records.set(next);
        this.indexes.recordChanged(next);
        return this.records.copy(id)!;
      });
    });
  }

  async *listSessions(filter?: SessionFilter): AsyncGenerator<SessionRecord> {
    if (this.closed) throw storeClosed(this.kind);
    const retry = this.listedAll ? [...this.unreadable] : await this.unindexedSessions();
    if (retry.length > 0) {
      const { records, failures } = await readSessionRecords(this.layout, retry);
      for (const record of records) {
        this.known.add(record.sessionId);
        this.records.set(record);
        this.unreadable.delete(record.sessionId);
      }
      for (const { sessionId, error } of failures) {
        this.known.add(sessionId);
        this.unreadable.add(sessionId);
        this.warn({
          code: 'UNREADABLE_SESSION',
          sessionId,
          file: typeof error.data.file === 'string' ? error.data.file : this.layout.sessionFile(sessionId),
          message: `Session "${sessionId}" is left out of the list: ${error.message}`,
        });
      }
    }
    this.listedAll = true;
    yield* this.records.matching(filter);
  }

  listSessionPage(query: SessionPageQuery = {}): Promise<SessionPage> {
    return this.guard(async () => {
      const { sessionIds, nextCursor } = await this.indexes.listingPage(query.filter ?? {}, query.limit, query.cursor);
      const unread = sessionIds.filter((id) => !this.records.has(id));
      if (unread.length > 0) {
        // A session whose record cannot be read is left out of the page; listing them whole says why.
        for (const record of (await readSessionRecords(this.layout, unread)).records) {
          this.known.add(record.sessionId);
          this.records.set(record);
        }
      }
      const sessions = sessionIds.filter((id) => this.records.has(id)).map((id) => this.records.copy(id)!);
      return { sessions, ...(nextCursor !== undefined ? { nextCursor } : {}) };
    });
  }

  searchSessions(query: SessionSearchQuery): Promise<SessionSearchResult> {
    return this.guard(async () => {
      const { terms, limit } = queryTerms(query);
      const index = await this.indexes.messagesReady();
      return { hits: index.search(terms, limit), terms };
    });
  }

  /** Session folders whose record is not in the index yet (all of them, at the first listing). */
  private async unindexedSessions(): Promise<string[]> {
    let names: string[];
    try {
      names = await fs.readdir(this.layout.sessionsDir);
    } catch (error) {
      throw ioError('list', this.layout.sessionsDir, error);
    }
    // Anything that is not a valid id (`.DS_Store`, a README) cannot be a session.
    return names.filter((name) => !this.records.has(name) && checkIdQuietly(name));
  }

  // Log

  append(sessionId: string, events: readonly UnsequencedEvent[]): Promise<StreamEvent[]> {
    if (this.closed) return Promise.reject(storeClosed(this.kind));
    const log = this.logs.get(sessionId);
    const waiting = this.appendsWaitingForLog.get(sessionId);
    // Hot path: the id was validated when the log was opened.
    if (log !== undefined && waiting === undefined) return this.appendTo(sessionId, log, events);
    // The log opens first (the id checked, the file indexed). Appends made meanwhile wait behind
    // each other: each one's checks finish in their own time, and call order must still hold.
    let handedOn!: () => void;
    const turn = new Promise<void>((resolve) => (handedOn = resolve));
    this.appendsWaitingForLog.set(sessionId, turn);
    void turn.then(() => {
      if (this.appendsWaitingForLog.get(sessionId) === turn) this.appendsWaitingForLog.delete(sessionId);
    });
    return this.guard(async () => {
      let appended: Promise<StreamEvent[]>;
      try {
        await waiting;
        const id = await this.requireSession(sessionId);
        appended = this.appendTo(id, await this.openLog(id), events);
      } finally {
        // Queued in the log (or failed): the next waiting append may go.
        handedOn();
      }
      return appended;
    });
  }

  private appendTo(id: string, log: SessionLog, events: readonly UnsequencedEvent[]): Promise<StreamEvent[]> {
    this.recentLogs.delete(id);
    this.recentLogs.set(id, log);
    // File handles stay bounded: the least recently appended log gives its handle back.
    if (this.recentLogs.size > MAX_OPEN_LOGS) {
      const [oldestId, oldest] = this.recentLogs.entries().next().value!;
      oldest.releaseHandle();
      this.recentLogs.delete(oldestId);
    }
    const appended = log.append(events);
    // Once durable, the messages join the search index; that can never fail the append.
    appended.then(
      (numbered) => this.indexes.appended(id, numbered),
      () => undefined,
    );
    return appended;
  }

  async *readLog(sessionId: string, options: ReadLogOptions = {}): AsyncGenerator<StreamEvent> {
    if (this.closed) throw storeClosed(this.kind);
    const log = await this.openLog(await this.requireSession(sessionId));
    yield* log.read(options);
  }

  lastSeq(sessionId: string): Promise<number> {
    return this.guard(async () => (await this.openLog(await this.requireSession(sessionId))).lastSeq);
  }

  private openLog(id: string): Promise<SessionLog> {
    const open = this.logs.get(id);
    if (open !== undefined) return Promise.resolve(open);
    let opening = this.logOpenings.get(id);
    if (opening === undefined) {
      opening = SessionLog.open(this.layout.logFile(id), id, this.warn).then((log) => {
        this.logs.set(id, log);
        this.logOpenings.delete(id);
        return log;
      });
      opening.catch(() => this.logOpenings.delete(id));
      this.logOpenings.set(id, opening);
    }
    return opening;
  }

  // Checkpoints

  writeCheckpoint(sessionId: string, input: CheckpointInput): Promise<Checkpoint> {
    return this.guard(async () => {
      const id = await this.requireSession(sessionId);
      return this.queue.run(id, async () => {
        const version = (await this.newestCheckpointVersion(id)) + 1;
        const checkpoint = checkRecord(
          CheckpointSchema,
          { ...input, formatVersion: FORMAT_VERSION, sessionId: id, version },
          'checkpoint',
        );
        const path = this.layout.checkpointFile(id, version);
        try {
          await ensureDirectory(this.layout.checkpointsDir(id));
          if (!(await createFileOnce(this.layout.tmpDir, path, formatJson(checkpoint), id))) {
            throw ioError(
              'write',
              path,
              new Error('a checkpoint with this version already exists and is never overwritten'),
              id,
            );
          }
        } catch (error) {
          // The folder is read again next time rather than trusting a count a failed write may have left behind.
          this.newestCheckpoint.delete(id);
          throw ioError('write', path, error, id);
        }
        this.newestCheckpoint.set(id, version);
        return structuredClone(checkpoint);
      });
    });
  }

  readCheckpoint(sessionId: string, version?: number): Promise<Checkpoint | undefined> {
    return this.guard(async () => {
      const id = await this.requireSession(sessionId);
      const wanted = version ?? (await this.newestCheckpointVersion(id));
      if (!Number.isInteger(wanted) || wanted < 1) return undefined;
      return this.readCheckpointFile(id, wanted);
    });
  }

  listCheckpoints(sessionId: string): Promise<Checkpoint[]> {
    return this.guard(async () => {
      const id = await this.requireSession(sessionId);
      const checkpoints: Checkpoint[] = [];
      for (const version of await this.checkpointVersions(id)) {
        const checkpoint = await this.readCheckpointFile(id, version);
        if (checkpoint !== undefined) checkpoints.push(checkpoint);
      }
      return checkpoints;
    });
  }

  private async readCheckpointFile(id: string, version: number): Promise<Checkpoint | undefined> {
    const path = this.layout.checkpointFile(id, version);
    const checkpoint = await readJsonFile(path, CheckpointSchema, ADVICE.checkpoint);
    if (checkpoint !== undefined && (checkpoint.sessionId !== id || checkpoint.version !== version)) {
      throw corruptFile(
        path,
        `it holds version ${checkpoint.version} of session "${checkpoint.sessionId}"`,
        ADVICE.checkpoint,
      );
    }
    return checkpoint;
  }

  private async newestCheckpointVersion(id: string): Promise<number> {
    const cached = this.newestCheckpoint.get(id);
    if (cached !== undefined) return cached;
    const newest = (await this.checkpointVersions(id)).at(-1) ?? 0;
    this.newestCheckpoint.set(id, newest);
    return newest;
  }

  private async checkpointVersions(id: string): Promise<number[]> {
    const names = await readDirectory(this.layout.checkpointsDir(id));
    return names
      .map(checkpointVersionOf)
      .filter((version): version is number => version !== undefined)
      .sort((a, b) => a - b);
  }

  // Context, agent description, transcripts

  writeContext(document: ContextDocument): Promise<void> {
    return this.guard(async () => {
      const id = await this.requireSession(document?.sessionId);
      const checked = checkRecord(ContextDocumentSchema, document, 'context document');
      await this.queue.run(id, () => replaceFile(this.layout.tmpDir, this.layout.contextFile(id), formatJson(checked)));
    });
  }

  readContext(sessionId: string): Promise<ContextDocument | undefined> {
    return this.guard(async () => {
      const id = await this.requireSession(sessionId);
      return this.readOwnedDocument(id, this.layout.contextFile(id), ContextDocumentSchema, ADVICE.context);
    });
  }

  writeAgentDescription(description: AgentDescription): Promise<void> {
    return this.guard(async () => {
      const id = await this.requireSession(description?.sessionId);
      const checked = checkRecord(AgentDescriptionSchema, description, 'agent description');
      await this.queue.run(id, () =>
        replaceFile(this.layout.tmpDir, this.layout.agentDescriptionFile(id), formatJson(checked)),
      );
    });
  }

  readAgentDescription(sessionId: string): Promise<AgentDescription | undefined> {
    return this.guard(async () => {
      const id = await this.requireSession(sessionId);
      return this.readOwnedDocument(
        id,
        this.layout.agentDescriptionFile(id),
        AgentDescriptionSchema,
        ADVICE.agentDescription,
      );
    });
  }

  private async readOwnedDocument<T extends { sessionId: string }>(
    id: string,
    path: string,
    schema: typeof ContextDocumentSchema | typeof AgentDescriptionSchema,
    advice: string,
  ): Promise<T | undefined> {
    const document = (await readJsonFile(path, schema, advice)) as T | undefined;
    if (document !== undefined && document.sessionId !== id) {
      throw corruptFile(path, `it belongs to session "${document.sessionId}", not "${id}"`, advice);
    }
    return document;
  }

  writeTranscript(sessionId: string, name: string, content: string): Promise<void> {
    return this.guard(async () => {
      const id = await this.requireSession(sessionId);
      const fileName = checkId(name, 'transcript name');
      await this.queue.run(id, async () => {
        await ensureDirectory(this.layout.transcriptsDir(id));
        await replaceFile(this.layout.tmpDir, this.layout.transcriptFile(id, fileName), String(content));
      });
    });
  }

  readTranscript(sessionId: string, name: string): Promise<string | undefined> {
    return this.guard(async () => {
      const id = await this.requireSession(sessionId);
      const path = this.layout.transcriptFile(id, checkId(name, 'transcript name'));
      try {
        return await fs.readFile(path, 'utf8');
      } catch (error) {
        if (isErrno(error, 'ENOENT')) return undefined;
        throw ioError('read', path, error);
      }
    });
  }

  streamTranscript(sessionId: string, name: string): Promise<AsyncIterable<Uint8Array> | undefined> {
    return this.guard(async () => {
      const id = await this.requireSession(sessionId);
      const path = this.layout.transcriptFile(id, checkId(name, 'transcript name'));
      let handle: fs.FileHandle;
      try {
        handle = await fs.open(path, 'r');
      } catch (error) {
        if (isErrno(error, 'ENOENT')) return undefined;
        throw ioError('read', path, error);
      }
      // The open handle keeps the file readable even if it is replaced meanwhile.
      return handle.createReadStream({ highWaterMark: TRANSCRIPT_CHUNK_BYTES });
    });
  }

  listTranscripts(sessionId: string): Promise<string[]> {
    return this.guard(async () => {
      const id = await this.requireSession(sessionId);
      return (await readDirectory(this.layout.transcriptsDir(id))).filter(checkIdQuietly).sort();
    });
  }

  // Features and tasks

  putFeature(feature: Feature): Promise<void> {
    return this.guard(async () => {
      const checked = checkRecord(FeatureSchema, feature, 'feature');
      await this.queue.run(`feature:${checked.featureId}`, async () => {
        await ensureDirectory(this.layout.featureDir(checked.featureId));
        await replaceFile(this.layout.tmpDir, this.layout.featureFile(checked.featureId), formatJson(checked));
      });
    });
  }

  getFeature(featureId: string): Promise<Feature | undefined> {
    return this.guard(async () => this.readFeature(checkId(featureId, 'feature id')));
  }

  private async readFeature(featureId: string): Promise<Feature | undefined> {
    const path = this.layout.featureFile(featureId);
    const feature = await readJsonFile(path, FeatureSchema, ADVICE.feature);
    if (feature !== undefined && feature.featureId !== featureId) {
      throw corruptFile(
        path,
        `it names feature "${feature.featureId}" but lives in the folder of "${featureId}"`,
        ADVICE.feature,
      );
    }
    return feature;
  }

  listFeatures(): Promise<Feature[]> {
    return this.guard(async () => {
      const features: Feature[] = [];
      for (const featureId of (await readDirectory(this.layout.featuresDir)).filter(checkIdQuietly).sort()) {
        const feature = await this.readListed(() => this.readFeature(featureId));
        if (feature !== undefined) features.push(feature);
      }
      return features;
    });
  }

  putFeatureTask(task: FeatureTask): Promise<void> {
    return this.guard(async () => {
      const checked = checkRecord(FeatureTaskSchema, task, 'task');
      await this.queue.run(`feature:${checked.featureId}`, async () => {
        await ensureDirectory(this.layout.taskDir(checked.featureId, checked.taskId));
        await replaceFile(
          this.layout.tmpDir,
          this.layout.taskFile(checked.featureId, checked.taskId),
          formatJson(checked),
        );
      });
    });
  }

  getFeatureTask(featureId: string, taskId: string): Promise<FeatureTask | undefined> {
    return this.guard(async () => this.readFeatureTask(checkId(featureId, 'feature id'), checkId(taskId, 'task id')));
  }

  private async readFeatureTask(featureId: string, taskId: string): Promise<FeatureTask | undefined> {
    const path = this.layout.taskFile(featureId, taskId);
    const task = await readJsonFile(path, FeatureTaskSchema, ADVICE.task);
    if (task !== undefined && (task.featureId !== featureId || task.taskId !== taskId)) {
      throw corruptFile(
        path,
        `it names task "${task.featureId}/${task.taskId}" but lives in the folder of "${featureId}/${taskId}"`,
        ADVICE.task,
      );
    }
    return task;
  }

  listFeatureTasks(featureId?: string): Promise<FeatureTask[]> {
    return this.guard(async () => {
      const featureIds =
        featureId === undefined
          ? (await readDirectory(this.layout.featuresDir)).filter(checkIdQuietly).sort()
          : [checkId(featureId, 'feature id')];
      const tasks: FeatureTask[] = [];
      for (const feature of featureIds) {
        for (const taskId of (await readDirectory(this.layout.tasksDir(feature))).filter(checkIdQuietly).sort()) {
          const task = await this.readListed(() => this.readFeatureTask(feature, taskId));
          if (task !== undefined) tasks.push(task);
        }
      }
      return tasks;
    });
  }

  /** In a listing, one damaged file is left out with a warning instead of failing the whole list. */
  private async readListed<T>(read: () => Promise<T | undefined>): Promise<T | undefined> {
    try {
      return await read();
    } catch (error) {
      if (
        !(error instanceof StoreError) ||
        (error.code !== 'CORRUPT_FILE' && error.code !== 'UNSUPPORTED_FORMAT_VERSION')
      )
        throw error;
      this.warn({
        code: 'UNREADABLE_FILE',
        file: typeof error.data.file === 'string' ? error.data.file : undefined,
        message: `Left out of the list: ${error.message}`,
      });
      return undefined;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    await Promise.allSettled([...this.logOpenings.values()]);
    await Promise.all([...this.logs.values()].map((log) => log.close()));
    this.logs.clear();
    this.recentLogs.clear();
    await this.indexes.close();
    await this.lock.release();
  }
}

async function pathExists(path: string): Promise<boolean> {
  try {
    await fs.stat(path);
    return true;
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return false;
    throw ioError('read', path, error);
  }
}

async function readDirectory(path: string): Promise<string[]> {
  try {
    return await fs.readdir(path);
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return [];
    throw ioError('list', path, error);
  }
}

function checkIdQuietly(name: string): boolean {
  return IdSchema.safeParse(name).success;
}

/** The transcripts of a new session, checked before anything is written: valid names, each once, text or a path. */
function checkNewTranscripts(transcripts: readonly NewTranscript[]): NewTranscript[] {
  if (!Array.isArray(transcripts))
    throw new ValidationError(
      'The transcripts of a new session must be a list of { name, content } or { name, sourcePath }.',
    );
  const names = new Set<string>();
  return transcripts.map((transcript: NewTranscript) => {
    const name = checkId(transcript?.name, 'transcript name');
    if (names.has(name)) throw new ValidationError(`The transcript "${name}" is given twice; give each name once.`);
    names.add(name);
    if ('sourcePath' in transcript && typeof transcript.sourcePath === 'string')
      return { name, sourcePath: transcript.sourcePath };
    if ('content' in transcript && typeof transcript.content === 'string') return { name, content: transcript.content };
    throw new ValidationError(
      `The transcript "${name}" needs its text (content) or the path of a file to copy (sourcePath).`,
    );
  });
}

/** Writes or copies one transcript of a staged session and fsyncs it; a copy resolves with its size. */
async function stageTranscript(path: string, transcript: NewTranscript): Promise<number | undefined> {
  if ('content' in transcript) {
    await writeDurably(path, transcript.content);
    return undefined;
  }
  // A reflink where the file system has them, else a copy in the kernel (copy_file_range): the
  // bytes never pass through this process.
  await fs.copyFile(transcript.sourcePath, path, fsConstants.COPYFILE_FICLONE | fsConstants.COPYFILE_EXCL);
  const handle = await fs.open(path, 'r');
  try {
    const { size } = await handle.stat();
    await handle.sync();
    return size;
  } finally {
    await handle.close();
  }
}
