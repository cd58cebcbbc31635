import type { Context } from '@opentelemetry/api';
import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import {
  MAIN_CONVERSATION,
  TokenCalibration,
  describeIssues,
  type ConversationBlock,
  type ConversationState,
  type StreamEvent,
  type UnsequencedEvent,
  type TokenCalibrationSnapshot,
  type TokenCounter,
} from '../conversation/index.js';
import {
  FORMAT_VERSION,
  KeyedQueue,
  RalphLoopSchema,
  type Checkpoint,
  type CheckpointInput,
  type CheckpointSummarizer,
  type SessionRecord,
  type SessionStore,
} from '../store/index.js';
import {
  describeAgent,
  renderAgentDescription,
  storedDescriptionOf,
  type AgentDescriptionOverride,
  type AgentDescriptionText,
} from './agent-descriptions.js';
import { emptySummary, renderCheckpoint, type CheckpointView } from './checkpoint-format.js';
import {
  CompactionController,
  type CompactionSettings,
  type CompactionSnapshot,
  type CompactionStatus,
} from './compaction-controller.js';
import type { CompactionTrigger } from './compaction.js';
import { buildContext, type ContextOptions } from './context-builder.js';
import { SessionError } from './errors.js';
import { projectConversation, type Projection } from './projection.js';
import {
  assembleRequest,
  measureRequest,
  withoutPendingUserMessage,
  type BuiltRequest,
  type ContextSection,
  type RequestSources,
} from './request-builder.js';
import type { Summarizer } from './summarizer.js';
import { UnitTokens } from './unit-tokens.js';

/**
 * The SessionManager's request and compaction layer: gathers a request's sources (agent description,
 * context rebuilt from its sources, newest checkpoint, projected history), builds it within the
 * session's budget, compacts automatically at the threshold (before a request, and in the background
 * when a turn ends), calibrates estimates against reported usage, and keeps the dev-task `ralphLoop`.
 */

/** Budget settings an agent type may set for all its sessions; a session's own settings win. */
export interface AgentTypeSettings {
  tokenBudget?: number;
  compactionThreshold?: number;
  tailTokens?: number;
}

export interface ResolvedSettings {
  tokenBudget: number;
  compactionThreshold: number;
  tailTokens: number;
}

/** Options of `buildRequest`: an `AbortSignal`, the project folder for context, and the turn's trace. */
export interface RequestOptions {
  signal?: AbortSignal;
  /** The project folder for this request's context, instead of the manager's `projectRoot`. */
  projectRoot?: string;
  /** The OpenTelemetry context of the turn the request is for: a compaction's span goes under it. */
  traceParent?: Context;
  /**
   * The names of the tools the request will carry: the role's Tools section lists exactly these.
   * Unset: the agent description's own list (a preview, which knows no turn's tools).
   */
  toolNames?: readonly string[];
}

/** A built request as `preview_request` shows it, with whether sending it would compact first. */
export interface PreviewedRequest extends BuiltRequest {
  /** buildRequest would compact first (the request is at or past the threshold and automatic compaction is armed). */
  wouldCompact: boolean;
}

export const RalphLoopPatchSchema = z
  .object({
    currentIteration: z.number().int().nonnegative().optional(),
    passedChecks: z.array(z.string()).optional(),
    failedChecks: z.array(z.string()).optional(),
    /** `null` clears it. */
    lastError: z.string().nullable().optional(),
  })
  .strict();
/** A change to the Ralph loop state in a session's checkpoint; `null` clears a field. */
export type RalphLoopPatch = z.infer<typeof RalphLoopPatchSchema>;

type CompactionEvents = {
  'session:compaction-start': { sessionId: string; trigger: CompactionTrigger; tokensBefore: number };
  'session:compaction-complete': {
    sessionId: string;
    trigger: CompactionTrigger;
    version: number;
    tokensBefore: number;
    tokensAfter: number;
    summarizer: CheckpointSummarizer;
  };
  'session:compaction-error': {
    sessionId: string;
    trigger: CompactionTrigger;
    message: string;
    code: string;
    consecutiveFailures: number;
    autoCompactionStopped: boolean;
  };
};

