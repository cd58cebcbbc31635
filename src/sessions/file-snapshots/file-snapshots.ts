import { promises as fs } from 'node:fs';
import path from 'node:path';
import * as z from 'zod';
import { IdSchema } from '../../store/index.js';
import { FileRestoreConflictError, FileSnapshotError } from './errors.js';
import type { TreeChange } from './object-reader.js';
import { ShadowGit } from './shadow-git.js';
import { SnapshotLog, type FileSnapshot } from './snapshot-log.js';
import { removeStaging, writeChanges } from './tree-writer.js';
import type { HistoryRange } from '../history-path.js';

/** Snapshots off every active branch are pruned once older than this, by default: 14 days. */
export const DEFAULT_SNAPSHOT_MAX_ABANDONED_AGE_MS = 14 * 24 * 60 * 60 * 1000;

/** A run of a session's seqs, both ends included, that a history path goes through. */
/**
 * What the snapshots need to know of the history tree: which seqs lead to a point, and which lie
 * on a session's active branch. `linearHistory` answers for a history with no branches; the
 * history tree's own module answers with its segments and forks.
 */
export interface SnapshotHistory {
  /**
   * The seqs that lead to `seq` of the session, oldest first (a fork's reach into its source
   * included). Throws a clear error, changing nothing, when `seq` is not a point of the session.
   */
  pathTo(sessionId: string, seq: number): Promise<readonly HistoryRange[]>;
  /** The seqs of the session's active branch: snapshots that lie on none of these may be pruned. */
  activePath(sessionId: string): Promise<readonly HistoryRange[]>;
}

/** What a restore did. */
export interface SnapshotRestoreResult {
  sessionId: string;
  seq: number;
  /** The snapshot the files were taken back to. */
  snapshot: FileSnapshot;
  /** Project paths written or removed, in the order they were. */
  changed: string[];
  /** Paths the user had changed that were overwritten because `overwrite` was asked for. */
  overwritten: string[];
}

/** What a prune removed. */
export interface SnapshotPruneReport {
  removed: number;
  kept: number;
}

/** Options of `FileSnapshots`. */
export interface FileSnapshotsOptions {
  /** The project whose working tree is snapshotted. */
  projectRoot: string;
  /** Where the shadow repository and the list of snapshots live: `<data folder>/file-snapshots`. */
  folder: string;
  /** Which seqs lead to a point, and which are on a session's active branch. */
  history: SnapshotHistory;
  /** Project folders never snapshotted besides what .gitignore says (the data folder, when it is inside the project). */
  exclude?: readonly string[];
  /** Snapshots that lie on no active branch are pruned once older than this (default 14 days). */
  maxAbandonedAgeMs?: number;
  /** Milliseconds since the epoch; injectable for tests. */
  clock?: () => number;
  /** Called after each path a restore writes or removes (tests stop a process there). */
  onRestoreStep?: (projectPath: string) => Promise<void> | void;
  /**
   * Takes the session's conversation back to `seq`: called when a start finishes a restore that was
   * part of a rewind of both the conversation and the files (`restore(…, { rewind: true })`), so
   * a crash leaves the two at the point together, never the files alone. Must be idempotent.
   */
  onRewindFinished?: (sessionId: string, seq: number) => Promise<void>;
}

const RestoreIntentSchema = z.object({
  sessionId: z.string(),
  seq: z.number().int(),
  turnId: z.string().optional(),
  to: z.string(),
  /** The paths the restore changes: where staging files may be left. */
  paths: z.array(z.string()),
  /** Part of a rewind of the conversation too: finished by `onRewindFinished`, and kept until `settleRewind`. */
  rewind: z.boolean().optional(),
});
type RestoreIntent = z.infer<typeof RestoreIntentSchema>;

/**
 * The project's working tree, snapshotted into a shadow git repository in the data folder before
 * and after each turn that may change files, and put back to any of those points. A snapshot is
 * `git add --all` and `git write-tree` into the shadow repository: git stores only the files that
 * changed, and honours the project's .gitignore files (nested ones too). The snapshot list (a JSON
 * line each) is the truth; refs into the shadow repository are written from it only when a prune
 * runs gc, so a snapshot costs the two git commands and one fdatasync.
 *
 * A restore first snapshots the tree as it is, and refuses (changing nothing) when it would
 * overwrite a file that differs from the latest snapshot (a file the user changed since the agent
 * last touched it), unless asked to overwrite. It writes an intent file before the first change
 * and each file under a staging name renamed into place; a process killed mid-restore leaves the
 * intent, and the next start (any call here) finishes the restore, so the tree ends at the point.
 *
 * One instance per project and data folder; its calls run one at a time.
 */
