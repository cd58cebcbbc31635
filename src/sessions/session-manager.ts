import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import {
  applyEvents,
  blockToMessage,
  describeIssues,
  emptyConversation,
  estimateTokens,
  loadTokenizer,
  MAIN_CONVERSATION,
  NewMessageSchema,
  TokenCounter,
  createTokenizer,
  type ChatMessage,
  type ConversationBlock,
  type ConversationState,
  type NewMessage,
  type RuntimeSessionData,
  type StreamEvent,
  type StreamEventDraft,
  type TokenCalibrationSnapshot,
} from '../conversation/index.js';
import {
  createFileStore,
  FORMAT_VERSION,
  KeyedQueue,
  SessionFilterSchema,
  SessionScopeSchema,
  SessionSettingsSchema,
  type Checkpoint,
  type CheckpointSummarizer,
  type NativeSessionRef,
  type SessionFilter,
  type SessionRecord,
  type SessionScope,
  type SessionSettings,
  type SessionStats,
  type SessionStore,
  type StoreWarning,
} from '../store/index.js';
import type { AgentDescriptionOverride, AgentDescriptionText } from './agent-descriptions.js';
import type { CompactionSettings, CompactionStatus } from './compaction.js';
import type { ContextOptions } from './context-builder.js';
import { SessionError } from './errors.js';
import type { BuiltRequest } from './request-builder.js';
import { checkBudget, RequestLayer, type AgentTypeSettings, type PreviewedRequest, type RalphLoopPatch, type RequestOptions } from './session-requests.js';
import type { Summarizer } from './summarizer.js';
import { checkSessionId, GetOrCreateSessionOptionsSchema, scopedSessionId, type GetOrCreateSessionOptions } from './session-ids.js';
import { TypedEmitter } from './typed-emitter.js';

export type SessionUpdateAction = 'created' | 'message_added' | 'events_appended' | 'cleared' | 'archived' | 'settings_changed';

/** The events a SessionManager emits (seed 003's broadcast events, plus the live stream). */
export interface SessionManagerEvents {
  'session:updated': { sessionId: string; action: SessionUpdateAction; session: SessionRecord };
  /** Every event appended to a session's log, after it is durable, in `seq` order. */
  'session:event': { sessionId: string; event: StreamEvent };
  'session:compaction-start': { sessionId: string; trigger: 'auto' | 'manual'; tokensBefore: number };
  'session:compaction-complete': {
    sessionId: string;
    trigger: 'auto' | 'manual';
    version: number;
    tokensBefore: number;
    tokensAfter: number;
    /** Which summarizer wrote the checkpoint (the model's, or the structural builder's). */
    summarizer: CheckpointSummarizer;
  };
  /**
   * Nothing changed; `message` says why. After `maxConsecutiveFailures` model failures in a row, automatic
   * compaction builds checkpoints structurally; after as many structural failures, it stops for the session.
   */
  'session:compaction-error': {
    sessionId: string;
    trigger: 'auto' | 'manual';
    message: string;
    code: string;
    consecutiveFailures: number;
    autoCompactionStopped: boolean;
  };
  'store:warning': StoreWarning;
}

export interface SessionManagerOptions {
  /** A file store in this folder (the default store). Ignored when `store` is given. */
  dataDir?: string;
  store?: SessionStore;
  /** The model that writes checkpoints (createBackendSummarizer builds one); without it, checkpoints are built structurally, with no model. */
  summarize?: Summarizer;
  /** Largest request in tokens (default 100,000). */
  tokenBudget?: number;
  /** Fraction of the budget at which compaction starts (default 0.9). */
  compactionThreshold?: number;
  /** The project folder whose files, notes and git history form the context. */
  projectRoot?: string;
  /** Milliseconds since the epoch; injectable for deterministic tests. */
  clock?: () => number;
  /** Counts tokens of a text; the tokenizer module provides the default. */
  countTokens?: (text: string) => number;
  /**
   * Start loading the tokenizer now, in the background (default true). A server that wants to be
   * ready first passes false and calls `loadTokenizer()` once it listens; the first count waits for it either way.
   */
  preloadTokenizer?: boolean;
  /** Tokens of the most recent messages a compaction keeps verbatim (default 20 % of the budget); per session in settings. */
  tailTokens?: number;
  /** Budget, threshold and tail per agent type; a session's own settings win. */
  agentTypes?: Record<string, AgentTypeSettings>;
  /** Role-file overrides of the built-in agent descriptions, per agent type. */
  agentDescriptions?: Record<string, AgentDescriptionOverride>;
  /** Compact automatically at the threshold (default true). `forceCompact` works either way. */
  autoCompact?: boolean;
  /** Start an automatic compaction when a turn ends past the threshold, not only before the next request (default true). */
  compactInBackground?: boolean;
  /** Bounds of the context (file tree depth and size, commits, note lengths). */
  context?: ContextOptions;
  /** Compaction guards: failures before automatic compaction stops, least reduction, timeout. */
  compaction?: CompactionSettings;
}

