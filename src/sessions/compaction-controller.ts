import type { Context } from '@opentelemetry/api';
import { ATTR, inSpan, markSpanFailed, PARLEY_ATTR } from '../telemetry/index.js';
import { ParleyError, type ConversationBlock, type TokenCounter } from '../conversation/index.js';
import type { Checkpoint, CheckpointInput, CheckpointSummarizer, CheckpointSummary } from '../store/index.js';
import { renderCheckpoint, type CheckpointView } from './checkpoint-format.js';
import {
  cancelledCompaction,
  chunkForSummary,
  collectIntents,
  collectLiveHandles,
  COMPACTION_SYSTEM_PROMPT,
  CompactionError,
  type CompactionPlan,
  type CompactionTrigger,
  planCompaction,
  prunedForSummary,
  renderForSummary,
  summarizeChunks,
} from './compaction.js';
import type { ProjectedMessage } from './projection.js';
import type { KeptTokenCounts } from './request-builder.js';
import { buildStructuralSummary } from './structural-summarizer.js';
import type { Summarizer } from './summarizer.js';

/**
 * Runs compactions for a SessionManager (the pure steps are in compaction.ts): one at a time per
 * session, its status visible while it runs, the model summarizer's circuit breaker and the
 * structural fallback after repeated model failures.
 */

/** Everything one compaction reads, taken when it starts. */
export interface CompactionSnapshot {
  sessionId: string;
  blocks: readonly ConversationBlock[];
  clearedThroughSeq?: number;
  checkpoint: Checkpoint | undefined;
  /** The visible conversation (projected with the current checkpoint), placeholder included. */
  messages: readonly ProjectedMessage[];
  tokenBudget: number;
  tailTokens: number;
  /** Calibrated tokens of the request as it stands. */
  tokensBefore: number;
  /** Calibrated tokens of the same request with `checkpoint` in place of the current one. */
  measureWith(checkpoint: CheckpointView & Pick<Checkpoint, 'covers'>): number;
  /** The session's token counts kept between requests; unset: the counter's shared cache. */
  counts?: KeptTokenCounts;
}

export interface CompactionHost {
  readonly counter: TokenCounter;
  readonly clock: () => number;
  /** The model summarizer; without one, every compaction uses the structural builder. */
  readonly summarize: Summarizer | undefined;
  snapshot(sessionId: string, userMessage: string): Promise<CompactionSnapshot>;
  /**
   * Writes a new checkpoint version built from the newest one at that moment (a `ralphLoop` update may
   * have landed while the summarizer ran), with no other checkpoint write in between.
   */
  writeCheckpoint(sessionId: string, build: (latest: Checkpoint | undefined) => CheckpointInput): Promise<Checkpoint>;
  /** After the checkpoint is written: log a `system` compaction block, update stats, drop caches. */
  committed(
    sessionId: string,
    checkpoint: Checkpoint,
    info: { trigger: CompactionTrigger; tokensBefore: number; tokensAfter: number },
  ): Promise<void>;
  started(event: { sessionId: string; trigger: CompactionTrigger; tokensBefore: number }): void;
  completed(event: {
    sessionId: string;
    trigger: CompactionTrigger;
    version: number;
    tokensBefore: number;
    tokensAfter: number;
    checkpoint: Checkpoint;
    summarizer: CheckpointSummarizer;
  }): void;
  failed(event: {
    sessionId: string;
    trigger: CompactionTrigger;
    message: string;
    code: string;
    consecutiveFailures: number;
    autoCompactionStopped: boolean;
  }): void;
}

export interface CompactionSettings {
  /**
   * Model failures in a row after which automatic compaction uses the structural builder instead of the
   * model, and structural failures in a row after which automatic compaction stops for the session. Default 3.
   */
  maxConsecutiveFailures?: number;
  /** Least cut of the request for a compaction to count as a success. Default 0.05. */
  minReduction?: number;
  /** Time allowed to one compaction (all summarizer calls). Default 300,000 ms. */
  timeoutMs?: number;
  /** Output the summarizer may need, kept out of its input allowance: a fraction of the budget. Default 0.15. */
  outputReserve?: number;
  /** Newest tool output (in characters) kept whole in the summarizer's input. Default 4 × 10 % of the budget. */
  protectToolChars?: number;
}

/** Options of one compaction: its trigger, extra instructions and the trace it belongs to. */
export interface CompactOptions {
  trigger: CompactionTrigger;
  instructions?: string;
  /** The message about to be sent, when compaction runs for a request (it counts toward the request). */
  userMessage?: string;
  signal?: AbortSignal;
  /** The OpenTelemetry context the `compaction` span goes under (the turn it runs for). */
  traceParent?: Context;
}

