import {
  blockToMessage,
  estimateTokens,
  MAIN_CONVERSATION,
  type ChatMessage,
  type ConversationState,
  type NewMessage,
  type RuntimeSessionData,
  type StreamEvent,
  type UnsequencedEvent,
  type TokenCalibrationSnapshot,
} from '../conversation/index.js';
import {
  type Checkpoint,
  type NativeSessionRef,
  type SessionFilter,
  type SessionPage,
  type SessionPageQuery,
  type SessionRecord,
  type SessionSearchQuery,
  type SessionSearchResult,
  type SessionSettings,
  type SessionStats,
  type SessionStore,
  type StoreWarning,
} from '../store/index.js';
import type { HookRunner } from '../hooks/index.js';
import type { AgentDescriptionOverride, AgentDescriptionText } from './agent-descriptions.js';
import type { CompactionStatus } from './compaction-controller.js';
import { SessionError } from './errors.js';
import { followCompactionHooks } from './turn-hooks.js';
import { readUnbuiltEvents } from './import/imported-store.js';
import { LiveSessionCache, liveSessionOf, loadLiveSession, type LiveSession } from './live-sessions.js';
import type { BuiltRequest } from './request-builder.js';
import { createRequestLayer } from './request-layer-setup.js';
import type { PreviewedRequest, RalphLoopPatch, RequestLayer, RequestOptions } from './session-requests.js';
import type { Summarizer } from './summarizer.js';
import { checkSessionId, type GetOrCreateSessionOptions } from './session-ids.js';
import {
  DEFAULT_COMPACTION_THRESHOLD,
  DEFAULT_TOKEN_BUDGET,
  type CreateSessionOptions,
  type SessionManagerEvents,
  type SessionManagerOptions,
  type SessionUpdateAction,
} from './session-manager-types.js';
import { listSessions, readEvents, readEventsBefore, recentMessages, runtimeSession } from './session-reads.js';
import { listSessionPage, pinChange, searchSessions, tagChange } from './session-finding.js';
import { notFound } from './session-checks.js';
import { linkScope, scopedSessionOptions, SessionCreator } from './session-creation.js';
import {
  backendChange,
  clearedMarker,
  continuationChange,
  labelChange,
  messageBlock,
  settingsChange,
} from './session-changes.js';
import { planFork, type ForkSessionOptions } from './session-fork.js';
import { activeCheckpoint, activePath, type HistoryPath } from './history-path.js';
import { HistoryControl } from './history-control.js';
import type { BranchInfo, RewindOptions, RewindResult } from './session-history.js';
import { openFileSnapshots, restorerOf } from './snapshot-setup.js';
import { SessionWriter } from './session-writer.js';
import { catchUp, StoreChangeFollower, type FollowStoreChangesOptions } from './store-changes.js';
import { TypedEmitter } from './typed-emitter.js';
import type { FileSnapshots } from './file-snapshots/index.js';

/**
 * Owns sessions: creates and finds them, appends messages and events, builds each request under the token budget,
 * compacts, and emits what changed.
 */
export class SessionManager {
  readonly tokenBudget: number;
  readonly compactionThreshold: number;
  readonly projectRoot: string | undefined;
  /** The hooks every turn runs (none when undefined). */
  readonly hooks: HookRunner | undefined;
  /** The project's file snapshots, taken around each turn that may change files (none when off). */
  readonly fileSnapshots: FileSnapshots | undefined;
  protected readonly summarize: Summarizer | undefined;
  protected readonly clock: () => number;
  protected readonly countTokens: (text: string) => number;
  private readonly emitter = new TypedEmitter<SessionManagerEvents>((error) => {
    process.emitWarning(`A session event handler threw: ${String(error)}`);
  });
  /** Appends and record changes, each session's in call order; session.json flushed off the append path (session-writer.ts). */
  private readonly writer: SessionWriter;
  /** The cached sessions, each loaded from its log once (live-sessions.ts). */
  private readonly cache: LiveSessionCache;
  /** New sessions, each created once (session-creation.ts). */
  private readonly creator = new SessionCreator({
    read: (sessionId) => this.store.getSession(sessionId),
    write: (record) => this.store.createSession(record),
    clock: () => this.clock(),
    onCreated: (session) => this.emit('session:updated', { sessionId: session.sessionId, action: 'created', session }),
  });
  private closed = false;
  /** Changes other processes make to the store, followed once `followStoreChanges` is called (store-changes.ts). */
  private follower: StoreChangeFollower | undefined;
  /** Request building, compaction and calibration (session-requests.ts). */
  private readonly requests: RequestLayer;
  /** Rewinds, edits, branch switches and checkpoint restores, refused while a turn runs (history-control.ts). */
  private readonly history: HistoryControl;