export interface RequestLayerOptions {
  store: SessionStore;
  counter: TokenCounter;
  clock: () => number;
  tokenBudget: number;
  compactionThreshold: number;
  /** Default verbatim tail; 20 % of the budget when unset. */
  tailTokens?: number;
  projectRoot?: string;
  summarize?: Summarizer;
  /** Compact automatically at the threshold (default true); `forceCompact` works either way. */
  autoCompact?: boolean;
  /** Start an automatic compaction as soon as a turn ends past the threshold, not only before the next request (default true). */
  compactInBackground?: boolean;
  agentTypes?: Record<string, AgentTypeSettings>;
  agentDescriptions?: Record<string, AgentDescriptionOverride>;
  context?: ContextOptions;
  compaction?: CompactionSettings;
  live(sessionId: string): Promise<{ record: SessionRecord; conversation: ConversationState }>;
  /** The checkpoint on the session's active branch (history-path.ts), read when none is cached. */
  activeCheckpoint(sessionId: string): Promise<Checkpoint | undefined>;
  appendEvents(sessionId: string, events: readonly UnsequencedEvent[]): Promise<StreamEvent[]>;
  updateRecord(sessionId: string, update: (current: SessionRecord) => SessionRecord): Promise<SessionRecord>;
  emit<K extends keyof CompactionEvents>(name: K, payload: CompactionEvents[K]): void;
}

interface Gathered {
  record: SessionRecord;
  blocks: readonly ConversationBlock[];
  checkpoint: Checkpoint | undefined;
  projection: Projection;
  sources: RequestSources;
  settings: ResolvedSettings;
}

export class RequestLayer {
  readonly compaction: CompactionController;
  private readonly checkpoints = new Map<string, Promise<Checkpoint | undefined>>();
  private readonly descriptions = new Map<string, Promise<{ description: AgentDescriptionText; text: string }>>();
  private readonly projections = new Map<
    string,
    { blocks: readonly ConversationBlock[]; version: number; cleared: number; projection: Projection }
  >();
  /** Each session's unit token counts, kept beside its projection and let go with it. */
  private readonly unitTokens = new Map<string, UnitTokens>();
  private readonly calibrations = new Map<string, TokenCalibration>();
  /** The raw estimate of the last built request per session, paired with the first usage the back end reports after it. */
  private readonly pendingEstimates = new Map<string, number>();
  /** Role + context + checkpoint tokens of the last built request: the cheap estimate used when a turn ends. */
  private readonly fixedTokens = new Map<string, number>();
  private readonly background = new Set<Promise<unknown>>();
  /** What context.json holds per session, so an unchanged context is not rewritten on every request. */
  private readonly storedContexts = new Map<string, string>();
  /** Sessions whose agent-description.json is known to exist. */
  private readonly storedDescriptions = new Set<string>();

  constructor(private readonly options: RequestLayerOptions) {
    checkBudget(options.tokenBudget, options.compactionThreshold, 'createSessionManager');
    this.compaction = new CompactionController(
      {
        counter: options.counter,
        clock: options.clock,
        summarize: options.summarize,
        snapshot: (sessionId, userMessage) => this.snapshot(sessionId, userMessage),
        writeCheckpoint: (sessionId, build) => this.writeCheckpoint(sessionId, build),
        committed: (sessionId, checkpoint, info) => this.committed(sessionId, checkpoint, info),
        started: (event) => options.emit('session:compaction-start', event),
        completed: ({ checkpoint: _checkpoint, ...event }) => options.emit('session:compaction-complete', event),
        failed: (event) => options.emit('session:compaction-error', event),
      },
      options.compaction,
    );
  }