export class FileSnapshots {
  private readonly git: ShadowGit;
  private readonly log: SnapshotLog;
  private readonly intentFile: string;
  private readonly clock: () => number;
  private readonly maxAbandonedAgeMs: number;
  private ready: Promise<void> | undefined;
  /** Whether the start finished a restore a crash cut short (what `recover` reports). */
  private finishedAtStart = false;
  private tail: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: FileSnapshotsOptions) {
    const root = path.resolve(options.projectRoot);
    this.git = new ShadowGit(path.join(options.folder, 'git'), root);
    this.log = new SnapshotLog(path.join(options.folder, 'snapshots.jsonl'));
    this.intentFile = path.join(options.folder, 'restore-intent.json');
    this.clock = options.clock ?? Date.now;
    const age = options.maxAbandonedAgeMs ?? DEFAULT_SNAPSHOT_MAX_ABANDONED_AGE_MS;
    if (!Number.isFinite(age) || age < 0)
      throw new FileSnapshotError(
        'INVALID_INPUT',
        `maxAbandonedAgeMs must be a number of milliseconds, 0 or more (got ${String(age)}).`,
        { fault: 'user' },
      );
    this.maxAbandonedAgeMs = age;
  }

  /** The project folder snapshotted. */
  get projectRoot(): string {
    return this.git.workTree;
  }

  /** Snapshots the working tree as the state of `sessionId` at `point.seq`. */
  take(
    sessionId: string,
    point: { seq: number; phase: FileSnapshot['phase']; turnId?: string },
  ): Promise<FileSnapshot> {
    return this.serial(async () => {
      checkPoint(sessionId, point.seq);
      const tree = await this.git.snapshotTree();
      const entry: FileSnapshot = {
        n: await this.log.nextNumber(),
        sessionId,
        seq: point.seq,
        phase: point.phase,
        ...(point.turnId ? { turnId: point.turnId } : {}),
        tree,
        at: this.clock(),
      };
      await this.log.append(entry);
      return entry;
    });
  }

  /** The session's own snapshots, oldest first. */
  list(sessionId: string): Promise<FileSnapshot[]> {
    return this.serial(async () => (await this.log.all()).filter((entry) => entry.sessionId === sessionId));
  }

  /**
   * Puts the working tree back byte for byte as it was at `seq` of the session: the newest
   * snapshot at or before `seq` on the branch that leads there. Files added since are removed,
   * deleted ones come back, modes are kept; ignored files are left alone.
   */
  restore(
    sessionId: string,
    seq: number,
    options: {
      overwrite?: boolean;
      /**
       * The conversation goes back to `seq` too, written by the caller after this resolves: the
       * intent stays until `settleRewind`, so a crash before then is finished at the next start
       * by `onRewindFinished` as well as the files.
       */
      rewind?: boolean;
    } = {},
  ): Promise<SnapshotRestoreResult> {
    return this.serial(async () => {
      checkPoint(sessionId, seq);
      const target = await this.snapshotAt(sessionId, seq);
      const entries = await this.log.all();
      const latest = entries[entries.length - 1]!;
      // The tree as it is, compared with the latest snapshot (the user's changes) and with the point.
      const current = await this.git.snapshotTree();
      const [userChanged, changes] = await Promise.all([
        this.git.diff(latest.tree, current),
        this.git.diff(current, target.tree),
      ]);
      const touched = new Set(userChanged.map((change) => change.path));
      const conflicts = changes.map((change) => change.path).filter((file) => touched.has(file));
      if (conflicts.length > 0 && options.overwrite !== true)
        throw new FileRestoreConflictError(conflicts, { sessionId, seq });
      if (changes.length > 0) {
        await this.writeIntent({
          sessionId,
          seq,
          ...(target.turnId ? { turnId: target.turnId } : {}),
          to: target.tree,
          paths: changes.map((change) => change.path),
          ...(options.rewind ? { rewind: true } : {}),
        });
        await this.apply(changes);
      }
      const snapshot = await this.record(sessionId, seq, target.tree, target.turnId);
      if (!options.rewind) await fs.rm(this.intentFile, { force: true });
      return {
        sessionId,
        seq,
        snapshot,
        changed: changes.map((change) => change.path),
        overwritten: options.overwrite === true ? conflicts : [],
      };
    });
  }

  /** The conversation of a `restore(…, { rewind: true })` is written: its intent is done with. */
  settleRewind(): Promise<void> {
    return this.serial(() => fs.rm(this.intentFile, { force: true }));
  }

  /** Finishes a restore a crash cut short (any other call does this first too); true when there was one. */
  recover(): Promise<boolean> {
    return this.serial(async () => {
      const finished = this.finishedAtStart;
      this.finishedAtStart = false;
      return (await this.finishInterruptedRestore()) || finished;
    });
  }

  /**
   * Removes snapshots that lie on no session's active branch and are older than the configured age,
   * then lets git drop the files only they held. The latest snapshot of each session stays (a
   * restore compares with it); the conversation is never touched.
   */
  prune(): Promise<SnapshotPruneReport> {
    return this.serial(async () => {
      const entries = await this.log.all();
      const now = this.clock();
      const sessions = [...new Set(entries.map((entry) => entry.sessionId))];
      const ranges: HistoryRange[] = [];
      const unknown = new Set<string>();
      for (const sessionId of sessions) {
        try {
          ranges.push(...(await this.options.history.activePath(sessionId)));
        } catch {
          // A branch we cannot read is kept whole rather than guessed at.
          unknown.add(sessionId);
        }
      }
      const newestOfSession = new Map<string, number>();
      for (const entry of entries) newestOfSession.set(entry.sessionId, entry.n);
      const kept = entries.filter(
        (entry) =>
          unknown.has(entry.sessionId) ||
          newestOfSession.get(entry.sessionId) === entry.n ||
          now - entry.at < this.maxAbandonedAgeMs ||
          ranges.some((range) => onRange(entry, range)),
      );
      const removed = entries.length - kept.length;
      if (removed === 0) return { removed: 0, kept: kept.length };
      await this.log.rewrite(kept);
      await this.git.keepOnly(new Set(kept.map((entry) => entry.tree)));
      await this.git.collectGarbage();
      return { removed, kept: kept.length };
    });
  }

  /** Waits for the calls under way. */
  async close(): Promise<void> {
    await this.tail.catch(() => undefined);
    this.git.close();
  }

  /** The snapshot current at `seq`: the newest on the path to it. */
  private async snapshotAt(sessionId: string, seq: number): Promise<FileSnapshot> {
    const ranges = await this.options.history.pathTo(sessionId, seq);
    const entries = await this.log.all();
    let best: FileSnapshot | undefined;
    for (const entry of entries) {
      if (!ranges.some((range) => onRange(entry, range))) continue;
      if (!best || entry.seq > best.seq || (entry.seq === best.seq && entry.n > best.n)) best = entry;
    }
    if (best) return best;
    const own = entries.filter((entry) => entry.sessionId === sessionId);
    if (own.length === 0)
      throw new FileSnapshotError(
        'NO_FILE_SNAPSHOTS',
        `Session ${sessionId} has no file snapshots, so its files cannot be restored: snapshots are taken ` +
          'before and after each turn that may change files, once file snapshots are on. Nothing was changed.',
        { fault: 'user', data: { sessionId, seq } },
      );
    throw new FileSnapshotError(
      'SNAPSHOT_NOT_FOUND',
      `Session ${sessionId} has no file snapshot at or before seq ${seq} on its branch (its first is at seq ` +
        `${Math.min(...own.map((entry) => entry.seq))}): pick a later point. Nothing was changed.`,
      { fault: 'user', data: { sessionId, seq } },
    );
  }

  private async apply(changes: readonly TreeChange[]): Promise<void> {
    const contents = await this.git.readBlobs(
      changes.filter((change) => change.status !== 'D' && change.mode !== '160000').map((change) => change.blob),
    );
    await writeChanges(this.git.workTree, changes, contents, this.options.onRestoreStep);
  }

  private async record(sessionId: string, seq: number, tree: string, turnId?: string): Promise<FileSnapshot> {
    const entry: FileSnapshot = {
      n: await this.log.nextNumber(),
      sessionId,
      seq,
      phase: 'restore',
      ...(turnId ? { turnId } : {}),
      tree,
      at: this.clock(),
    };
    await this.log.append(entry);
    return entry;
  }

  /**
   * Written whole and renamed into place before the first file changes. Not fsynced: what it guards
   * against is a process killed mid-restore, and the files it guards are not fsynced either (as
   * `git checkout` does not); a file written before the kill is in the page cache all the same.
   */
  private async writeIntent(intent: RestoreIntent): Promise<void> {
    const temp = `${this.intentFile}.tmp`;
    await fs.writeFile(temp, JSON.stringify(intent));
    await fs.rename(temp, this.intentFile);
  }

  /** Rolls a cut-short restore forward to its point: the tree was checked, and the intent says where it goes. */
  private async finishInterruptedRestore(): Promise<boolean> {
    let text: string;
    try {
      text = await fs.readFile(this.intentFile, 'utf8');
    } catch {
      return false;
    }
    const parsed = RestoreIntentSchema.safeParse(safeJson(text));
    if (!parsed.success || !(await this.git.hasTree(parsed.data.to))) {
      // Torn before it was renamed into place cannot happen; a file someone damaged is not a restore to finish.
      await fs.rm(this.intentFile, { force: true });
      return false;
    }
    const intent = parsed.data;
    await removeStaging(this.git.workTree, intent.paths);
    const current = await this.git.snapshotTree();
    await this.apply(await this.git.diff(current, intent.to));
    await this.record(intent.sessionId, intent.seq, intent.to, intent.turnId);
    if (intent.rewind && this.options.onRewindFinished) {
      // Left in place when this fails, so the next start tries the conversation again.
      await this.options.onRewindFinished(intent.sessionId, intent.seq);
    }
    await fs.rm(this.intentFile, { force: true });
    return true;
  }

  private serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.tail.then(async () => {
      await this.prepare();
      return task();
    });
    this.tail = run.catch(() => undefined);
    return run;
  }

  private prepare(): Promise<void> {
    this.ready ??= (async () => {
      await fs.mkdir(this.options.folder, { recursive: true, mode: 0o700 });
      const excluded = [this.options.folder, ...(this.options.exclude ?? [])]
        .map((folder) => path.relative(this.git.workTree, path.resolve(folder)))
        .filter((relative) => relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative));
      await this.git.prepare(excluded);
      this.finishedAtStart = await this.finishInterruptedRestore();
    })();
    // A failed start (git missing) is tried again by the next call, not remembered forever.
    this.ready.catch(() => (this.ready = undefined));
    return this.ready;
  }
}

