import type { Checkpoint, SessionStore } from '../store/index.js';
import { SessionError } from './errors.js';
import { activePath, onPath, pathThrough, readActiveEvents, resolvePoint, type HistoryPath } from './history-path.js';
import { liveSessionOf, type LiveSession } from './live-sessions.js';
import { assertWritable } from './session-checks.js';
import {
  branchTip,
  checkRestore,
  listBranches,
  pointBefore,
  recordAt,
  userMessageOf,
  type BranchInfo,
  type FileRestorer,
  type FileRestoreResult,
  type RewindOptions,
  type RewindResult,
} from './session-history.js';
import type { HistoryChangeReason, SessionManagerEvents } from './session-manager-types.js';

/** What the history control needs of the manager that owns it. */
export interface HistoryControlDeps {
  store: SessionStore;
  clock: () => number;
  /** The cached session (its record and conversation). */
  live: (sessionId: string) => Promise<LiveSession>;
  /** Runs `work` after every earlier write to the session, in its write order. */
  serialize: <T>(sessionId: string, work: () => Promise<T>) => Promise<T>;
  /** Resolves once every write queued for the session so far is applied. */
  applied: (sessionId: string) => Promise<void>;
  /** The request layer's caches of the session are let go (its branch moved). */
  releaseRequests: (sessionId: string) => void;
  /** Writes a new checkpoint version copying `old` (the request layer does). */
  restoreCheckpoint: (sessionId: string, old: Checkpoint) => Promise<Checkpoint>;
  /** Puts project files back (none: a rewind that restores files is refused). */
  fileRestorer: FileRestorer | undefined;
  emit: <K extends keyof SessionManagerEvents>(name: K, payload: SessionManagerEvents[K]) => void;
}

/**
 * The manager's way back through a session's history tree (decision 13): rewinds, edits, branch
 * switches and checkpoint restores, each refused while a turn runs on the session. The manager's
 * public methods of the same names delegate here; the tree's pure helpers are in session-history.ts.
 */
export class HistoryControl {
  /** Turns running now, per session (runTurn marks them): a change of branch waits for none, it is refused. */
  private readonly turnsRunning = new Map<string, number>();

  constructor(private readonly deps: HistoryControlDeps) {}