  /**
   * Lets go of what is kept per session (the last projection and its blocks, checkpoint, agent
   * description, calibration, fingerprints of the files written): called when the manager lets the
   * session itself go, each is read or learned again when the session is next used. Without it every
   * session a long-running server ever built a request for would stay in memory. Kept while a
   * compaction of the session runs.
   */
  release(sessionId: string): void {
    if (this.compaction.current(sessionId)) return;
    this.checkpoints.delete(sessionId);
    this.loadedCheckpoints.delete(sessionId);
    this.descriptions.delete(sessionId);
    this.projections.delete(sessionId);
    this.unitTokens.delete(sessionId);
    this.calibrations.delete(sessionId);
    this.pendingEstimates.delete(sessionId);
    this.fixedTokens.delete(sessionId);
    this.storedContexts.delete(sessionId);
    this.storedDescriptions.delete(sessionId);
  }

  /** How many sessions have something kept here (what `release` lets go). */
  heldSessions(): number {
    const ids = new Set<string>();
    for (const held of [
      this.checkpoints,
      this.loadedCheckpoints,
      this.descriptions,
      this.projections,
      this.unitTokens,
      this.calibrations,
      this.pendingEstimates,
      this.fixedTokens,
      this.storedContexts,
    ])
      for (const id of held.keys()) ids.add(id);
    for (const id of this.storedDescriptions) ids.add(id);
    return ids.size;
  }

  /** Budget, threshold and tail for a session: its own settings, else its agent type's, else the manager's. */
  settingsFor(record: SessionRecord): ResolvedSettings {
    const agent = this.options.agentTypes?.[record.agentType] ?? {};
    const tokenBudget = record.settings.tokenBudget ?? agent.tokenBudget ?? this.options.tokenBudget;
    const compactionThreshold =
      record.settings.compactionThreshold ?? agent.compactionThreshold ?? this.options.compactionThreshold;
    const tail =
      record.settings.tailTokens ?? agent.tailTokens ?? this.options.tailTokens ?? Math.floor(tokenBudget * 0.2);
    // A tail as big as the budget would leave compaction nothing to fold.
    return { tokenBudget, compactionThreshold, tailTokens: Math.min(tail, Math.floor(tokenBudget * 0.5)) };
  }

  async buildRequest(sessionId: string, userMessage: string, options: RequestOptions = {}): Promise<BuiltRequest> {
    await this.options.counter.tokenizer.load();
    const running = this.compaction.current(sessionId);
    if (running) await running;
    let gathered = await this.gather(sessionId, userMessage, options);
    const budget = this.budget(sessionId, gathered.settings);
    let compacted = false;
    if (this.autoArmed(sessionId)) {
      const measured = measureRequest(gathered.sources, this.options.counter, budget);
      if (compactionHelps(measured, gathered.settings)) {
        const result = await this.compaction.compact(sessionId, {
          trigger: 'auto',
          userMessage,
          signal: options.signal,
          traceParent: options.traceParent,
        });
        if (result.ok) {
          compacted = true;
          gathered = await this.gather(sessionId, userMessage, options, gathered.sources.context);
        }
      }
    }
    await this.storeDescription(gathered.record);
    const request = assembleRequest(gathered.sources, this.options.counter, budget);
    this.pendingEstimates.set(sessionId, request.estimatedTokens);
    this.fixedTokens.set(sessionId, request.sections.role + request.sections.context + request.sections.checkpoint);
    await this.storeContext(sessionId, gathered.sources.context, request.sections.context);
    return { ...request, compacted };
  }

  /** What buildRequest would send now, with no side effects: no compaction, no writes, no calibration pairing. */
  async previewRequest(
    sessionId: string,
    userMessage: string,
    options: RequestOptions = {},
  ): Promise<PreviewedRequest> {
    await this.options.counter.tokenizer.load();
    const gathered = await this.gather(sessionId, userMessage, options);
    const budget = this.budget(sessionId, gathered.settings);
    const measured = measureRequest(gathered.sources, this.options.counter, budget);
    const request = assembleRequest(gathered.sources, this.options.counter, budget);
    return { ...request, wouldCompact: this.autoArmed(sessionId) && compactionHelps(measured, gathered.settings) };
  }