/** How a compaction ended: the new checkpoint with the tokens before and after, or the error. */
export type CompactionResult =
  | { ok: true; checkpoint: Checkpoint; tokensBefore: number; tokensAfter: number }
  | { ok: false; error: CompactionError | ParleyError };

/** What a client needs to show a compaction that is running: it may have connected after `compaction_started`. */
export interface RunningCompaction {
  /** ISO 8601: when the compaction was asked for. */
  startedAt: string;
  trigger: CompactionTrigger;
  /** Calibrated tokens of the request being compacted; absent until the history is read. */
  tokensBefore?: number;
  /** Who is writing the checkpoint: the model, or the structural builder (then `fallback` when the model failed repeatedly). */
  summarizer: CheckpointSummarizer;
}

/** Whether a compaction is running for a session, and since when. */
export interface CompactionStatus {
  running: boolean;
  /** Present while `running`. */
  startedAt?: string;
  trigger?: CompactionTrigger;
  tokensBefore?: number;
  summarizer?: CheckpointSummarizer;
  /** Failed compactions in a row, reset by a success of the configured summarizer (the model's, when there is one). */
  consecutiveFailures: number;
  /** Automatic compaction uses the structural builder because the model summarizer failed repeatedly. */
  structuralFallback: boolean;
  autoCompactionStopped: boolean;
}

/** Runs compactions for many sessions: one at a time per session, with the structural fallback and the circuit breaker. */
export class CompactionController {
  private readonly running = new Map<string, Promise<CompactionResult>>();
  /** What is known of each running compaction; set and cleared with `running`. */
  private readonly progress = new Map<string, RunningCompaction>();
  private readonly failures = new Map<string, number>();
  private readonly structuralFailures = new Map<string, number>();
  private readonly stopped = new Set<string>();
  private readonly shutdown = new AbortController();
  private readonly settings: Required<Omit<CompactionSettings, 'protectToolChars'>> &
    Pick<CompactionSettings, 'protectToolChars'>;

  constructor(
    private readonly host: CompactionHost,
    settings: CompactionSettings = {},
  ) {
    this.settings = {
      maxConsecutiveFailures: settings.maxConsecutiveFailures ?? 3,
      minReduction: settings.minReduction ?? 0.05,
      timeoutMs: settings.timeoutMs ?? 300_000,
      outputReserve: settings.outputReserve ?? 0.15,
      ...(settings.protectToolChars !== undefined ? { protectToolChars: settings.protectToolChars } : {}),
    };
  }

  status(sessionId: string): CompactionStatus {
    const progress = this.progress.get(sessionId);
    return {
      running: progress !== undefined,
      ...(progress ? { ...progress, summarizer: { ...progress.summarizer } } : {}),
      consecutiveFailures: this.failures.get(sessionId) ?? 0,
      structuralFallback: this.inFallback(sessionId),
      autoCompactionStopped: this.stopped.has(sessionId),
    };
  }

  /** The compaction running for the session (when it started, its trigger, who writes it), if any. */
  runningCompaction(sessionId: string): RunningCompaction | undefined {
    const progress = this.progress.get(sessionId);
    return progress ? { ...progress, summarizer: { ...progress.summarizer } } : undefined;
  }

  /** The compaction running for the session, if any. */
  current(sessionId: string): Promise<CompactionResult> | undefined {
    return this.running.get(sessionId);
  }

  /** Whether automatic compaction may still run for the session (the circuit breaker is not open). */
  autoAllowed(sessionId: string): boolean {
    return !this.stopped.has(sessionId);
  }

  /**
   * Compacts the session, or joins the compaction already running for it. Never rejects: the result
   * says whether it worked; a failure is also reported to the host (the `session:compaction-error` event).
   */
  compact(sessionId: string, options: CompactOptions): Promise<CompactionResult> {
    const existing = this.running.get(sessionId);
    if (existing) return existing;
    if (options.trigger === 'auto' && this.stopped.has(sessionId)) {
      return Promise.resolve({
        ok: false,
        error: new CompactionError(
          'COMPACTION_STOPPED',
          `Automatic compaction is stopped for session "${sessionId}" after repeated failures; use forceCompact.`,
          {
            fault: 'system',
            data: { sessionId },
          },
        ),
      });
    }
    const run = inSpan(
      'compaction',
      { [ATTR.conversationId]: sessionId, 'parley.compaction.trigger': options.trigger },
      async (span) => {
        const result = await this.run(sessionId, options);
        if (result.ok) {
          span.setAttributes({
            [PARLEY_ATTR.tokensBefore]: result.tokensBefore,
            [PARLEY_ATTR.tokensAfter]: result.tokensAfter,
            [PARLEY_ATTR.checkpointVersion]: result.checkpoint.version,
          });
        } else {
          markSpanFailed(span, result.error.code, result.error.message);
        }
        return result;
      },
      options.traceParent,
    ).finally(() => {
      this.running.delete(sessionId);
      this.progress.delete(sessionId);
    });
    this.running.set(sessionId, run);
    return run;
  }

