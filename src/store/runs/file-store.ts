import { closeSync, fdatasync, fdatasyncSync, ftruncateSync, openSync, promises as fs, writeSync } from 'node:fs';
import * as z from 'zod';
import { ValidationError } from '../../conversation/index.js';
import { join } from 'node:path';
import { ensureDirectory, ioError, isErrno, replaceFile, syncDirectory } from '../atomic-file.js';
import { corruptFile, formatJson, parseJsonDocument } from '../json-file.js';
import { StoreError, type StoreWarning } from '../errors.js';
import { KeyedQueue } from '../keyed-queue.js';
import { FORMAT_VERSION } from '../record-format.js';
import type { RunRecord } from './records.js';
import { checkFromSeq, checkJournalDrafts, checkRun, runExists, runNotFound, StoredRunRecordSchema } from './rules.js';
import {
  matchesRunFilter,
  newestFirst,
  RunJournalEntrySchema,
  type AppendJournalOptions,
  type RunJournalEntry,
  type UnsequencedJournalEntry,
  type RunStore,
} from './run-store.js';
import { checkId, storeClosed } from '../validate.js';

/**
 * The file RunStore, in the data folder beside the sessions:
 *
 * ```
 * <dataDir>/runs/<runId>/run.json        the record, replaced by write-temp + fsync + rename
 * <dataDir>/runs/<runId>/journal.jsonl   header line, then one entry per line, appended and fdatasynced
 * <dataDir>/runs/.tmp/                   temp files; anything here at open is a crash leftover
 * ```
 *
 * The journal follows the session log's rules: an append resolves after its bytes are fdatasynced;
 * appends waiting while one is written go together into the next write (group commit); an append
 * with `sync: 'deferred'` resolves once written (in the OS's cache, which a killed process cannot
 * lose) and is fdatasynced on the thread pool within `deferredSyncMs`, or sooner by the next durable
 * append, a record update of its run, or close; a torn last
 * line (a crash in the middle of a write, never acknowledged) is set aside to
 * `journal.jsonl.torn-<time>` with a warning when the journal is next opened. Like the draft store,
 * it relies on the file session store's `store.lock` for being the data folder's only writer.
 */
export interface FileRunStoreOptions {
  dataDir: string;
  onWarning?: (warning: StoreWarning) => void;
  /** The longest a deferred journal append waits for its fdatasync, in milliseconds (default 50). */
  deferredSyncMs?: number;
}

/** Short enough that a machine crash loses little; long enough to sync many turns at once. */
const DEFAULT_DEFERRED_SYNC_MS = 50;

/** Opens the run store on files: `runs/<id>/run.json` and `journal.jsonl` in the data folder. */
export async function createFileRunStore(options: FileRunStoreOptions): Promise<RunStore> {
  const runsDir = join(options.dataDir, 'runs');
  const tmpDir = join(runsDir, '.tmp');
  await ensureDirectory(tmpDir);
  for (const name of await fs.readdir(tmpDir)) await fs.rm(join(tmpDir, name), { force: true, recursive: true });
  const deferredSyncMs = options.deferredSyncMs ?? DEFAULT_DEFERRED_SYNC_MS;
  if (!Number.isFinite(deferredSyncMs) || deferredSyncMs < 0) {
    throw new ValidationError(
      `createFileRunStore: deferredSyncMs must be a number of milliseconds of at least 0, not ${String(options.deferredSyncMs)}.`,
    );
  }
  return new FileRunStore(
    runsDir,
    tmpDir,
    options.onWarning ?? ((warning) => process.emitWarning(warning.message)),
    deferredSyncMs,
  );
}

const JOURNAL_KIND = 'parley-run-journal';
/** run.json: the record and its format version (dropped on read). */
const RunFileSchema = z
  .looseObject({ formatVersion: z.number().int().positive() })
  .transform(({ formatVersion: _version, ...record }): unknown => record)
  .pipe(StoredRunRecordSchema);