export const CreateSessionOptionsSchema = z.object({
  scope: SessionScopeSchema,
  agentType: z.string().min(1),
  /** Back end name (seed 004's architecture type). */
  backend: z.string().min(1).optional(),
  /** Default: a random UUID (draft sessions). */
  sessionId: z.string().optional(),
  title: z.string().optional(),
  agentProfileReference: z.string().optional(),
  settings: SessionSettingsSchema.optional(),
  readOnly: z.boolean().optional(),
  native: z.object({ backend: z.string(), nativeSessionId: z.string(), transcriptPath: z.string().optional() }).optional(),
});
export type CreateSessionOptions = z.input<typeof CreateSessionOptionsSchema>;

export const DEFAULT_TOKEN_BUDGET = 100_000;
export const DEFAULT_COMPACTION_THRESHOLD = 0.9;
/** Least time between two writes of one session's session.json while its events stream. */
const RECORD_FLUSH_INTERVAL_MS = 200;
/**
 * A cached session unused this long, with no write pending, is let go; it is loaded from its log
 * again when next needed. A long-running server that was asked to show many (or large imported)
 * sessions would otherwise keep every one of them in memory.
 */
const LIVE_SESSION_IDLE_MS = 10 * 60_000;
/** How often, at most, the cache is swept for such sessions (on use; no timer keeps the process alive). */
const LIVE_SESSION_SWEEP_MS = 60_000;

interface LiveSession {
  record: SessionRecord;
  conversation: ConversationState;
}

/**
 * Opens a SessionManager over a file store in `dataDir` or over the given store.
 * `close()` releases the data folder.
 */
export async function createSessionManager(options: SessionManagerOptions): Promise<SessionManager> {
  // Checked before a store is opened, so a bad option never leaves a data folder locked.
  checkBudget(options.tokenBudget ?? DEFAULT_TOKEN_BUDGET, options.compactionThreshold ?? DEFAULT_COMPACTION_THRESHOLD, 'createSessionManager');
  let store = options.store;
  let ownsStore = false;
  const warnings: StoreWarning[] = [];
  let manager: SessionManager | undefined;
  if (!store) {
    if (!options.dataDir) {
      throw new SessionError('INVALID_INPUT', 'createSessionManager needs `dataDir` (a folder for the file store) or `store`.', { fault: 'user' });
    }
    store = await createFileStore({
      dataDir: options.dataDir,
      onWarning: (warning) => (manager ? manager.reportWarning(warning) : warnings.push(warning)),
    });
    ownsStore = true;
  }
  // The tokenizer loads in the background (a listing never waits for it); the first count awaits it.
  if (!options.countTokens && options.preloadTokenizer !== false) void loadTokenizer();
  manager = new SessionManager(store, ownsStore, options);
  for (const warning of warnings) manager.reportWarning(warning);
  return manager;
}

export class SessionManager {
  readonly tokenBudget: number;
  readonly compactionThreshold: number;
  readonly projectRoot: string | undefined;
  protected readonly summarize: Summarizer | undefined;
  protected readonly clock: () => number;
  protected readonly countTokens: (text: string) => number;
  private readonly emitter = new TypedEmitter<SessionManagerEvents>((error) => {
    process.emitWarning(`A session event handler threw: ${String(error)}`);
  });
  private readonly live = new Map<string, Promise<LiveSession>>();
  /** When each cached session was last used (the manager's clock), and when the cache was last swept. */
  private readonly liveUsedAt = new Map<string, number>();
  private liveSweptAt = Number.NEGATIVE_INFINITY;
  /** One queue per session: writes to a session happen in call order. */
  private readonly queues = new KeyedQueue();
  /** Per session, appends being made durable, then applied and announced in call order: see `appendEvents`. */
  private readonly applying = new KeyedQueue();
  private readonly creating = new Map<string, Promise<SessionRecord>>();
  private closed = false;
  /** Request building, compaction and calibration (session-requests.ts). */
  private readonly requests: RequestLayer;