  /** Cancels running compactions (nothing changes for them) and waits until they have stopped. */
  async close(): Promise<void> {
    this.shutdown.abort(new Error('the session manager is closing'));
    await Promise.allSettled([...this.running.values()]);
  }

  /** A model is configured but has failed too often in a row: automatic compaction builds structurally. */
  private inFallback(sessionId: string): boolean {
    return (
      this.host.summarize !== undefined && (this.failures.get(sessionId) ?? 0) >= this.settings.maxConsecutiveFailures
    );
  }

  private async run(sessionId: string, options: CompactOptions): Promise<CompactionResult> {
    const { trigger } = options;
    const model = this.host.summarize;
    const fallback = trigger === 'auto' && this.inFallback(sessionId);
    let summarizer: CheckpointSummarizer =
      !model || fallback ? { kind: 'structural', ...(fallback ? { fallback: true } : {}) } : modelSummarizer(model);
    const progress: RunningCompaction = { startedAt: new Date(this.host.clock()).toISOString(), trigger, summarizer };
    this.progress.set(sessionId, progress);
    let started = false;
    try {
      const snapshot = await this.host.snapshot(sessionId, options.userMessage ?? '');
      progress.tokensBefore = snapshot.tokensBefore;
      this.host.started({ sessionId, trigger, tokensBefore: snapshot.tokensBefore });
      started = true;
      if (summarizer.kind === 'model') {
        try {
          return await this.attempt(snapshot, options, summarizer);
        } catch (error) {
          const failure = asCompactionFailure(error);
          const count = this.countFailure(sessionId, 'model');
          const fallBack =
            trigger === 'auto' &&
            count >= this.settings.maxConsecutiveFailures &&
            failure.code !== 'COMPACTION_CANCELLED' &&
            failure.code !== 'COMPACTION_NOTHING_TO_COMPACT';
          if (!fallBack) this.progress.delete(sessionId);
          this.report(sessionId, trigger, failure, {
            message: fallBack
              ? `${failure.message} After ${count} failures in a row of the model summarizer, this and later automatic compactions build the checkpoint structurally (no model) until a model compaction succeeds; forceCompact still asks the model.`
              : failure.message,
          });
          if (!fallBack) return { ok: false, error: failure };
          summarizer = { kind: 'structural', fallback: true };
          progress.summarizer = summarizer;
        }
      }
      return await this.attempt(snapshot, options, summarizer);
    } catch (error) {
      const failure = asCompactionFailure(error);
      if (!started) this.host.started({ sessionId, trigger, tokensBefore: 0 });
      const kind = summarizer.kind;
      const count = this.countFailure(sessionId, kind);
      const stop =
        kind === 'structural' && (this.structuralFailures.get(sessionId) ?? 0) >= this.settings.maxConsecutiveFailures;
      if (stop) this.stopped.add(sessionId);
      this.progress.delete(sessionId);
      this.report(sessionId, trigger, failure, {
        message: stop
          ? `${failure.message} Automatic compaction is now stopped for this session after ${count} failures in a row${model ? '' : ' (the structural checkpoint builder: no model is configured)'}; requests are still kept within the budget by pruning and truncation, and forceCompact can be used.`
          : summarizer.kind === 'structural' && summarizer.fallback
            ? `${failure.message} (The checkpoint was being built structurally, because the model summarizer failed repeatedly.)`
            : failure.message,
      });
      return { ok: false, error: failure };
    }
  }