  constructor(
    readonly store: SessionStore,
    private readonly ownsStore: boolean,
    options: SessionManagerOptions = {},
  ) {
    this.tokenBudget = options.tokenBudget ?? DEFAULT_TOKEN_BUDGET;
    this.compactionThreshold = options.compactionThreshold ?? DEFAULT_COMPACTION_THRESHOLD;
    this.projectRoot = options.projectRoot;
    this.hooks = options.hooks;
    this.fileSnapshots = options.fileSnapshots
      ? openFileSnapshots(store, options, (sessionId, seq) => this.history.finishRewind(sessionId, seq))
      : undefined;
    this.summarize = options.summarize;
    this.clock = options.clock ?? Date.now;
    this.countTokens = options.countTokens ?? estimateTokens;
    this.cache = new LiveSessionCache({
      clock: () => this.clock(),
      load: async (sessionId) => loadLiveSession(this.store, sessionId, await this.requireSession(sessionId)),
      busy: (sessionId) => this.writer.busy(sessionId),
      onRelease: (sessionId) => {
        this.writer.release(sessionId);
        this.requests.release(sessionId);
      },
      ...(options.liveSessionIdleMs !== undefined ? { idleMs: options.liveSessionIdleMs } : {}),
      ...(options.maxLiveSessions !== undefined ? { maxSessions: options.maxLiveSessions } : {}),
    });
    this.writer = new SessionWriter({
      store,
      clock: this.clock,
      closed: () => this.closed,
      reportWarning: (warning) => this.reportWarning(warning),
      live: (sessionId) => this.liveSession(sessionId),
      onApplied: (sessionId, live, fresh, events, action) => {
        const record = live.record;
        if (fresh.length > 0) {
          for (const event of fresh) this.emit('session:event', { sessionId, event });
          this.emit('session:updated', { sessionId, action, session: record });
        }
        this.requests.onAppended(sessionId, record, live.conversation, events);
      },
      // Only a manager that follows other writers looks for their events: one that writes alone has none.
      catchUp: (sessionId, live, throughSeq) =>
        this.follower
          ? catchUp(this.store, (name, payload) => this.emit(name, payload), sessionId, live, throughSeq)
          : undefined,
    });
    this.requests = createRequestLayer(options, {
      store,
      clock: this.clock,
      tokenBudget: this.tokenBudget,
      compactionThreshold: this.compactionThreshold,
      live: (sessionId) => this.liveSession(sessionId),
      activeCheckpoint: async (sessionId) => {
        const { record } = await this.liveSession(sessionId);
        return activeCheckpoint(this.store, record, await activePath(this.store, record));
      },
      appendEvents: (sessionId, events) => this.appendEvents(sessionId, events),
      updateRecord: (sessionId, update) => this.updateRecord(sessionId, update),
      emit: (name, payload) => this.emit(name, payload as SessionManagerEvents[typeof name]),
    });
    this.history = new HistoryControl({
      store,
      clock: this.clock,
      live: (sessionId) => this.liveSession(sessionId),
      serialize: (sessionId, work) => this.serialize(sessionId, work),
      applied: (sessionId) => this.writer.writeQueues.applied(sessionId),
      releaseRequests: (sessionId) => this.requests.release(sessionId),
      restoreCheckpoint: (sessionId, old) => this.requests.restoreCheckpoint(sessionId, old),
      fileRestorer: options.fileRestorer ?? (this.fileSnapshots ? restorerOf(this.fileSnapshots) : undefined),
      emit: (name, payload) => this.emit(name, payload),
    });
    if (this.hooks) followCompactionHooks(this, this.hooks, this.projectRoot ?? process.cwd());
  }