  constructor(
    readonly store: SessionStore,
    private readonly ownsStore: boolean,
    options: SessionManagerOptions = {},
  ) {
    this.tokenBudget = options.tokenBudget ?? DEFAULT_TOKEN_BUDGET;
    this.compactionThreshold = options.compactionThreshold ?? DEFAULT_COMPACTION_THRESHOLD;
    this.projectRoot = options.projectRoot;
    this.summarize = options.summarize;
    this.clock = options.clock ?? Date.now;
    this.countTokens = options.countTokens ?? estimateTokens;
    this.requests = new RequestLayer({
      store,
      // A caller's own counter (their model's tokenizer) is used for requests too; the BPE one otherwise.
      counter: new TokenCounter(options.countTokens ? { tokenizer: createTokenizer({ load: async () => options.countTokens!, encoding: 'custom' }) } : {}),
      clock: this.clock,
      tokenBudget: this.tokenBudget,
      compactionThreshold: this.compactionThreshold,
      ...(options.tailTokens !== undefined ? { tailTokens: options.tailTokens } : {}),
      ...(options.projectRoot !== undefined ? { projectRoot: options.projectRoot } : {}),
      ...(options.summarize ? { summarize: options.summarize } : {}),
      ...(options.autoCompact !== undefined ? { autoCompact: options.autoCompact } : {}),
      ...(options.compactInBackground !== undefined ? { compactInBackground: options.compactInBackground } : {}),
      ...(options.agentTypes ? { agentTypes: options.agentTypes } : {}),
      ...(options.agentDescriptions ? { agentDescriptions: options.agentDescriptions } : {}),
      ...(options.context ? { context: options.context } : {}),
      ...(options.compaction ? { compaction: options.compaction } : {}),
      live: (sessionId) => this.liveSession(sessionId),
      appendEvents: (sessionId, drafts) => this.appendEvents(sessionId, drafts),
      updateRecord: (sessionId, update) => this.updateRecord(sessionId, update),
      emit: (name, payload) => this.emit(name, payload as SessionManagerEvents[typeof name]),
    });
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

  /** Seed 003: the session for a feature or a task state; the same call returns the same session, across restarts. */
  async getOrCreateSession(options: GetOrCreateSessionOptions): Promise<SessionRecord> {
    this.assertOpen();
    const parsed = GetOrCreateSessionOptionsSchema.safeParse(options);
    if (!parsed.success) {
      throw new SessionError('INVALID_INPUT', `getOrCreateSession: ${describeIssues(parsed.error.issues)}.`, { fault: 'user' });
    }
    const scope = parsed.data;
    const sessionId = scopedSessionId(scope);
    const existing = await this.store.getSession(sessionId);
    if (existing) return existing;
    const session = await this.createSession({
      sessionId,
      agentType: scope.agentType,
      ...(scope.backend ? { backend: scope.backend } : {}),
      scope:
        scope.type === 'feature'
          ? { kind: 'feature', featureId: scope.featureId }
          : { kind: 'task', featureId: scope.featureId, taskId: scope.taskId, taskState: scope.taskState },
    });
    await this.linkScope(session);
    return session;
  }

  /** Creates a session with the given id, or a random UUID (drafts, workflow agents). Concurrent calls for one id create it once. */
  async createSession(options: CreateSessionOptions): Promise<SessionRecord> {
    this.assertOpen();
    const parsed = CreateSessionOptionsSchema.safeParse(options);
    if (!parsed.success) {
      throw new SessionError('INVALID_INPUT', `createSession: ${describeIssues(parsed.error.issues)}.`, { fault: 'user' });
    }
    const input = parsed.data;
    const sessionId = input.sessionId === undefined ? randomUUID() : checkSessionId(input.sessionId);
    const pending = this.creating.get(sessionId);
    if (pending) return pending;
    const creation = (async () => {
      const existing = await this.store.getSession(sessionId);
      if (existing) return existing;
      const now = this.clock();
      const record: SessionRecord = {
        formatVersion: FORMAT_VERSION,
        sessionId,
        type: input.backend ?? 'scripted',
        agentProfileReference: input.agentProfileReference ?? input.agentType,
        agentType: input.agentType,
        status: 'active',
        scope: input.scope,
        createdAt: now,
        updatedAt: now,
        lastActivity: now,
        settings: input.settings ?? {},
        stats: { totalMessages: 0, totalTokens: 0, totalCompactions: 0 },
        ...(input.title !== undefined ? { title: input.title } : {}),
        ...(input.readOnly ? { readOnly: true } : {}),
        ...(input.native ? { native: input.native } : {}),
      };
      const created = await this.store.createSession(record);
      this.emit('session:updated', { sessionId, action: 'created', session: created });
      return created;
    })();
    this.creating.set(sessionId, creation);
    try {
      return await creation;
    } finally {
      this.creating.delete(sessionId);
    }
  }

  /** The session's metadata; SESSION_NOT_FOUND when there is none. */
  async getSession(sessionId: string): Promise<SessionRecord> {
    this.assertOpen();
    const id = checkSessionId(sessionId);
    const cached = this.live.get(id);
    if (cached) return structuredClone((await cached).record);
    const record = await this.store.getSession(id);
    if (!record) throw notFound(id);
    return record;
  }

  async listSessions(filter: SessionFilter = {}): Promise<SessionRecord[]> {
    this.assertOpen();
    const parsed = SessionFilterSchema.safeParse(filter);
    if (!parsed.success) {
      throw new SessionError('INVALID_INPUT', `listSessions: ${describeIssues(parsed.error.issues)}.`, { fault: 'user' });
    }
    const sessions: SessionRecord[] = [];
    for await (const record of this.store.listSessions(parsed.data)) {
      // A session this manager is writing may be newer than its session.json (written at most every RECORD_FLUSH_INTERVAL_MS).
      const live = await this.live.get(record.sessionId)?.catch(() => undefined);
      sessions.push(live === undefined ? record : structuredClone(live.record));
    }
    sessions.sort((a, b) => (b.lastActivity ?? b.updatedAt) - (a.lastActivity ?? a.updatedAt));
    return sessions;
  }

  /** Changes per-session settings (token budget, threshold, tail, context sessions). */
  async updateSettings(sessionId: string, settings: SessionSettings): Promise<SessionRecord> {
    const parsed = SessionSettingsSchema.safeParse(settings);
    if (!parsed.success) {
      throw new SessionError('INVALID_INPUT', `updateSettings: ${describeIssues(parsed.error.issues)}.`, { fault: 'user' });
    }
    const record = await this.updateRecord(sessionId, (current) => ({ ...current, settings: { ...current.settings, ...parsed.data } }));
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
    const record = await this.updateRecord(sessionId, (current) => {
      if (current.scope.kind !== 'imported') {
        throw new SessionError('INVALID_INPUT', `Session "${current.sessionId}" was not imported; continue it as it is.`, { fault: 'user' });
      }
      const { readOnly: _readOnly, native: _native, ...rest } = current;
      return { ...rest, type: backend, updatedAt: this.clock() };
    });
    this.emit('session:updated', { sessionId: record.sessionId, action: 'settings_changed', session: record });
    return record;
  }

  /** Seed 003: sets status `archived`; the session stays on disk, readable, and no longer takes messages. */
  async archiveSession(sessionId: string): Promise<SessionRecord> {
    const record = await this.updateRecord(sessionId, (current) => ({ ...current, status: 'archived', updatedAt: this.clock() }));
    this.live.delete(record.sessionId);
    this.emit('session:updated', { sessionId: record.sessionId, action: 'archived', session: record });
    return record;
  }

  // ---- messages and events ---------------------------------------------------------------------

  /** Appends a user or assistant message (as a block); resolves once it is durable. */
  async addMessage(sessionId: string, message: NewMessage): Promise<ChatMessage> {
    const parsed = NewMessageSchema.safeParse(message);
    if (!parsed.success) {
      throw new SessionError('INVALID_INPUT', `addMessage: ${describeIssues(parsed.error.issues)}.`, { fault: 'user' });
    }
    const input = parsed.data;
    const now = this.clock();
    // Stored counts are exact (BPE) from the first message; characters / 4 only if the tokenizer cannot load.
    if (this.countTokens === estimateTokens) await loadTokenizer();
    const tokens = this.countTokens(input.content);
    const metadata = { ...input.metadata, tokens };
    const block: ConversationBlock =
      input.role === 'user'
        ? { id: randomUUID(), type: 'user_message', content: input.content, createdAt: now, completedAt: now, metadata, ...(input.pinned ? { pinned: true } : {}) }
        : { id: randomUUID(), type: 'assistant_text', content: input.content, createdAt: now, completedAt: now, metadata };
    const [event] = await this.appendEvents(sessionId, [{ type: 'block_complete', conversationId: MAIN_CONVERSATION, block, at: now }], 'message_added');
    return blockToMessage(block, event!.seq)!;
  }

  /**
   * Appends stream events (a back end's turn, a system notice) to the session's log. Resolves with
   * them numbered once they are durable; then emits each as `session:event`.
   *
   * Two phases. In call order with every other write to the session, the events take their place
   * in the log (`store.append` numbers appends in call order); the queue is released at once, so
   * appends made while a write is being flushed join the next flush (group commit) instead of
   * waiting one fsync each. Then, strictly in the same order, each append is applied to the cached
   * conversation and announced once it is durable.
   */
  async appendEvents(
    sessionId: string,
    drafts: readonly StreamEventDraft[],
    action: SessionUpdateAction = 'events_appended',
  ): Promise<StreamEvent[]> {
    this.assertOpen();
    const id = checkSessionId(sessionId);
    if (drafts.length === 0) return [];
    const issued = await this.serialize(id, async () => {
      const live = await this.liveSession(id);
      assertWritable(live.record);
      const now = this.clock();
      const stamped = drafts.map((draft) => ({ ...draft, at: draft.at ?? now }));
      // Wrapped so `serialize` does not wait for it: the queue moves on while this write is flushed.
      return { applied: this.applyInOrder(id, live, this.store.append(id, stamped), now, action) };
    });
    return issued.applied;
  }

  /** Applies and announces a durable append after every earlier one to the same session. */
  private applyInOrder(id: string, live: LiveSession, durable: Promise<StreamEvent[]>, now: number, action: SessionUpdateAction): Promise<StreamEvent[]> {
    // Settled into a value at once, so a failed write is never an unhandled rejection while it waits its turn.
    const outcome = durable.then(
      (events) => ({ events }),
      (error: unknown) => ({ error }),
    );
    return this.applying.run(id, async () => {
      const result = await outcome;
      if ('error' in result) throw result.error;
      const events = result.events;
      live.conversation = applyEvents(live.conversation, events);
      const added = countMessages(events);
      live.record = {
        ...live.record,
        lastActivity: now,
        updatedAt: now,
        metrics: live.conversation.metrics,
        stats: {
          ...live.record.stats,
          totalMessages: live.record.stats.totalMessages + added.messages,
          totalTokens: live.record.stats.totalTokens + added.tokens,
        },
      };
      const record = live.record;
      this.scheduleRecordFlush(id, live);
      for (const event of events) this.emit('session:event', { sessionId: id, event });
      this.emit('session:updated', { sessionId: id, action, session: record });
      this.requests.onAppended(id, record, live.conversation, events);
      return events;
    });
  }

  /**
   * The messages the next request sees (after the last `clearMessages`), newest last, at most
   * `limit`. `includeCleared` returns the whole history.
   */
  async getRecentMessages(sessionId: string, limit = 50, options: { includeCleared?: boolean } = {}): Promise<ChatMessage[]> {
    const live = await this.liveSession(checkSessionId(sessionId));
    const clearedThrough = options.includeCleared ? -1 : (live.record.clearedThroughSeq ?? -1);
    const messages: ChatMessage[] = [];
    const blocks = live.conversation.blocks;
    for (let index = blocks.length - 1; index >= 0 && messages.length < limit; index--) {
      const block = blocks[index]!;
      const seq = block.seq ?? -1;
      if (seq <= clearedThrough) break;
      const message = blockToMessage(block, seq);
      if (message) messages.push(message);
    }
    return messages.reverse();
  }

  /** The log after `afterSeq` (all of it by default): what a reconnecting client replays. */
  async getEvents(sessionId: string, options: { afterSeq?: number; limit?: number } = {}): Promise<StreamEvent[]> {
    this.assertOpen();
    const id = checkSessionId(sessionId);
    await this.liveSession(id);
    const events: StreamEvent[] = [];
    const limit = options.limit ?? Number.POSITIVE_INFINITY;
    for await (const event of this.store.readLog(id, options.afterSeq === undefined ? {} : { afterSeq: options.afterSeq })) {
      events.push(event);
      if (events.length >= limit) break;
    }
    return events;
  }

  /** The conversation rebuilt from the log: blocks, subagent threads, metrics. */
  async loadConversation(sessionId: string): Promise<ConversationState> {
    const live = await this.liveSession(checkSessionId(sessionId));
    return live.conversation;
  }

  /** Seed 004's RuntimeSessionData: the saved data plus the parsed blocks. */
  async getRuntimeSession(sessionId: string): Promise<RuntimeSessionData> {
    const id = checkSessionId(sessionId);
    const live = await this.liveSession(id);
    const names = await this.store.listTranscripts(id);
    const main = names.includes('main') ? await this.store.readTranscript(id, 'main') : undefined;
    const threads = await Promise.all(
      live.conversation.subagents.map(async (thread) => {
        const raw = names.includes(thread.id) ? await this.store.readTranscript(id, thread.id) : undefined;
        return { ...thread, ...(raw !== undefined ? { rawTranscript: raw } : {}) };
      }),
    );
    const record = live.record;
    return {
      sessionId: record.sessionId,
      type: record.type,
      agentProfileReference: record.agentProfileReference,
      status: record.status,
      ...(record.lastActivity !== undefined ? { lastActivity: record.lastActivity } : {}),
      createdAt: record.createdAt,
      ...(main !== undefined ? { rawTranscript: main } : {}),
      workspaceFiles: [],
      blocks: live.conversation.blocks,
      subagents: threads,
      metrics: live.conversation.metrics,
      lastSeq: live.conversation.lastSeq,
    };
  }

  async getCheckpoint(sessionId: string): Promise<Checkpoint | undefined> {
    this.assertOpen();
    const id = checkSessionId(sessionId);
    await this.requireSession(id);
    return this.store.readCheckpoint(id);
  }

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
   * Seed 003's clearMessages: the next request starts from the checkpoint alone. Nothing is
   * deleted: the history stays in the log and `getRecentMessages(…, { includeCleared: true })` shows it.
   */
  async clearMessages(sessionId: string): Promise<SessionRecord> {
    const id = checkSessionId(sessionId);
    const now = this.clock();
    const [marker] = await this.appendEvents(id, [
      {
        type: 'block_complete',
        conversationId: MAIN_CONVERSATION,
        block: { id: randomUUID(), type: 'system', subtype: 'cleared', content: 'Messages cleared: the next request starts from the checkpoint.', createdAt: now },
        at: now,
      },
    ]);
    const record = await this.updateRecord(id, (current) => ({ ...current, clearedThroughSeq: marker!.seq }));
    this.emit('session:updated', { sessionId: id, action: 'cleared', session: record });
    return record;
  }

  /** Waits for pending writes and releases the data folder (when the manager opened it). */
  // ---- requests and compaction (session-requests.ts) --------------------------------------------

  /**
   * Seed 002's request for the next turn: system prompt (# Your Role, # Context, # Checkpoint,
   * # Recent Conversation) and user prompt, never above the session's token budget. Compacts first
   * when the request reaches the threshold (and automatic compaction is armed); the context is rebuilt
   * from its sources and stored as context.json.
   */
  async buildRequest(sessionId: string, userMessage: string, options: RequestOptions = {}): Promise<BuiltRequest> {
    this.assertOpen();
    return this.requests.buildRequest(checkSessionId(sessionId), userMessage, options);
  }

  /** What `buildRequest` would return now, with no side effects: no compaction, no writes. */
  async previewRequest(sessionId: string, userMessage: string, options: RequestOptions = {}): Promise<PreviewedRequest> {
    this.assertOpen();
    return this.requests.previewRequest(checkSessionId(sessionId), userMessage, options);
  }

  /**
   * Compacts now, with optional focus instructions for the summary, or joins the compaction already
   * running. Resolves with the new checkpoint; rejects with the reason (and emits
   * `session:compaction-error`) when nothing changed.
   */
  async forceCompact(sessionId: string, options: { instructions?: string; signal?: AbortSignal } = {}): Promise<Checkpoint> {
    this.assertOpen();
    return this.requests.forceCompact(checkSessionId(sessionId), options);
  }

  /** Whether a compaction is running, failures in a row, and whether automatic compaction is stopped. */
  getCompactionStatus(sessionId: string): CompactionStatus {
    return this.requests.compactionStatus(checkSessionId(sessionId));
  }

  /** Real / estimated input tokens for the session, with the last pair; applied to every later estimate. */
  getTokenCalibration(sessionId: string): TokenCalibrationSnapshot {
    return this.requests.calibration(checkSessionId(sessionId));
  }

  /** Seed 002's Ralph Loop of a dev-task session (iteration, checks, last error): a new checkpoint version keeping the summary. */
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

  async close(): Promise<void> {
    if (this.closed) return;
    // Running compactions are cancelled first (nothing changes for them) while the manager can still write.
    await this.requests.close();
    this.closed = true;
    await this.queues.idleAll();
    await this.applying.idleAll();
    // Records waiting out their interval are written now.
    for (const wake of this.flushPauses.values()) wake();
    await Promise.allSettled([...this.flushing.values()]);
    if (this.ownsStore) await this.store.close();
  }

  // ---- internals shared with the compaction and request layers ----------------------------------

  private readonly flushing = new Map<string, Promise<void>>();
  private readonly dirty = new Set<string>();
  private readonly flushPauses = new Map<string, () => void>();
  /** When each session's record was last written (performance.now()). */
  private readonly recordWrittenAt = new Map<string, number>();

  /**
   * session.json is a cache of what the log implies (stats, metrics, activity). It is rewritten
   * atomically but off the append path, coalesced to one write in flight per session: on load the log wins.
   */
  private scheduleRecordFlush(sessionId: string, live: LiveSession): void {
    this.dirty.add(sessionId);
    if (this.flushing.has(sessionId)) return;
    const flush = (async () => {
      while (this.dirty.has(sessionId)) {
        // While events stream, rewriting it on every append would compete with the log's own fsyncs.
        const wait = (this.recordWrittenAt.get(sessionId) ?? Number.NEGATIVE_INFINITY) + RECORD_FLUSH_INTERVAL_MS - performance.now();
        if (wait > 0 && !this.closed) await this.pauseRecordFlush(sessionId, wait);
        this.dirty.delete(sessionId);
        const record = live.record;
        this.recordWrittenAt.set(sessionId, performance.now());
        try {
          await this.store.updateSession(sessionId, () => record);
        } catch (error) {
          this.reportWarning({ code: 'UNREADABLE_SESSION', sessionId, message: `Could not update session.json: ${String(error)}` });
        }
      }
    })().finally(() => this.flushing.delete(sessionId));
    this.flushing.set(sessionId, flush);
  }

  /** Waits out the interval, or until `close` needs the record written now. */
  private pauseRecordFlush(sessionId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.flushPauses.delete(sessionId);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.flushPauses.set(sessionId, wake);
    });
  }

  /** Runs `work` after every earlier write to the same session. */
  protected serialize<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    return this.queues.run(sessionId, work);
  }

  protected async updateRecord(sessionId: string, update: (current: SessionRecord) => SessionRecord): Promise<SessionRecord> {
    this.assertOpen();
    const id = checkSessionId(sessionId);
    return this.serialize(id, async () => {
      // Appends issued before this update are applied first, so it sees (and keeps) their effect.
      await this.applying.idle(id);
      const live = await this.liveSession(id);
      live.record = update(live.record);
      return this.store.updateSession(id, () => live.record);
    });
  }

  /** The cached session: its record and conversation, loaded from the log once. */
  protected liveSession(sessionId: string): Promise<LiveSession> {
    this.assertOpen();
    const now = this.clock();
    if (now - this.liveSweptAt >= LIVE_SESSION_SWEEP_MS) this.releaseIdleSessions(now);
    this.liveUsedAt.set(sessionId, now);
    let pending = this.live.get(sessionId);
    if (!pending) {
      pending = this.loadLive(sessionId);
      this.live.set(sessionId, pending);
      pending.catch(() => this.live.delete(sessionId));
    }
    return pending;
  }

  /** Drops cached sessions unused for `LIVE_SESSION_IDLE_MS` that have no write queued, being applied, or their record waiting to be written. */
  private releaseIdleSessions(now: number): void {
    this.liveSweptAt = now;
    for (const [id, usedAt] of this.liveUsedAt) {
      if (now - usedAt < LIVE_SESSION_IDLE_MS) continue;
      if (this.queues.busy(id) || this.applying.busy(id) || this.dirty.has(id) || this.flushing.has(id)) continue;
      this.live.delete(id);
      this.liveUsedAt.delete(id);
    }
  }

  private async loadLive(sessionId: string): Promise<LiveSession> {
    const record = await this.requireSession(sessionId);
    const events: StreamEvent[] = [];
    for await (const event of this.store.readLog(sessionId)) events.push(event);
    const conversation = applyEvents(emptyConversation(sessionId), events);
    // The log is the truth: stats in session.json are a cache and may lag after a crash.
    const counted = countMessages(events);
    const live: LiveSession = {
      conversation,
      record: {
        ...record,
        metrics: conversation.metrics,
        stats: { ...record.stats, totalMessages: counted.messages, totalTokens: counted.tokens },
      },
    };
    return live;
  }

  protected async requireSession(sessionId: string): Promise<SessionRecord> {
    const record = await this.store.getSession(sessionId);
    if (!record) throw notFound(sessionId);
    return record;
  }

  protected assertOpen(): void {
    if (this.closed) throw new SessionError('MANAGER_CLOSED', 'This SessionManager is closed; create a new one with createSessionManager().', { fault: 'user' });
  }

  /** Seed 002: a task keeps its sessions per state and its current state; a feature its session. */
  private async linkScope(session: SessionRecord): Promise<void> {
    const scope: SessionScope = session.scope;
    const now = new Date(this.clock()).toISOString();
    if (scope.kind === 'task') {
      const task = (await this.store.getTask(scope.featureId, scope.taskId)) ?? {
        formatVersion: FORMAT_VERSION,
        featureId: scope.featureId,
        taskId: scope.taskId,
        title: scope.taskId,
        description: '',
        dependencies: [],
        states: {},
        createdAt: now,
        updatedAt: now,
      };
      const ids = task.states[scope.taskState]?.sessionIds ?? [];
      if (!ids.includes(session.sessionId)) ids.push(session.sessionId);
      await this.store.putTask({ ...task, states: { ...task.states, [scope.taskState]: { sessionIds: ids } }, currentState: scope.taskState, updatedAt: now });
    } else if (scope.kind === 'feature') {
      const feature = (await this.store.getFeature(scope.featureId)) ?? {
        formatVersion: FORMAT_VERSION,
        featureId: scope.featureId,
        name: scope.featureId,
        createdAt: now,
        updatedAt: now,
      };
      if (feature.sessionId === undefined) await this.store.putFeature({ ...feature, sessionId: session.sessionId, updatedAt: now });
    }
  }
}