  /** One compaction with one summarizer: fold, progress check, write. Throws when it fails; nothing is written then. */
  private async attempt(
    snapshot: CompactionSnapshot,
    options: CompactOptions,
    summarizer: CheckpointSummarizer,
  ): Promise<CompactionResult> {
    const { sessionId } = snapshot;
    const { trigger } = options;
    const tokensBefore = snapshot.tokensBefore;
    const checkpoint = await this.fold(snapshot, summarizer, options);
    const tokensAfter = snapshot.measureWith(checkpoint);
    const needed = Math.floor(tokensBefore * (1 - this.settings.minReduction));
    if (tokensAfter > needed) {
      throw new CompactionError(
        'COMPACTION_NO_PROGRESS',
        `The compaction would cut the request only from ${tokensBefore} to ${tokensAfter} tokens (at least ${Math.round(this.settings.minReduction * 100)} % is required), so it was not kept.`,
        { data: { tokensBefore, tokensAfter } },
      );
    }
    const written = await this.host.writeCheckpoint(sessionId, (latest) => ({
      ...checkpoint,
      ...(latest?.ralphLoop ? { ralphLoop: latest.ralphLoop } : {}),
      tokens: {
        ...checkpoint.tokens,
        totalSaved: (snapshot.checkpoint?.tokens.totalSaved ?? 0) + Math.max(0, tokensBefore - tokensAfter),
      },
    }));
    // A structural fallback keeps the session under budget but says nothing about the model: its failures still count.
    if (summarizer.kind === 'model' || !this.host.summarize) this.failures.delete(sessionId);
    this.structuralFailures.delete(sessionId);
    this.stopped.delete(sessionId);
    await this.host.committed(sessionId, written, { trigger, tokensBefore, tokensAfter });
    // Not running any more by the time clients hear it ended, so a status read after the notice agrees with it.
    this.progress.delete(sessionId);
    this.host.completed({
      sessionId,
      trigger,
      version: written.version,
      tokensBefore,
      tokensAfter,
      checkpoint: written,
      summarizer,
    });
    return { ok: true, checkpoint: written, tokensBefore, tokensAfter };
  }

  private countFailure(sessionId: string, kind: CheckpointSummarizer['kind']): number {
    const count = (this.failures.get(sessionId) ?? 0) + 1;
    this.failures.set(sessionId, count);
    if (kind === 'structural')
      this.structuralFailures.set(sessionId, (this.structuralFailures.get(sessionId) ?? 0) + 1);
    return count;
  }

  private report(
    sessionId: string,
    trigger: CompactionTrigger,
    failure: CompactionError | ParleyError,
    options: { message: string },
  ): void {
    this.host.failed({
      sessionId,
      trigger,
      code: failure.code,
      message: options.message,
      consecutiveFailures: this.failures.get(sessionId) ?? 0,
      autoCompactionStopped: this.stopped.has(sessionId),
    });
  }

  /** Plans, builds the summary (the model's, pruned and chunked, or the structural one), and assembles the new checkpoint (not yet written). */
  private async fold(
    snapshot: CompactionSnapshot,
    summarizer: CheckpointSummarizer,
    options: CompactOptions,
  ): Promise<CheckpointInput> {
    const counter = this.host.counter;
    const counts = snapshot.counts ?? counter;
    const tokensOf = (unit: ProjectedMessage) => counts.countKeyed(unit.key, unit.content);
    let plan = planCompaction(snapshot.messages, { tailTokens: snapshot.tailTokens, tokensOf });
    // Asked for explicitly, a compaction folds the tail too rather than doing nothing.
    if (!plan && options.trigger === 'manual') plan = planCompaction(snapshot.messages, { tailTokens: 0, tokensOf });
    if (!plan) {
      throw new CompactionError(
        'COMPACTION_NOTHING_TO_COMPACT',
        'There is nothing to compact: every message after the checkpoint is in the verbatim tail or still in flight.',
        {
          fault: 'user',
        },
      );
    }
    const previous = snapshot.checkpoint;
    const budget = snapshot.tokenBudget;
    const fromSeq = Math.min(...plan.fold.map((unit) => unit.firstSeq));

    const maxEntryTokens = Math.max(200, Math.floor(budget * 0.02));
    const intents = collectIntents(snapshot.blocks, {
      throughSeq: plan.throughSeq,
      ...(snapshot.clearedThroughSeq !== undefined ? { clearedThroughSeq: snapshot.clearedThroughSeq } : {}),
      ...(previous ? { previous } : {}),
      counter,
      maxEntryTokens,
      recentTokens: Math.floor(budget * 0.04),
    });

    let summary: CheckpointSummary;
    const model = this.host.summarize;
    if (summarizer.kind === 'structural' || !model) {
      if (this.shutdown.signal.aborted || options.signal?.aborted)
        throw cancelledCompaction(options.signal?.aborted ? options.signal : this.shutdown.signal);
      const folded = new Set(plan.fold.flatMap((unit) => unit.blockIds));
      summary = buildStructuralSummary({
        blocks: snapshot.blocks.filter((block) => folded.has(block.id)),
        ...(previous ? { previous: previous.summary } : {}),
        verbatim: [...intents.pinned, ...intents.userRequests],
        ...(previous?.userRequests ? { previousRequests: previous.userRequests } : {}),
        countText: (text) => counter.countText(text),
        maxTokens: Math.max(STRUCTURAL_MIN_TOKENS, Math.floor(budget * STRUCTURAL_SHARE)),
      });
    } else {
      summary = await this.summarizeWithModel(model, snapshot, plan, options);
    }

    const liveHandles = collectLiveHandles(snapshot.blocks, previous?.liveHandles);
    const folded = plan.fold.filter((unit) => unit.kind === 'message');
    const oldest = folded[0]?.createdAt;
    const newest = folded[folded.length - 1]?.createdAt;
    const view = {
      summary,
      summarizer,
      pinned: intents.pinned,
      ...(intents.userRequests.length > 0 ? { userRequests: intents.userRequests } : {}),
      liveHandles,
      ...(previous?.ralphLoop ? { ralphLoop: previous.ralphLoop } : {}),
    };
    const previousOldest = previous?.covers.oldestMessageTimestamp;
    const oldestTimestamp = previousOldest ?? (oldest !== undefined ? new Date(oldest).toISOString() : undefined);
    const newestTimestamp =
      newest !== undefined ? new Date(newest).toISOString() : previous?.covers.newestMessageTimestamp;
    return {
      createdAt: new Date(this.host.clock()).toISOString(),
      trigger: options.trigger,
      ...(options.instructions ? { instructions: options.instructions } : {}),
      ...view,
      covers: {
        throughSeq: Math.max(plan.throughSeq, previous?.covers.throughSeq ?? -1),
        fromSeq: Math.max(0, previous?.covers.fromSeq ?? fromSeq),
        messageCount: (previous?.covers.messageCount ?? 0) + plan.foldedMessages,
        ...(oldestTimestamp !== undefined ? { oldestMessageTimestamp: oldestTimestamp } : {}),
        ...(newestTimestamp !== undefined ? { newestMessageTimestamp: newestTimestamp } : {}),
      },
      tokens: {
        checkpoint: counter.countText(renderCheckpoint(view)),
        lastCompactionInput: snapshot.tokensBefore,
        totalSaved: previous?.tokens.totalSaved ?? 0,
      },
    };
  }