/**
 * The history as one straight line: every seq up to a point leads to it, and nothing is off the
 * active branch. A point past the session's end is refused.
 */
export function linearHistory(manager: {
  loadConversation(sessionId: string): Promise<{ lastSeq: number }>;
}): SnapshotHistory {
  return {
    async pathTo(sessionId, seq) {
      const { lastSeq } = await manager.loadConversation(sessionId);
      if (seq > lastSeq)
        throw new FileSnapshotError(
          'SNAPSHOT_NOT_FOUND',
          `Seq ${seq} is not in session ${sessionId} (its history ends at seq ${lastSeq}): pick a point in it. Nothing was changed.`,
          { fault: 'user', data: { sessionId, seq } },
        );
      return [{ sessionId, firstSeq: -1, lastSeq: seq }];
    },
    activePath(sessionId) {
      return Promise.resolve([{ sessionId, firstSeq: -1, lastSeq: Number.MAX_SAFE_INTEGER }]);
    },
  };
}

function onRange(entry: FileSnapshot, range: HistoryRange): boolean {
  return entry.sessionId === range.sessionId && entry.seq >= range.firstSeq && entry.seq <= range.lastSeq;
}

function checkPoint(sessionId: string, seq: number): void {
  if (!IdSchema.safeParse(sessionId).success)
    throw new FileSnapshotError('INVALID_INPUT', `"${String(sessionId)}" is not a session id.`, { fault: 'user' });
  if (!Number.isInteger(seq) || seq < -1)
    throw new FileSnapshotError(
      'INVALID_INPUT',
      `The point must be a seq of the session (an integer, -1 for before its first event); got ${String(seq)}.`,
      { fault: 'user', data: { sessionId } },
    );
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