function notFound(sessionId: string): SessionError {
  return new SessionError('SESSION_NOT_FOUND', `No session "${sessionId}". List sessions with \`parley sessions\`.`, {
    fault: 'user',
    data: { sessionId },
  });
}

function assertWritable(record: SessionRecord): void {
  if (record.readOnly) {
    throw new SessionError(
      'READ_ONLY_SESSION',
      `Session "${record.sessionId}" is read only (imported); continue it with \`parley chat --session ${record.sessionId}\`, which starts a managed copy.`,
      { fault: 'user', data: { sessionId: record.sessionId } },
    );
  }
  if (record.status === 'archived') {
    throw new SessionError('SESSION_ARCHIVED', `Session "${record.sessionId}" is archived and takes no new messages.`, {
      fault: 'user',
      data: { sessionId: record.sessionId },
    });
  }
}

/** Messages (user and assistant text blocks completed in main) and their tokens among the events. */
function countMessages(events: readonly StreamEvent[]): { messages: number; tokens: number } {
  let messages = 0;
  let tokens = 0;
  for (const event of events) {
    if (event.type !== 'block_complete' || event.conversationId !== MAIN_CONVERSATION) continue;
    const block = event.block;
    if (block.type !== 'user_message' && block.type !== 'assistant_text') continue;
    messages += 1;
    const counted = block.metadata?.['tokens'];
    if (typeof counted === 'number') tokens += counted;
  }
  return { messages, tokens };
}