  /** The model's summary: old tool output pruned, the fold cut into calls that fit, each answer checked. */
  private async summarizeWithModel(
    summarize: Summarizer,
    snapshot: CompactionSnapshot,
    plan: CompactionPlan,
    options: CompactOptions,
  ): Promise<CheckpointSummary> {
    const counter = this.host.counter;
    const previous = snapshot.checkpoint;
    const budget = snapshot.tokenBudget;
    const protectChars = this.settings.protectToolChars ?? Math.floor(budget * 0.1 * 4);
    const pruned = prunedForSummary(plan.fold, protectChars);
    const rendered = plan.fold.map((unit, index) => renderForSummary(unit, pruned.has(index)));
    const previousTokens = previous ? counter.countText(JSON.stringify(previous.summary)) : 0;
    const overhead = counter.countText(COMPACTION_SYSTEM_PROMPT) + 200 + counter.countText(options.instructions ?? '');
    const chunkTokens = Math.max(
      500,
      Math.floor(budget * (1 - this.settings.outputReserve)) - overhead - previousTokens * 2,
    );
    const chunks = chunkForSummary(rendered, chunkTokens, counter);
    const fromSeq = Math.min(...plan.fold.map((unit) => unit.firstSeq));
    const timeout = AbortSignal.timeout(this.settings.timeoutMs);
    const signal = AbortSignal.any([timeout, this.shutdown.signal, ...(options.signal ? [options.signal] : [])]);
    return summarizeChunks({
      summarize,
      previous: previous?.summary,
      chunks,
      fromSeq,
      throughSeq: plan.throughSeq,
      signal,
      ...(options.instructions ? { instructions: options.instructions } : {}),
    });
  }
}

/** The structural summary's allowance: a share of the budget, never below a floor that holds a few items. */
const STRUCTURAL_SHARE = 0.08;
const STRUCTURAL_MIN_TOKENS = 150;

function modelSummarizer(summarize: Summarizer): CheckpointSummarizer {
  return {
    kind: 'model',
    ...(summarize.backend ? { backend: summarize.backend } : {}),
    ...(summarize.model ? { model: summarize.model } : {}),
  };
}

function asCompactionFailure(error: unknown): CompactionError | ParleyError {
  return error instanceof ParleyError
    ? error
    : new CompactionError(
        'COMPACTION_SUMMARIZER_FAILED',
        `The compaction failed: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
}