  /** How many sessions are held in memory now (the rest are loaded from their logs when needed). */
  liveSessionCount(): number {
    return this.cache.size;
  }

  on<K extends keyof SessionManagerEvents>(name: K, handler: (payload: SessionManagerEvents[K]) => void): () => void {
    return this.emitter.on(name, handler);
  }

  protected emit<K extends keyof SessionManagerEvents>(name: K, payload: SessionManagerEvents[K]): void {
    this.emitter.emit(name, payload);
  }

  /** @internal surfaced store warnings (torn log tails and the like). */
  reportWarning(warning: StoreWarning): void {
    this.emitter.emit('store:warning', warning);
  }

  // ---- sessions -------------------------------------------------------------------------------

  /** The session for a feature or a task state; the same call returns the same session, across restarts. */
  async getOrCreateSession(options: GetOrCreateSessionOptions): Promise<SessionRecord> {
    this.assertOpen();
    const create = scopedSessionOptions(options);
    const existing = await this.store.getSession(create.sessionId);
    if (existing) return existing;
    const session = await this.createSession(create);
    await linkScope(this.store, session, this.clock());
    return session;
  }

  /** Creates a session with the given id, or a random UUID (drafts, workflow agents). Concurrent calls for one id create it once. */
  async createSession(options: CreateSessionOptions): Promise<SessionRecord> {
    this.assertOpen();
    return this.creator.create(options);
  }

  /** The session's metadata; SESSION_NOT_FOUND when there is none. */
  async getSession(sessionId: string): Promise<SessionRecord> {
    this.assertOpen();
    const id = checkSessionId(sessionId);
    const cached = this.cache.peek(id);
    if (cached) return structuredClone((await cached).record);
    const record = await this.store.getSession(id);
    if (!record) throw notFound(id);
    return record;
  }

  async listSessions(filter: SessionFilter = {}): Promise<SessionRecord[]> {
    this.assertOpen();
    return listSessions(this.store, filter, (sessionId) => this.cache.peek(sessionId));
  }

  /** One page of sessions, pinned first, then the most recently active (see `SessionPageQuery`). */
  async listSessionPage(query: SessionPageQuery = {}): Promise<SessionPage> {
    this.assertOpen();
    return listSessionPage(this.store, query, (sessionId) => this.cache.peek(sessionId));
  }

  /** The messages of every session holding every word of the query, newest first. */
  async searchSessions(query: SessionSearchQuery): Promise<SessionSearchResult> {
    this.assertOpen();
    return searchSessions(this.store, query);
  }

  /** Adds and removes tags of a session. */
  async tagSession(
    sessionId: string,
    change: { add?: readonly string[]; remove?: readonly string[] },
  ): Promise<SessionRecord> {
    const record = await this.updateRecord(sessionId, tagChange(change, this.clock));
    this.emit('session:updated', { sessionId: record.sessionId, action: 'settings_changed', session: record });
    return record;
  }

  /** Pins a session (listed before the others) or unpins it. */
  async pinSession(sessionId: string, pinned: boolean): Promise<SessionRecord> {
    const record = await this.updateRecord(sessionId, pinChange(pinned));
    this.emit('session:updated', { sessionId: record.sessionId, action: 'settings_changed', session: record });
    return record;
  }