class FileRunStore implements RunStore {
  readonly kind = 'file';
  private closed = false;
  private readonly records = new KeyedQueue();
  private readonly journals = new Map<string, Promise<JournalFile>>();
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    private readonly runsDir: string,
    private readonly tmpDir: string,
    private readonly warn: (warning: StoreWarning) => void,
    private readonly deferredSyncMs: number,
  ) {}

  private guard<T>(task: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(storeClosed('file run'));
    const running = task();
    this.inFlight.add(running);
    const forget = (): void => void this.inFlight.delete(running);
    running.then(forget, forget);
    return running;
  }

  private runDir(runId: string): string {
    return join(this.runsDir, checkId(runId, 'run id'));
  }

  private recordPath(runId: string): string {
    return join(this.runDir(runId), 'run.json');
  }

  private async read(runId: string): Promise<RunRecord | undefined> {
    const path = this.recordPath(runId);
    let text: string;
    try {
      text = await fs.readFile(path, 'utf8');
    } catch (error) {
      if (isErrno(error, 'ENOENT')) return undefined;
      throw ioError('read', path, error);
    }
    return parseJsonDocument(text, path, RunFileSchema, 'Restore run.json from a backup, or remove the run folder.');
  }

  createRun(input: RunRecord): Promise<RunRecord> {
    return this.guard(async () => {
      const record = checkRun(input);
      return this.records.run(record.id, async () => {
        const dir = this.runDir(record.id);
        try {
          await fs.mkdir(dir);
        } catch (error) {
          if (isErrno(error, 'EEXIST')) throw runExists(record.id);
          throw ioError('create the folder', dir, error);
        }
        await syncDirectory(this.runsDir).catch((error: unknown) => {
          throw ioError('sync the folder', this.runsDir, error);
        });
        await fs.writeFile(
          join(dir, 'journal.jsonl'),
          `${JSON.stringify({ formatVersion: FORMAT_VERSION, kind: JOURNAL_KIND, runId: record.id })}\n`,
          { flag: 'wx' },
        );
        await replaceFile(
          this.tmpDir,
          this.recordPath(record.id),
          formatJson({ formatVersion: FORMAT_VERSION, ...record }),
        );
        return structuredClone(record);
      });
    });
  }

  getRun(runId: string): Promise<RunRecord | undefined> {
    return this.guard(() => this.read(runId));
  }

  listRuns(filter?: Parameters<RunStore['listRuns']>[0]): Promise<RunRecord[]> {
    return this.guard(async () => {
      const names = (await fs.readdir(this.runsDir, { withFileTypes: true })).filter(
        (entry) => entry.isDirectory() && !entry.name.startsWith('.'),
      );
      const records = await Promise.all(names.map((entry) => this.read(entry.name)));
      return records
        .filter((record): record is RunRecord => record !== undefined && matchesRunFilter(record, filter))
        .sort(newestFirst);
    });
  }

  updateRun(input: RunRecord): Promise<RunRecord> {
    return this.guard(async () => {
      const record = checkRun(input);
      return this.records.run(record.id, async () => {
        if ((await this.read(record.id)) === undefined) throw runNotFound(record.id);
        // The record never runs ahead of its journal: deferred entries are made durable first.
        // A journal that failed to open has nothing acknowledged to sync.
        const journal = await this.journals.get(record.id)?.catch(() => undefined);
        await journal?.sync();
        await replaceFile(
          this.tmpDir,
          this.recordPath(record.id),
          formatJson({ formatVersion: FORMAT_VERSION, ...record }),
        );
        return structuredClone(record);
      });
    });
  }

  appendJournal(
    runId: string,
    entries: readonly UnsequencedJournalEntry[],
    options?: AppendJournalOptions,
  ): Promise<RunJournalEntry[]> {
    return this.guard(async () => {
      const drafts = checkJournalDrafts(runId, entries);
      const journal = await this.journal(runId);
      return journal.append(drafts, options?.sync === 'deferred');
    });
  }

  readJournal(runId: string, options?: { fromSeq?: number }): Promise<RunJournalEntry[]> {
    return this.guard(async () => {
      const from = checkFromSeq(options?.fromSeq);
      const path = join(this.runDir(runId), 'journal.jsonl');
      return scanJournal(await readJournalFile(path, runId), path, runId).entries.slice(from);
    });
  }

  /** The run's open journal; opening it sets a torn tail aside. */
  private journal(runId: string): Promise<JournalFile> {
    let opened = this.journals.get(runId);
    if (!opened) {
      opened = JournalFile.open(join(this.runDir(runId), 'journal.jsonl'), runId, this.warn, this.deferredSyncMs);
      this.journals.set(runId, opened);
      opened.catch(() => this.journals.delete(runId));
    }
    return opened;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.inFlight]);
    for (const opened of this.journals.values()) await opened.then((journal) => journal.close()).catch(() => undefined);
    this.journals.clear();
  }
}