  /** Marks a turn running on the session until the returned function is called (once). */
  beginTurn(sessionId: string): () => void {
    this.turnsRunning.set(sessionId, (this.turnsRunning.get(sessionId) ?? 0) + 1);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      const left = (this.turnsRunning.get(sessionId) ?? 1) - 1;
      if (left > 0) this.turnsRunning.set(sessionId, left);
      else this.turnsRunning.delete(sessionId);
    };
  }

  turnRunning(sessionId: string): boolean {
    return this.turnsRunning.has(sessionId);
  }

  /** Whether a rewind can restore the project's files. */
  get restoresFiles(): boolean {
    return this.deps.fileRestorer !== undefined;
  }

  async rewind(id: string, options: RewindOptions): Promise<RewindResult> {
    const restore = checkRestore(options?.restore);
    if (options?.to === undefined) {
      throw new SessionError(
        'INVALID_INPUT',
        `Cannot rewind session "${id}": say where to with \`to\` (a seq or a block id; \`parley show\` lists them).`,
        { fault: 'user', data: { sessionId: id } },
      );
    }
    const files = restore !== 'conversation';
    const restorer = this.deps.fileRestorer;
    if (files && !restorer) {
      throw new SessionError(
        'FILE_SNAPSHOTS_NOT_CONFIGURED',
        `Cannot restore the files of session "${id}": this Parley keeps no file snapshots. Rewind with restore "conversation", or run a server with file snapshots on.`,
        { fault: 'user', data: { sessionId: id, restore } },
      );
    }
    const both = restore === 'both';
    const result = await this.changeBranch(id, 'rewound', async (live, path) => {
      // -1: back to before the first event, so a rewind to before the first message keeps nothing.
      const seq = options.to === -1 ? -1 : await resolvePoint(this.deps.store, live.record, path, options.to, 'rewind');
      const restored =
        files && restorer
          ? await restorer.restoreFiles({
              sessionId: id,
              seq,
              path: pathThrough(path, seq),
              overwrite: options.overwrite === true,
              rewind: both,
            })
          : undefined;
      return { seq, conversation: restore !== 'files', ...(restored ? { files: restored } : {}) };
    });
    // Files and conversation are both at the point: a crash before this had the restorer finish both.
    if (both) await restorer?.settleRewind?.();
    return result;
  }

  /**
   * The conversation half of a rewind whose file restore a crash cut short, finished when the
   * restorer finishes the files (at the next start). Idempotent: a conversation already at the
   * point is left as it is. A session that is gone or no longer writable is left too, with a warning.
   */
  async finishRewind(id: string, seq: number): Promise<void> {
    const live = await this.deps.live(id).catch(() => undefined);
    if (!live || live.record.readOnly === true || live.record.status === 'archived') {
      process.emitWarning(
        `A rewind of session "${id}" to seq ${seq} was cut short; its files are back at the point, but the session ${live ? 'no longer takes changes' : 'is gone'}, so its conversation was left.`,
      );
      return;
    }
    const { tip } = await activePath(this.deps.store, live.record);
    if (tip === seq) return;
    await this.changeBranch(id, 'rewound', async () => ({ seq, conversation: true }));
  }

  async editMessage(id: string, blockId: string): Promise<RewindResult> {
    return this.changeBranch(id, 'edited', async (live, path) => {
      const message = userMessageOf(id, live.conversation.blocks, blockId);
      return { seq: pointBefore(path, message.seq), conversation: true };
    });
  }

  async listBranches(id: string): Promise<BranchInfo[]> {
    const live = await this.deps.live(id);
    return this.deps.serialize(id, async () => {
      await this.deps.applied(id);
      return listBranches(this.deps.store, live.record, await activePath(this.deps.store, live.record));
    });
  }

  async switchBranch(id: string, branch: string): Promise<RewindResult> {
    return this.changeBranch(id, 'branch_switched', async (live, path) => {
      const branches = await listBranches(this.deps.store, live.record, path);
      return { seq: branchTip(id, branches, String(branch)), conversation: true };
    });
  }

  async restoreCheckpoint(id: string, version: number): Promise<Checkpoint> {
    const { record } = await this.deps.live(id);
    const versions = await this.deps.store.listCheckpoints(id);
    const old = versions.find((checkpoint) => checkpoint.version === version);
    if (!old) {
      throw new SessionError(
        'CHECKPOINT_NOT_FOUND',
        `Session "${id}" has no checkpoint version ${String(version)}; its versions are ${versions.map((each) => each.version).join(', ') || 'none'}. Give one of them (\`get_checkpoint\` lists them).`,
        { fault: 'user', data: { sessionId: id, version, versions: versions.map((each) => each.version) } },
      );
    }
    const path = await activePath(this.deps.store, record);
    if (!onPath(path, old.covers.throughSeq)) {
      throw new SessionError(
        'CHECKPOINT_NOT_ON_BRANCH',
        `Checkpoint version ${version} of session "${id}" summarizes the history through seq ${old.covers.throughSeq}, which is not on the active branch. Switch to the branch it belongs to first (\`parley branches ${id}\`), or pick another version.`,
        { fault: 'user', data: { sessionId: id, version, throughSeq: old.covers.throughSeq } },
      );
    }
    return this.deps.restoreCheckpoint(id, old);
  }

  /**
   * Moves the session's active branch to the seq `plan` picks (after its own checks), in the
   * session's write order: the record is written first (head, no native link), then the cached
   * conversation is read again from the active branch and the request caches let go.
   */
  private async changeBranch(
    id: string,
    reason: HistoryChangeReason,
    plan: (
      live: LiveSession,
      path: HistoryPath,
    ) => Promise<{ seq: number; conversation: boolean; files?: FileRestoreResult }>,
  ): Promise<RewindResult> {
    const { store, clock } = this.deps;
    this.refuseWhileTurnRuns(id, reason);
    const live = await this.deps.live(id);
    assertWritable(live.record);
    const result = await this.deps.serialize(id, async () => {
      await this.deps.applied(id);
      // Checked again in the write order: a turn may have begun while earlier writes were applied.
      this.refuseWhileTurnRuns(id, reason);
      const path = await activePath(store, live.record);
      const planned = await plan(live, path);
      if (!planned.conversation) return { session: structuredClone(live.record), ...planned };
      const logEnd = await store.lastSeq(id);
      const next = recordAt(live.record, planned.seq, logEnd, clock());
      await store.updateSession(id, () => next);
      const reloaded = liveSessionOf(id, next, await readActiveEvents(store, next));
      live.record = reloaded.record;
      live.conversation = reloaded.conversation;
      this.deps.releaseRequests(id);
      return { session: structuredClone(live.record), ...planned };
    });
    if (result.conversation) {
      this.deps.emit('session:history-changed', { sessionId: id, reason, seq: result.seq, session: result.session });
      this.deps.emit('session:updated', { sessionId: id, action: 'settings_changed', session: result.session });
    }
    return result;
  }

  private refuseWhileTurnRuns(sessionId: string, reason: HistoryChangeReason): void {
    if (!this.turnRunning(sessionId)) return;
    const what =
      reason === 'branch_switched' ? 'switch its branch' : reason === 'edited' ? 'edit a message' : 'rewind it';
    throw new SessionError(
      'TURN_IN_PROGRESS',
      `Session "${sessionId}" is running a turn; cancel it first (Esc in the TUI, \`cancel\` in the protocol), then ${what}.`,
      { fault: 'user', data: { sessionId } },
    );
  }
}