  /** Changes per-session settings (token budget, threshold, tail, context sessions). */
  async updateSettings(sessionId: string, settings: SessionSettings): Promise<SessionRecord> {
    const record = await this.updateRecord(sessionId, settingsChange(settings));
    this.emit('session:updated', { sessionId: record.sessionId, action: 'settings_changed', session: record });
    return record;
  }

  /** Renames the session, or changes the role it runs as (its `agentType`, and a draft scope's role). */
  async relabelSession(sessionId: string, labels: { title?: string; role?: string }): Promise<SessionRecord> {
    const record = await this.updateRecord(sessionId, labelChange(labels, this.clock));
    this.emit('session:updated', { sessionId: record.sessionId, action: 'settings_changed', session: record });
    return record;
  }

  /** Links the session to the back end's own id (native continuity). */
  async setNativeSession(sessionId: string, native: NativeSessionRef): Promise<SessionRecord> {
    return this.updateRecord(sessionId, (current) => ({ ...current, native }));
  }

  /**
   * Continues an imported (read-only) session in Parley on a managed back end: the session becomes
   * writable and runs on `backend` from now on, with its imported history as context. The native
   * transcript it was imported from is never touched; only Parley's own log grows.
   */
  async continueImportedSession(sessionId: string, backend: string): Promise<SessionRecord> {
    const record = await this.updateRecord(sessionId, continuationChange(backend, this.clock));
    this.emit('session:updated', { sessionId: record.sessionId, action: 'settings_changed', session: record });
    return record;
  }

  /**
   * Makes `backend` the session's back end from its next turn on, linked to `native` (the back
   * end's own session, for native continuity) or to none (managed: Parley builds each request).
   * An imported session becomes writable; the native file it was imported from is never touched.
   * `continueOnBackend` (backend-move.ts) is the whole move: transcript, link and notice.
   */
  async moveToBackend(sessionId: string, backend: string, native?: NativeSessionRef): Promise<SessionRecord> {
    const record = await this.updateRecord(sessionId, backendChange(backend, native, this.clock));
    this.emit('session:updated', { sessionId: record.sessionId, action: 'settings_changed', session: record });
    return record;
  }

  /**
   * A new session whose history is the source's up to `options.at` (a seq or a block id of its
   * active branch; default its end), recording `forkedFrom: { sessionId, seq }`. The source is not
   * changed. The fork runs on `options.backend` (default the source's): a managed back end builds
   * its first request from the forked history; a native one is given a transcript written from it
   * (`continueOnBackend`). The history is shared, not copied: a fork is one record write, whatever
   * the length of the history, and readers walk on into the source (its checkpoints included).
   */
  async forkSession(sessionId: string, options: ForkSessionOptions = {}): Promise<SessionRecord> {
    this.assertOpen();
    const id = checkSessionId(sessionId);
    // Loading builds the log of an imported session whose blocks were not built yet.
    const live = await this.liveSession(id);
    const record = await this.serialize(id, async () => {
      await this.writer.writeQueues.applied(id);
      const planned = await planFork(this.store, live.record, live, options, this.clock());
      if (await this.store.getSession(planned.sessionId)) {
        throw new SessionError(
          'INVALID_INPUT',
          `Cannot fork into "${planned.sessionId}": a session with that id exists. Pick another id or leave it out.`,
          { fault: 'user', data: { sessionId: planned.sessionId } },
        );
      }
      return this.store.createSession(planned);
    });
    const description = await this.store.readAgentDescription(id);
    if (description) await this.store.writeAgentDescription({ ...description, sessionId: record.sessionId });
    this.emit('session:updated', { sessionId: record.sessionId, action: 'created', session: record });
    return record;
  }

  // ---- the history tree (session-history.ts) ------------------------------------------------------

  /** Whether a rewind can restore the project's files (a snapshot store or a `fileRestorer` is set). */
  get restoresFiles(): boolean {
    return this.history.restoresFiles;
  }