/** A run's journal file as bytes; RUN_NOT_FOUND when the run has none. */
async function readJournalFile(path: string, runId: string): Promise<Buffer> {
  try {
    return await fs.readFile(path);
  } catch (error) {
    if (isErrno(error, 'ENOENT')) throw runNotFound(runId);
    throw ioError('read', path, error);
  }
}

interface Scan {
  entries: RunJournalEntry[];
  /** Bytes up to the end of the last complete line. */
  complete: number;
}

/** Reads a journal's lines; a last line without its newline (or unparseable) is a torn tail and left out. */
function scanJournal(content: Buffer, path: string, runId: string): Scan {
  const entries: RunJournalEntry[] = [];
  let start = 0;
  let lineNumber = 0;
  let complete = 0;
  while (start < content.length) {
    const end = content.indexOf(0x0a, start);
    if (end < 0) break;
    lineNumber += 1;
    const line = content.toString('utf8', start, end);
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      // Only the last line can be torn by a crash; a bad line before it is damage.
      if (end === content.length - 1) break;
      throw corruptFile(
        path,
        `line ${lineNumber} is not JSON`,
        'Restore journal.jsonl from a backup; the run cannot resume without it.',
        error,
      );
    }
    if (lineNumber === 1) {
      const header = value as { kind?: unknown; runId?: unknown; formatVersion?: unknown };
      if (header.kind !== JOURNAL_KIND || header.runId !== runId) {
        throw corruptFile(
          path,
          'its first line is not the journal header of this run',
          'Restore journal.jsonl from a backup.',
        );
      }
    } else {
      const parsed = RunJournalEntrySchema.safeParse(value);
      if (!parsed.success || parsed.data.seq !== entries.length) {
        throw corruptFile(
          path,
          `line ${lineNumber} is not entry ${entries.length} of the journal`,
          'Restore journal.jsonl from a backup.',
        );
      }
      entries.push(parsed.data);
    }
    complete = end + 1;
    start = end + 1;
  }
  if (lineNumber === 0) throw corruptFile(path, 'it has no header line', 'Restore journal.jsonl from a backup.');
  return { entries, complete };
}

interface PendingAppend {
  drafts: UnsequencedJournalEntry[];
  deferred: boolean;
  resolve: (entries: RunJournalEntry[]) => void;
  reject: (error: unknown) => void;
}

/**
 * One run's journal open for appending, with group commit: every append made in one turn of the
 * event loop goes into one write, fdatasynced at once unless every append in it is deferred.
 * Synchronous on purpose, as the session log's flush: thread-pool round trips of `fs.promises`
 * cost more than the flush itself. Deferred bytes are synced on the thread pool instead, so the
 * event loop does not wait for the disk twice per agent turn (the session log's flush, then this).
 */
class JournalFile {
  private pending: PendingAppend[] = [];
  private scheduled = false;
  private closed = false;
  /** Bytes known to be on stable storage; `size` minus this is written but not yet synced. */
  private synced: number;
  private syncTimer: ReturnType<typeof setTimeout> | undefined;
  private backgroundSync: Promise<void> | undefined;

  private constructor(
    private readonly path: string,
    private readonly fd: number,
    private nextSeq: number,
    private size: number,
    private readonly deferredSyncMs: number,
    private readonly warn: (warning: StoreWarning) => void,
    private readonly runId: string,
  ) {
    this.synced = size;
  }