  /** Compacts now (or joins the compaction running); rejects with the reason when it fails, after the error event. */
  async forceCompact(
    sessionId: string,
    options: { instructions?: string; signal?: AbortSignal } = {},
  ): Promise<Checkpoint> {
    const { record } = await this.options.live(sessionId);
    assertCompactable(record);
    const result = await this.compaction.compact(sessionId, {
      trigger: 'manual',
      ...(options.instructions ? { instructions: options.instructions } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (!result.ok) throw result.error;
    return result.checkpoint;
  }

  compactionStatus(sessionId: string): CompactionStatus {
    return this.compaction.status(sessionId);
  }

  calibration(sessionId: string): TokenCalibrationSnapshot {
    return this.calibrationOf(sessionId).snapshot();
  }

  /** The Ralph Loop of a dev-task session: a new checkpoint version (trigger `update`) with the summary kept. */
  /**
   * Writes a new checkpoint version that copies `old` (an older version, checked by the caller to
   * lie on the active branch), so requests use it again; no version is deleted.
   */
  restoreCheckpoint(sessionId: string, old: Checkpoint): Promise<Checkpoint> {
    return this.writeCheckpoint(sessionId, () => {
      const { formatVersion: _format, version, sessionId: _session, createdAt: _created, ...kept } = old;
      return { ...kept, createdAt: new Date(this.options.clock()).toISOString(), restoredFrom: version };
    });
  }

  async updateRalphLoop(sessionId: string, patch: RalphLoopPatch): Promise<Checkpoint> {
    const parsed = RalphLoopPatchSchema.safeParse(patch);
    if (!parsed.success)
      throw new SessionError('INVALID_INPUT', `updateRalphLoop: ${describeIssues(parsed.error.issues)}.`, {
        fault: 'user',
      });
    const { record } = await this.options.live(sessionId);
    if (record.scope.kind !== 'task' || record.agentType !== 'dev') {
      throw new SessionError(
        'INVALID_INPUT',
        `Session "${sessionId}" is not a dev task session; only those carry a Ralph Loop.`,
        { fault: 'user', data: { sessionId } },
      );
    }
    assertCompactable(record);
    return this.writeCheckpoint(sessionId, (previous) => this.ralphCheckpoint(previous, parsed.data));
  }

  /** The next checkpoint version with the Ralph Loop changed and everything else kept. */
  private ralphCheckpoint(previous: Checkpoint | undefined, change: RalphLoopPatch): CheckpointInput {
    const current = previous?.ralphLoop ?? { currentIteration: 0, passedChecks: [], failedChecks: [] };
    const loop = RalphLoopSchema.parse({
      currentIteration: change.currentIteration ?? current.currentIteration,
      passedChecks: change.passedChecks ?? current.passedChecks,
      failedChecks: change.failedChecks ?? current.failedChecks,
      ...(change.lastError === null
        ? {}
        : change.lastError !== undefined
          ? { lastError: change.lastError }
          : current.lastError !== undefined
            ? { lastError: current.lastError }
            : {}),
    });
    const base: Omit<CheckpointInput, 'createdAt' | 'trigger' | 'tokens'> = previous
      ? {
          summary: previous.summary,
          ...(previous.summarizer ? { summarizer: previous.summarizer } : {}),
          pinned: previous.pinned,
          ...(previous.userRequests ? { userRequests: previous.userRequests } : {}),
          liveHandles: previous.liveHandles,
          covers: previous.covers,
        }
      : { summary: emptySummary(), pinned: [], liveHandles: [], covers: { throughSeq: -1, messageCount: 0 } };
    const view = { ...base, ralphLoop: loop };
    const input: CheckpointInput = {
      ...view,
      createdAt: new Date(this.options.clock()).toISOString(),
      trigger: 'update',
      tokens: {
        checkpoint: this.options.counter.countText(renderCheckpoint(view)),
        lastCompactionInput: previous?.tokens.lastCompactionInput ?? 0,
        totalSaved: previous?.tokens.totalSaved ?? 0,
      },
    };
    return input;
  }

  /**
   * Checkpoint writes of one session, one at a time, each built from the newest version at that
   * moment: a Ralph Loop update and a compaction finishing together never lose each other's change.
   */
  private writeCheckpoint(
    sessionId: string,
    build: (latest: Checkpoint | undefined) => CheckpointInput,
  ): Promise<Checkpoint> {
    return this.checkpointWrites.run(sessionId, async () => {
      const input = build(await this.checkpointOf(sessionId));
      const written = await this.options.store.writeCheckpoint(sessionId, input);
      this.rememberCheckpoint(sessionId, written);
      return written;
    });
  }

  private readonly checkpointWrites = new KeyedQueue();

  /** Replaces the session's agent description (a role file read by the server layer). */
  async setAgentDescription(sessionId: string, override: AgentDescriptionOverride): Promise<AgentDescriptionText> {
    const { record } = await this.options.live(sessionId);
    const description = describeAgent(record.agentType, {
      ...this.options.agentDescriptions?.[record.agentType],
      ...override,
    });
    const text = renderAgentDescription(description);
    await this.options.store.writeAgentDescription({
      formatVersion: FORMAT_VERSION,
      sessionId,
      ...description,
      createdAt: new Date(this.options.clock()).toISOString(),
      tokens: this.options.counter.countText(text),
    });
    this.descriptions.set(sessionId, Promise.resolve({ description, text }));
    this.storedDescriptions.add(sessionId);
    return description;
  }

  async agentDescription(sessionId: string): Promise<AgentDescriptionText> {
    const { record } = await this.options.live(sessionId);
    return (await this.descriptionOf(record)).description;
  }

  /** Called by the manager after events are durable: pairs reported usage with the last estimate, and compacts in the background when a turn ends past the threshold. */
  onAppended(
    sessionId: string,
    record: SessionRecord,
    conversation: ConversationState,
    events: readonly StreamEvent[],
  ): void {
    let turnEnded = false;
    for (const event of events) {
      if (event.conversationId !== MAIN_CONVERSATION) continue;
      if (event.type === 'metadata_update') {
        const usage = event.metadata.usage;
        const pending = this.pendingEstimates.get(sessionId);
        if (usage && pending !== undefined) {
          const real = usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
          // The first request of a turn is the one that was built; later ones in a tool loop carry tool results too.
          if (real > 0) {
            this.calibrationOf(sessionId).record(pending, real);
            this.pendingEstimates.delete(sessionId);
          }
        }
        if (event.metadata.turnComplete) turnEnded = true;
      } else if (
        event.type === 'block_complete' &&
        (event.block.type === 'assistant_text' || event.block.type === 'user_message')
      ) {
        turnEnded ||= event.block.type === 'assistant_text';
      }
    }
    if (turnEnded && this.options.compactInBackground !== false)
      this.maybeCompactInBackground(sessionId, record, conversation);
  }

  async close(): Promise<void> {
    await this.compaction.close();
    await Promise.allSettled([...this.background]);
  }

  // ---- internals -----------------------------------------------------------------------------------

  private autoArmed(sessionId: string): boolean {
    return this.options.autoCompact !== false && this.compaction.autoAllowed(sessionId);
  }

  private budget(sessionId: string, settings: ResolvedSettings) {
    return {
      tokenBudget: settings.tokenBudget,
      compactionThreshold: settings.compactionThreshold,
      calibrationRatio: this.calibrationOf(sessionId).ratio,
    };
  }

  private calibrationOf(sessionId: string): TokenCalibration {
    let calibration = this.calibrations.get(sessionId);
    if (!calibration) {
      calibration = new TokenCalibration();
      this.calibrations.set(sessionId, calibration);
    }
    return calibration;
  }

  private maybeCompactInBackground(sessionId: string, record: SessionRecord, conversation: ConversationState): void {
    const fixed = this.fixedTokens.get(sessionId);
    if (fixed === undefined || !this.autoArmed(sessionId) || this.compaction.current(sessionId)) return;
    if (record.readOnly || record.status !== 'active') return;
    const settings = this.settingsFor(record);
    const projection = this.project(
      sessionId,
      conversation.blocks,
      this.loadedCheckpoints.get(sessionId),
      record.clearedThroughSeq ?? -1,
    );
    const ratio = this.calibrationOf(sessionId).ratio;
    const tokensOf = this.unitTokensOf(sessionId).of;
    let history = 0;
    for (const unit of projection.messages) history += Math.ceil(tokensOf(unit) * ratio) + 1;
    if (!compactionHelps({ totalTokens: fixed + history, sections: { conversation: history } }, settings)) return;
    const run = this.compaction.compact(sessionId, { trigger: 'auto' });
    this.background.add(run);
    void run.finally(() => this.background.delete(run));
  }

  /** Checkpoints already loaded, readable synchronously (the cheap estimate when a turn ends). */
  private readonly loadedCheckpoints = new Map<string, Checkpoint>();

  private rememberCheckpoint(sessionId: string, checkpoint: Checkpoint): void {
    this.checkpoints.set(sessionId, Promise.resolve(checkpoint));
    this.loadedCheckpoints.set(sessionId, checkpoint);
  }

  private checkpointOf(sessionId: string): Promise<Checkpoint | undefined> {
    let pending = this.checkpoints.get(sessionId);
    if (!pending) {
      pending = this.options.activeCheckpoint(sessionId);
      this.checkpoints.set(sessionId, pending);
      pending.catch(() => this.checkpoints.delete(sessionId));
    }
    return pending.then((checkpoint) => {
      if (checkpoint) this.loadedCheckpoints.set(sessionId, checkpoint);
      return checkpoint;
    });
  }

  private descriptionOf(record: SessionRecord): Promise<{ description: AgentDescriptionText; text: string }> {
    let pending = this.descriptions.get(record.sessionId);
    if (!pending) {
      pending = (async () => {
        const stored = await storedDescriptionOf(this.options.store, record);
        const description: AgentDescriptionText = stored
          ? {
              agentType: stored.agentType,
              role: stored.role,
              instructions: stored.instructions,
              allowedTools: stored.allowedTools,
              ...(stored.toolInstructions !== undefined ? { toolInstructions: stored.toolInstructions } : {}),
            }
          : describeAgent(record.agentType, this.options.agentDescriptions?.[record.agentType]);
        return { description, text: renderAgentDescription(description) };
      })();
      this.descriptions.set(record.sessionId, pending);
      pending.catch(() => this.descriptions.delete(record.sessionId));
    }
    return pending;
  }

  /** context.json is what the last request used: rewritten only when that differs from what it holds. */
  private async storeContext(sessionId: string, context: readonly ContextSection[], tokens: number): Promise<void> {
    const sections: Record<string, string> = {};
    for (const section of context) sections[section.key] = section.text;
    const fingerprint = `${tokens}\u0000${JSON.stringify(sections)}`;
    if (this.storedContexts.get(sessionId) === fingerprint) return;
    await this.options.store.writeContext({
      formatVersion: FORMAT_VERSION,
      sessionId,
      updatedAt: new Date(this.options.clock()).toISOString(),
      sections,
      tokens,
    });
    this.storedContexts.set(sessionId, fingerprint);
  }

  /** The agent-description file: written with the first request, kept after. */
  private async storeDescription(record: SessionRecord): Promise<void> {
    if (this.storedDescriptions.has(record.sessionId)) return;
    if (await this.options.store.readAgentDescription(record.sessionId)) {
      this.storedDescriptions.add(record.sessionId);
      return;
    }
    const { description, text } = await this.descriptionOf(record);
    await this.options.store.writeAgentDescription({
      formatVersion: FORMAT_VERSION,
      sessionId: record.sessionId,
      ...description,
      createdAt: new Date(this.options.clock()).toISOString(),
      tokens: this.options.counter.countText(text),
    });
    this.storedDescriptions.add(record.sessionId);
  }

  private project(
    sessionId: string,
    blocks: readonly ConversationBlock[],
    checkpoint: Checkpoint | undefined,
    cleared: number,
  ): Projection {
    const cached = this.projections.get(sessionId);
    const version = checkpoint?.version ?? 0;
    if (cached && cached.blocks === blocks && cached.version === version && cached.cleared === cleared)
      return cached.projection;
    const projection = projectConversation({
      blocks,
      clearedThroughSeq: cleared,
      keyPrefix: `${sessionId}:`,
      ...(checkpoint ? { checkpoint } : {}),
    });
    this.projections.set(sessionId, { blocks, version, cleared, projection });
    this.unitTokensOf(sessionId).retainOnly(projection.messages);
    return projection;
  }

  private unitTokensOf(sessionId: string): UnitTokens {
    let counts = this.unitTokens.get(sessionId);
    if (!counts) {
      counts = new UnitTokens(this.options.counter);
      this.unitTokens.set(sessionId, counts);
    }
    return counts;
  }

  private async gather(
    sessionId: string,
    userMessage: string,
    options: RequestOptions,
    context?: readonly ContextSection[],
  ): Promise<Gathered> {
    const { record, conversation } = await this.options.live(sessionId);
    const projectRoot = options.projectRoot ?? this.options.projectRoot;
    const [checkpoint, description, sections] = await Promise.all([
      this.checkpointOf(sessionId),
      this.descriptionOf(record),
      context ??
        buildContext(
          {
            session: record,
            store: this.options.store,
            ...(projectRoot ? { projectRoot } : {}),
            ...(options.signal ? { signal: options.signal } : {}),
          },
          this.options.context,
        ),
    ]);
    const settings = this.settingsFor(record);
    const projection = this.project(sessionId, conversation.blocks, checkpoint, record.clearedThroughSeq ?? -1);
    const unitTokens = this.unitTokensOf(sessionId);
    await unitTokens.countAhead(projection.messages, options.signal);
    return {
      record,
      blocks: conversation.blocks,
      checkpoint,
      projection,
      settings,
      sources: {
        role: options.toolNames ? renderAgentDescription(description.description, options.toolNames) : description.text,
        context: sections,
        checkpoint: renderCheckpoint(checkpoint),
        conversation: withoutPendingUserMessage(projection.messages, userMessage),
        userMessage,
        counts: unitTokens,
      },
    };
  }

  private async snapshot(sessionId: string, userMessage: string): Promise<CompactionSnapshot> {
    const gathered = await this.gather(sessionId, userMessage, {});
    const budget = this.budget(sessionId, gathered.settings);
    const counter = this.options.counter;
    const cleared = gathered.record.clearedThroughSeq ?? -1;
    return {
      sessionId,
      blocks: gathered.blocks,
      clearedThroughSeq: cleared,
      checkpoint: gathered.checkpoint,
      messages: gathered.projection.messages,
      tokenBudget: gathered.settings.tokenBudget,
      tailTokens: gathered.settings.tailTokens,
      tokensBefore: measureRequest(gathered.sources, counter, budget).totalTokens,
      ...(gathered.sources.counts ? { counts: gathered.sources.counts } : {}),
      measureWith: (candidate: CheckpointView & Pick<Checkpoint, 'covers'>) => {
        const projection = projectConversation({
          blocks: gathered.blocks,
          checkpoint: candidate,
          clearedThroughSeq: cleared,
          keyPrefix: `${sessionId}:`,
        });
        const sources: RequestSources = {
          ...gathered.sources,
          checkpoint: renderCheckpoint(candidate),
          conversation: withoutPendingUserMessage(projection.messages, userMessage),
        };
        return measureRequest(sources, counter, budget).totalTokens;
      },
    };
  }

  private async committed(
    sessionId: string,
    checkpoint: Checkpoint,
    info: { trigger: CompactionTrigger; tokensBefore: number; tokensAfter: number },
  ): Promise<void> {
    this.rememberCheckpoint(sessionId, checkpoint);
    const now = this.options.clock();
    const nowIso = new Date(now).toISOString();
    await this.options.updateRecord(sessionId, (current) => ({
      ...current,
      updatedAt: now,
      stats: { ...current.stats, totalCompactions: current.stats.totalCompactions + 1, lastCompactionAt: nowIso },
    }));
    // So UIs show it in the conversation; its seq is past the checkpoint, and the projection never shows it to the model.
    await this.options.appendEvents(sessionId, [
      {
        type: 'block_complete',
        conversationId: MAIN_CONVERSATION,
        block: {
          id: randomUUID(),
          type: 'system',
          subtype: 'compaction',
          content: `Compacted (${info.trigger}${describeSummarizer(checkpoint.summarizer)}): the conversation through seq ${checkpoint.covers.throughSeq} is now summarized in checkpoint v${checkpoint.version}; the request went from ${info.tokensBefore} to ${info.tokensAfter} tokens. Nothing was deleted.`,
          createdAt: now,
          data: {
            version: checkpoint.version,
            trigger: info.trigger,
            throughSeq: checkpoint.covers.throughSeq,
            messageCount: checkpoint.covers.messageCount,
            tokensBefore: info.tokensBefore,
            tokensAfter: info.tokensAfter,
            ...(checkpoint.summarizer ? { summarizer: checkpoint.summarizer } : {}),
          },
        },
        at: now,
      },
    ]);
  }
}

/** ", structural, no model" and the like, for the compaction notice. */
function describeSummarizer(summarizer: CheckpointSummarizer | undefined): string {
  if (!summarizer) return '';
  if (summarizer.kind === 'structural')
    return summarizer.fallback
      ? ', built structurally because the model summarizer failed repeatedly'
      : ', built structurally without a model';
  const name = [summarizer.backend, summarizer.model].filter(Boolean).join(' ');
  return name ? `, summarized by ${name}` : '';
}

function thresholdTokens(settings: ResolvedSettings): number {
  return Math.floor(settings.tokenBudget * settings.compactionThreshold);
}

/**
 * At the threshold, and only when the history is what fills the request: when the history already
 * fits in the verbatim tail (a huge new message, a huge context), compacting could not cut it and
 * would only count as a failure; fitting the request handles it instead.
 */
function compactionHelps(
  measured: { totalTokens: number; sections: { conversation: number } },
  settings: ResolvedSettings,
): boolean {
  return measured.totalTokens >= thresholdTokens(settings) && measured.sections.conversation > settings.tailTokens;
}

/** Validates manager-level budget options (session settings are validated by their schema). */
export function checkBudget(tokenBudget: number, compactionThreshold: number, where: string): void {
  if (!Number.isInteger(tokenBudget) || tokenBudget <= 0) {
    throw new SessionError(
      'INVALID_INPUT',
      `${where}: tokenBudget must be a positive whole number of tokens, got ${String(tokenBudget)}.`,
      { fault: 'user' },
    );
  }
  if (!(compactionThreshold > 0 && compactionThreshold <= 1)) {
    throw new SessionError(
      'INVALID_INPUT',
      `${where}: compactionThreshold must be a fraction above 0 and at most 1 (0.9 = 90 % of the budget), got ${String(compactionThreshold)}.`,
      { fault: 'user' },
    );
  }
}

function assertCompactable(record: SessionRecord): void {
  if (record.readOnly) {
    throw new SessionError(
      'READ_ONLY_SESSION',
      `Session "${record.sessionId}" is read only (imported); its checkpoints cannot change.`,
      { fault: 'user', data: { sessionId: record.sessionId } },
    );
  }
  if (record.status === 'archived') {
    throw new SessionError(
      'SESSION_ARCHIVED',
      `Session "${record.sessionId}" is archived; its checkpoints cannot change.`,
      { fault: 'user', data: { sessionId: record.sessionId } },
    );
  }
}