  /**
   * Takes the session back to `options.to` (a seq or a block id of its active branch, kept), as
   * `restore` says: the conversation (the default), the project's files (through the configured
   * `fileRestorer`), or both. Nothing is deleted: the events after the point stay in the log, as
   * the branch that was left (`listBranches`), and the next append starts a new branch. The next
   * request holds nothing past the point and uses the checkpoint that was current at it; a native
   * back end's link is dropped, so its next turn resumes from a transcript Parley writes from the
   * active branch. Refused, changing nothing, while a turn runs (TURN_IN_PROGRESS: cancel it
   * first), for a point not on the active branch (FORK_POINT_NOT_FOUND), and for files with no
   * snapshot store (FILE_SNAPSHOTS_NOT_CONFIGURED).
   */
  async rewind(sessionId: string, options: RewindOptions): Promise<RewindResult> {
    this.assertOpen();
    return this.history.rewind(checkSessionId(sessionId), options);
  }

  /**
   * Makes a new branch just before the user message `blockId` of the active branch, so its
   * edited text can be sent there: the caller sends it as the next turn (the protocol's
   * `edit_message` does). The message and what followed it stay, as the branch that was left.
   */
  async editMessage(sessionId: string, blockId: string): Promise<RewindResult> {
    this.assertOpen();
    return this.history.editMessage(checkSessionId(sessionId), blockId);
  }

  /** Every branch of the session's history, oldest first, the active one marked: tip, fork point, last message, time, turns, cost. */
  async listBranches(sessionId: string): Promise<BranchInfo[]> {
    this.assertOpen();
    return this.history.listBranches(checkSessionId(sessionId));
  }

  /** Makes `branch` (an id from `listBranches`) the active one; the others stay. Refused while a turn runs. */
  async switchBranch(sessionId: string, branch: string): Promise<RewindResult> {
    this.assertOpen();
    return this.history.switchBranch(checkSessionId(sessionId), branch);
  }

  /**
   * Makes an older checkpoint version current again: a new version that copies it (with
   * `restoredFrom`); none is deleted. The version must lie on the active branch.
   */
  async restoreCheckpoint(sessionId: string, version: number): Promise<Checkpoint> {
    this.assertOpen();
    return this.history.restoreCheckpoint(checkSessionId(sessionId), version);
  }

  /** @internal `runTurn` marks a turn running on the session until the returned function is called. */
  beginTurn(sessionId: string): () => void {
    return this.history.beginTurn(sessionId);
  }

  /** True while a turn runs on the session in this manager. */
  turnRunning(sessionId: string): boolean {
    return this.history.turnRunning(sessionId);
  }

  /** Keeps a native transcript with the session under `name`, replacing one of that name. */
  async saveTranscript(sessionId: string, name: string, content: string): Promise<void> {
    this.assertOpen();
    const id = checkSessionId(sessionId);
    await this.requireSession(id);
    await this.store.writeTranscript(id, name, content);
  }

  /** Sets status `archived`; the session stays on disk, readable, and no longer takes messages. */
  async archiveSession(sessionId: string): Promise<SessionRecord> {
    const record = await this.updateRecord(sessionId, (current) => ({
      ...current,
      status: 'archived',
      updatedAt: this.clock(),
    }));
    this.cache.forget(record.sessionId);
    this.emit('session:updated', { sessionId: record.sessionId, action: 'archived', session: record });
    return record;
  }

  // ---- messages and events ---------------------------------------------------------------------

  /** Appends a user or assistant message (as a block); resolves once it is durable. */
  async addMessage(sessionId: string, message: NewMessage): Promise<ChatMessage> {
    const block = await messageBlock(message, this.countTokens, this.clock);
    const [event] = await this.appendEvents(
      sessionId,
      [{ type: 'block_complete', conversationId: MAIN_CONVERSATION, block, at: block.createdAt }],
      'message_added',
    );
    return blockToMessage(block, event!.seq)!;
  }