  static async open(
    path: string,
    runId: string,
    warn: (warning: StoreWarning) => void,
    deferredSyncMs: number,
  ): Promise<JournalFile> {
    const content = await readJournalFile(path, runId);
    const scan = scanJournal(content, path, runId);
    if (scan.complete < content.length) {
      const tornPath = `${path}.torn-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      await fs.writeFile(tornPath, content.subarray(scan.complete));
      await fs.truncate(path, scan.complete);
      warn({
        code: 'TORN_LOG_TAIL',
        sessionId: runId,
        file: tornPath,
        message: `The last line of ${path} was incomplete (left by a crash in the middle of a write); it was moved to ${tornPath}. It had never been acknowledged, so nothing saved was lost.`,
      });
    }
    return new JournalFile(path, openSync(path, 'r+'), scan.entries.length, scan.complete, deferredSyncMs, warn, runId);
  }

  append(drafts: UnsequencedJournalEntry[], deferred: boolean): Promise<RunJournalEntry[]> {
    return new Promise((resolve, reject) => {
      if (this.closed) {
        reject(new StoreError('STORE_CLOSED', `The journal ${this.path} is closed; open the store again to append.`));
        return;
      }
      this.pending.push({ drafts, deferred, resolve, reject });
      // A deferred append with nothing queued before it has no flush to share: written at once,
      // it saves the turn a trip round the event loop.
      if (deferred && this.pending.length === 1) {
        this.flush();
        return;
      }
      if (!this.scheduled) {
        this.scheduled = true;
        // setImmediate, not a microtask: the flush is synchronous, and a caller appending in a loop
        // must still let the event loop run.
        setImmediate(() => this.flush());
      }
    });
  }

  /** Makes every acknowledged byte durable now (a record update of the run, or close). */
  async sync(): Promise<void> {
    this.flush();
    await this.backgroundSync;
    if (this.synced < this.size) this.syncNow();
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    const at = new Date().toISOString();
    let seq = this.nextSeq;
    const written = batch.map((append) =>
      append.drafts.map((draft) => ({ seq: seq++, kind: draft.kind, at, data: draft.data ?? null })),
    );
    const bytes = Buffer.from(
      written
        .flat()
        .map((entry) => `${JSON.stringify(entry)}\n`)
        .join(''),
      'utf8',
    );
    const durableNow = batch.some((append) => !append.deferred);
    try {
      writeSync(this.fd, bytes, 0, bytes.length, this.size);
      // One fdatasync covers every earlier byte of the file too, deferred ones included.
      if (durableNow) fdatasyncSync(this.fd);
    } catch (error) {
      // Nothing of this batch was acknowledged: cut whatever part reached the file.
      try {
        ftruncateSync(this.fd, this.size);
      } catch {
        // The next open sets a torn tail aside; nothing past `size` was acknowledged.
      }
      const failure = ioError('append to', this.path, error);
      for (const append of batch) append.reject(failure);
      return;
    }
    this.size += bytes.length;
    this.nextSeq = seq;
    if (durableNow) this.synced = this.size;
    else this.scheduleSync();
    batch.forEach((append, index) => append.resolve(written[index]!));
  }

  private syncNow(): void {
    try {
      fdatasyncSync(this.fd);
      this.synced = this.size;
    } catch (error) {
      throw ioError('sync', this.path, error);
    }
  }

  private scheduleSync(): void {
    if (this.syncTimer || this.closed) return;
    this.syncTimer = setTimeout(() => {
      this.syncTimer = undefined;
      this.syncInBackground();
    }, this.deferredSyncMs);
    // A process that exits normally closes its stores, which syncs; one that is killed loses nothing written.
    this.syncTimer.unref();
  }

  private syncInBackground(): void {
    if (this.backgroundSync || this.synced >= this.size) return;
    const target = this.size;
    this.backgroundSync = new Promise<void>((resolve) => {
      fdatasync(this.fd, (error) => {
        this.backgroundSync = undefined;
        if (error) {
          // The next durable append, record update or close syncs again, and fails loudly there.
          this.warn({
            code: 'JOURNAL_SYNC_FAILED',
            sessionId: this.runId,
            file: this.path,
            message: `Syncing ${this.path} failed (${error.message}); its newest entries are written but may not survive a crash of the machine. Parley retries at the run's next step.`,
          });
        } else {
          this.synced = Math.max(this.synced, target);
          // Appends written while this sync ran are synced by the next one.
          if (this.synced < this.size) this.scheduleSync();
        }
        resolve();
      });
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.syncTimer) clearTimeout(this.syncTimer);
    this.syncTimer = undefined;
    this.flush();
    this.closed = true;
    // The fd must outlive a sync still running on the thread pool.
    await this.backgroundSync;
    try {
      if (this.synced < this.size) this.syncNow();
    } finally {
      closeSync(this.fd);
    }
  }
}