  /**
   * Follows what other processes sharing this manager's store append and update (a PostgreSQL
   * store under several servers): cached sessions are brought up to the log, and their new events
   * are emitted as `session:event` / `session:updated` exactly as this manager's own. Returns a
   * function that stops following; `close()` stops it too. A store without `watch` (the file store,
   * which one process owns) has nothing to follow: this then does nothing.
   */
  followStoreChanges(options: FollowStoreChangesOptions = {}): () => Promise<void> {
    this.assertOpen();
    const store = this.store;
    if (!store.watch) return () => Promise.resolve();
    void this.follower?.stop();
    const follower = new StoreChangeFollower({
      ...options,
      store: store as typeof store & { watch: NonNullable<typeof store.watch> },
      cache: this.cache,
      writes: this.writer.writeQueues,
      emit: (name, payload) => this.emit(name, payload),
      onBranchMoved: (sessionId) => this.requests.release(sessionId),
    });
    this.follower = follower;
    return async () => {
      if (this.follower === follower) this.follower = undefined;
      await follower.stop();
    };
  }

  /**
   * Appends stream events (a back end's turn, a system notice) to the session's log. Resolves with
   * them numbered once they are durable; then emits each as `session:event`. Appends made while a
   * write is being flushed join the next flush (group commit; session-writer.ts).
   */
  async appendEvents(
    sessionId: string,
    events: readonly UnsequencedEvent[],
    action: SessionUpdateAction = 'events_appended',
  ): Promise<StreamEvent[]> {
    this.assertOpen();
    const id = checkSessionId(sessionId);
    if (events.length === 0) return [];
    return this.writer.append(id, events, action);
  }

  /**
   * The messages the next request sees (after the last `clearMessages`), newest last, at most
   * `limit`. `includeCleared` returns the whole history.
   */
  async getRecentMessages(
    sessionId: string,
    limit = 50,
    options: { includeCleared?: boolean } = {},
  ): Promise<ChatMessage[]> {
    return recentMessages(await this.liveSession(checkSessionId(sessionId)), limit, options);
  }

  /**
   * The log after `afterSeq` (all of it by default): what a reconnecting client replays. A session
   * not held in memory is read from its log without loading its conversation, so a page of a huge
   * session costs a page (`get_events` of a 1 GB import; bench/import.bench.ts).
   */
  async getEvents(sessionId: string, options: { afterSeq?: number; limit?: number } = {}): Promise<StreamEvent[]> {
    this.assertOpen();
    return readEvents(this.store, await this.recordToRead(checkSessionId(sessionId)), options);
  }

  /**
   * The newest `limit` events below `beforeSeq` (above `afterSeq` when given), oldest first: what a
   * client that opens a long session at its end reads, a page at a time towards the start.
   */
  async getEventsBefore(
    sessionId: string,
    options: { beforeSeq: number; afterSeq?: number; limit: number },
  ): Promise<StreamEvent[]> {
    this.assertOpen();
    // As getEvents: a session not held here is read from its log, not built into a conversation first.
    return readEventsBefore(this.store, await this.recordToRead(checkSessionId(sessionId)), options);
  }

  /** The conversation rebuilt from the log: blocks, subagent threads, metrics. */
  async loadConversation(sessionId: string): Promise<ConversationState> {
    const live = await this.liveSession(checkSessionId(sessionId));
    return live.conversation;
  }

  /**
   * For `parley show` of an imported session whose blocks are not built yet: its events parsed from
   * its copy, handed to `onEvents` in order, a batch at a time, and kept nowhere (nothing is
   * written: the first reader of its stored events builds its log). Resolves false, having read
   * nothing, for any other session, a session being built in this process, or one cached here:
   * read those with `getRuntimeSession`.
   */
  async parseUnbuiltSession(sessionId: string, onEvents: (events: readonly StreamEvent[]) => void): Promise<boolean> {
    this.assertOpen();
    const id = checkSessionId(sessionId);
    if (this.cache.peek(id) !== undefined) return false;
    return readUnbuiltEvents(this.store, id, onEvents);
  }

  /** RuntimeSessionData: the saved data plus the parsed blocks. */
  async getRuntimeSession(sessionId: string): Promise<RuntimeSessionData> {
    const id = checkSessionId(sessionId);
    return runtimeSession(this.store, id, await this.sessionToShow(id));
  }

  /**
   * The checkpoint the next request uses: the newest version that lies on the active branch (its
   * own, else its fork source's); a checkpoint of a branch that was left, or past a rewind point, is not.
   */
  async getCheckpoint(sessionId: string): Promise<Checkpoint | undefined> {
    this.assertOpen();
    const { record } = await this.liveSession(checkSessionId(sessionId));
    return activeCheckpoint(this.store, record, await activePath(this.store, record));
  }

  /**
   * The active branch: the runs of the logs it is made of (a fork's first ones are its source's),
   * oldest first, and the seq it ends at.
   */
  async getActiveBranch(sessionId: string): Promise<HistoryPath> {
    this.assertOpen();
    return activePath(this.store, await this.recordToRead(checkSessionId(sessionId)));
  }

  /**
   * The record a read of the log follows (its branches): the cached session's, which may be ahead
   * of the stored one (a write pending), else the stored record — the conversation is not loaded,
   * because reading a page of the log does not need it (an uncached session has no write pending).
   */
  private async recordToRead(sessionId: string): Promise<SessionRecord> {
    const cached = this.cache.peek(sessionId);
    if (cached !== undefined) return (await cached).record;
    return this.requireSession(sessionId);
  }

  /** Every checkpoint version the session wrote itself, oldest first (a fork reads its source's through `getCheckpoint`). */
  async listCheckpoints(sessionId: string): Promise<Checkpoint[]> {
    this.assertOpen();
    const id = checkSessionId(sessionId);
    await this.requireSession(id);
    return this.store.listCheckpoints(id);
  }

  async getStats(sessionId: string): Promise<SessionStats> {
    return (await this.getSession(sessionId)).stats;
  }

  /**
   * The next request starts from the checkpoint alone. Nothing is
   * deleted: the history stays in the log and `getRecentMessages(…, { includeCleared: true })` shows it.
   */
  async clearMessages(sessionId: string): Promise<SessionRecord> {
    const id = checkSessionId(sessionId);
    const [marker] = await this.appendEvents(id, [clearedMarker(this.clock())]);
    const record = await this.updateRecord(id, (current) => ({ ...current, clearedThroughSeq: marker!.seq }));
    this.emit('session:updated', { sessionId: id, action: 'cleared', session: record });
    return record;
  }

  // ---- requests and compaction (session-requests.ts) --------------------------------------------

  /**
   * The request for the next turn: system prompt (# Your Role, # Context, # Checkpoint,
   * # Recent Conversation) and user prompt, never above the session's token budget. Compacts first
   * when the request reaches the threshold (and automatic compaction is armed); the context is rebuilt
   * from its sources and stored as context.json.
   */
  async buildRequest(sessionId: string, userMessage: string, options: RequestOptions = {}): Promise<BuiltRequest> {
    this.assertOpen();
    return this.requests.buildRequest(checkSessionId(sessionId), userMessage, options);
  }

  /** What `buildRequest` would return now, with no side effects: no compaction, no writes. */
  async previewRequest(
    sessionId: string,
    userMessage: string,
    options: RequestOptions = {},
  ): Promise<PreviewedRequest> {
    this.assertOpen();
    return this.requests.previewRequest(checkSessionId(sessionId), userMessage, options);
  }

  /**
   * Compacts now, with optional focus instructions for the summary, or joins the compaction already
   * running. Resolves with the new checkpoint; rejects with the reason (and emits
   * `session:compaction-error`) when nothing changed.
   */
  async forceCompact(
    sessionId: string,
    options: { instructions?: string; signal?: AbortSignal } = {},
  ): Promise<Checkpoint> {
    this.assertOpen();
    return this.requests.forceCompact(checkSessionId(sessionId), options);
  }

  /** The running compaction (when it started, its trigger, tokens and summarizer), failures in a row, and whether automatic compaction is stopped. */
  getCompactionStatus(sessionId: string): CompactionStatus {
    return this.requests.compactionStatus(checkSessionId(sessionId));
  }

  /** Real / estimated input tokens for the session, with the last pair; applied to every later estimate. */
  getTokenCalibration(sessionId: string): TokenCalibrationSnapshot {
    return this.requests.calibration(checkSessionId(sessionId));
  }

  /** The Ralph Loop of a dev-task session (iteration, checks, last error): a new checkpoint version keeping the summary. */
  async updateRalphLoop(sessionId: string, patch: RalphLoopPatch): Promise<Checkpoint> {
    this.assertOpen();
    return this.requests.updateRalphLoop(checkSessionId(sessionId), patch);
  }

  /** The agent description requests use (built in per agent type, or as a role file set it). */
  async getAgentDescription(sessionId: string): Promise<AgentDescriptionText> {
    this.assertOpen();
    return this.requests.agentDescription(checkSessionId(sessionId));
  }

  /** Overrides the session's agent description (role text, instructions, tools), e.g. from a role file. */
  async setAgentDescription(sessionId: string, override: AgentDescriptionOverride): Promise<AgentDescriptionText> {
    this.assertOpen();
    return this.requests.setAgentDescription(checkSessionId(sessionId), override);
  }

  /** Waits for pending writes and releases the data folder (when the manager opened it). */
  async close(): Promise<void> {
    if (this.closed) return;
    // Running compactions are cancelled first (nothing changes for them) while the manager can still write.
    await this.requests.close();
    await this.follower?.stop();
    await this.fileSnapshots?.close();
    this.closed = true;
    // Queued writes finish, and records waiting out their interval are written now.
    await this.writer.close();
    if (this.ownsStore) await this.store.close();
  }

  // ---- internals shared with the compaction and request layers ----------------------------------

  /** Runs `work` after every earlier write to the same session. */
  protected serialize<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    return this.writer.serialize(sessionId, work);
  }

  protected async updateRecord(
    sessionId: string,
    update: (current: SessionRecord) => SessionRecord,
  ): Promise<SessionRecord> {
    this.assertOpen();
    return this.writer.updateRecord(checkSessionId(sessionId), update);
  }

  /**
   * A session for a reader that only shows it: the cached one; else an imported session whose
   * blocks are not built yet, parsed from its copy and not cached (nothing is written: the first
   * reader that needs its stored events builds its log); else the cached one, loaded.
   */
  private async sessionToShow(sessionId: string): Promise<LiveSession> {
    this.assertOpen();
    const cached = this.cache.peek(sessionId);
    if (cached !== undefined) return cached;
    const events: StreamEvent[] = [];
    const parsed = await readUnbuiltEvents(this.store, sessionId, (batch) =>
      batch.forEach((event) => events.push(event)),
    );
    if (!parsed) return this.liveSession(sessionId);
    return liveSessionOf(sessionId, await this.requireSession(sessionId), events);
  }

  /** The cached session: its record and conversation, loaded from the log once. */
  protected liveSession(sessionId: string): Promise<LiveSession> {
    this.assertOpen();
    return this.cache.get(sessionId);
  }

  protected async requireSession(sessionId: string): Promise<SessionRecord> {
    const record = await this.store.getSession(sessionId);
    if (!record) throw notFound(sessionId);
    return record;
  }

  protected assertOpen(): void {
    if (this.closed)
      throw new SessionError(
        'MANAGER_CLOSED',
        'This SessionManager is closed; create a new one with createSessionManager().',
        { fault: 'user' },
      );
  }
}
