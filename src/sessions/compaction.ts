import { z } from 'zod';
import { ParleyError, type ConversationBlock, type TokenCounter } from '../conversation/index.js';
import type { Checkpoint, CheckpointInput, CheckpointSummarizer, CheckpointSummary, LiveHandle } from '../store/index.js';
import { renderCheckpoint, type CheckpointView } from './checkpoint-format.js';
import type { ProjectedMessage } from './projection.js';
import { truncateText } from './request-builder.js';
import { buildStructuralSummary } from './structural-summarizer.js';
import type { Summarizer } from './summarizer.js';

/**
 * Compaction: folds the oldest part of a session's visible history into a new checkpoint version.
 * Nothing is deleted (the log keeps every message; every checkpoint version stays readable); the new
 * checkpoint says which `seq` it covers, and the projection shows the rest verbatim.
 *
 * What survives verbatim: the most recent messages within the tail allowance, the first user message
 * and every pinned one (checkpoint.pinned), the most recent user requests (checkpoint.userRequests),
 * and the workers still running (checkpoint.liveHandles). Guards: old tool output is pruned before
 * summarizing; the answer must be the structured checkpoint (one repair attempt); a compaction that
 * does not cut the request by at least 5 % fails; one compaction per session at a time.
 *
 * Who writes the summary: the model summarizer when one is configured, else the structural builder
 * (structural-summarizer.ts), which needs no model. After three model failures in a row, automatic
 * compaction uses the structural builder instead of the model (the session stays under its budget)
 * until a model compaction succeeds again (forceCompact still asks the model). Only when the
 * structural builder itself fails three times in a row does automatic compaction stop for the session.
 */

export type CompactionTrigger = 'auto' | 'manual';

export type CompactionErrorCode =
  /** No longer raised: without a model summarizer, checkpoints are built structurally. Kept so older servers' errors still type-check. */
  | 'COMPACTION_NO_SUMMARIZER'
  | 'COMPACTION_NOTHING_TO_COMPACT'
  | 'COMPACTION_INVALID_OUTPUT'
  | 'COMPACTION_SUMMARIZER_FAILED'
  | 'COMPACTION_NO_PROGRESS'
  | 'COMPACTION_CANCELLED'
  | 'COMPACTION_STOPPED';

export class CompactionError extends ParleyError {
  declare readonly code: CompactionErrorCode;
  constructor(code: CompactionErrorCode, message: string, options: { fault?: 'user' | 'model' | 'system'; cause?: unknown; data?: Record<string, unknown> } = {}) {
    super(code, message, { fault: options.fault ?? 'system', ...options });
  }
}

// ---- the model's answer ------------------------------------------------------------------------------

const MAX_ITEMS = 200;
const MAX_ITEM_CHARS = 4_000;

const Items = z
  .array(z.string().trim().max(MAX_ITEM_CHARS, `an item is longer than ${MAX_ITEM_CHARS} characters; shorten it`))
  .max(MAX_ITEMS, `more than ${MAX_ITEMS} items; merge related ones`)
  .transform((items) => items.filter((item) => item.length > 0));

/** The structured checkpoint the summarizer must answer with. */
export const CompactionOutputSchema = z
  .object({ completed: Items, inProgress: Items, pending: Items, decisions: Items, blockers: Items })
  .strict();

/** Names models use for the same lists (seed 002's own among them); mapped before validation. */
const ALIASES: Record<string, keyof CheckpointSummary> = {
  completedItems: 'completed',
  done: 'completed',
  in_progress: 'inProgress',
  inProgressItems: 'inProgress',
  pendingItems: 'pending',
  stillToDo: 'pending',
  todo: 'pending',
  keyDecisions: 'decisions',
  currentBlockers: 'blockers',
};

export type ParsedOutput = { ok: true; summary: CheckpointSummary } | { ok: false; errors: string };

/** Reads the checkpoint out of the model's raw text: JSON (fenced or surrounded by prose is accepted), then the schema. */
export function parseCheckpointOutput(text: string): ParsedOutput {
  const json = extractJson(text);
  if (json === undefined) return { ok: false, errors: 'The answer contains no JSON object. Answer with exactly one JSON object.' };
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    return { ok: false, errors: `The JSON does not parse: ${error instanceof Error ? error.message : String(error)}.` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, errors: 'The answer must be a JSON object, not an array or a value.' };
  const renamed: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) renamed[ALIASES[key] ?? key] = item;
  const result = CompactionOutputSchema.safeParse(renamed);
  if (!result.success) {
    const issues = result.error.issues.map((issue) => `- ${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`);
    return { ok: false, errors: `The JSON does not match the checkpoint format:\n${issues.join('\n')}` };
  }
  return { ok: true, summary: result.data };
}

function extractJson(text: string): string | undefined {
  const fenced = /```(?:json)?\s*\n([\s\S]*?)```/i.exec(text);
  const body = fenced ? fenced[1]! : text;
  const start = body.indexOf('{');
  const end = body.lastIndexOf('}');
  if (start === -1 || end <= start) return undefined;
  return body.slice(start, end + 1);
}

function isEmpty(summary: CheckpointSummary): boolean {
  return Object.values(summary).every((items) => items.length === 0);
}

// ---- the prompt ----------------------------------------------------------------------------------------

export const COMPACTION_SYSTEM_PROMPT = [
  'You are a session compaction agent. You fold part of a conversation between a user and an AI agent into a structured checkpoint, so that the agent can continue the work without the original messages.',
  '',
  'Answer with exactly one JSON object and nothing else:',
  '{"completed": [...], "inProgress": [...], "pending": [...], "decisions": [...], "blockers": [...]}',
  'Every value is an array of strings.',
  '',
  'Rules:',
  '- Start from the previous checkpoint: keep every item that is still true, move items between lists as the conversation shows progress, and add what is new.',
  '- completed: work that is done, with its concrete result (files, names, numbers, commands).',
  '- inProgress: work started and not finished, and where it stands.',
  "- pending: every request of the user that is not done yet, in the user's own words where possible. Never drop one.",
  '- decisions: decisions and corrections made or agreed (especially the user\'s), each with its reason.',
  '- blockers: open problems, errors and questions waiting for an answer.',
  '- Keep file paths, identifiers, commands, numbers and error messages exact.',
  '- Each item is one short, self-contained sentence; never refer to "above" or "the conversation".',
].join('\n');

export interface CompactionPromptInput {
  previous: CheckpointSummary | undefined;
  /** Rendered units to fold in, oldest first. */
  units: readonly string[];
  fromSeq: number;
  throughSeq: number;
  instructions?: string;
  /** This is part `part` of `parts` of one compaction (a history too long for one summarizer call). */
  part?: number;
  parts?: number;
}

export function buildCompactionPrompt(input: CompactionPromptInput): string {
  const sections = [
    '# Previous Checkpoint',
    '',
    input.previous && !isEmpty(input.previous) ? JSON.stringify(input.previous, null, 1) : '(none: this is the first checkpoint)',
    '',
    `# Conversation To Fold In (seq ${input.fromSeq}–${input.throughSeq}${input.parts && input.parts > 1 ? `, part ${input.part} of ${input.parts}` : ''})`,
    '',
    input.units.join('\n\n'),
  ];
  if (input.instructions?.trim()) sections.push('', '# Instructions From The User For This Compaction', '', input.instructions.trim());
  sections.push('', 'Reply with the updated checkpoint as one JSON object.');
  return sections.join('\n');
}

export function buildRepairPrompt(prompt: string, answer: string, errors: string): string {
  const shown = answer.length > 2_000 ? `${answer.slice(0, 2_000)}…` : answer;
  return `${prompt}\n\n# Your Previous Answer Was Not Valid\n\n${errors}\n\nYour previous answer was:\n${shown}\n\nReply again with only the JSON object, in exactly the format described.`;
}

// ---- what is folded ------------------------------------------------------------------------------------

export interface CompactionPlan {
  /** Units summarized, oldest first. */
  fold: ProjectedMessage[];
  /** Units kept verbatim after the checkpoint. */
  tail: ProjectedMessage[];
  /** The new checkpoint's `covers.throughSeq`. */
  throughSeq: number;
  /** User and assistant messages folded. */
  foldedMessages: number;
}

/**
 * Picks what to fold: everything visible except the newest units within `tailTokens`, never a unit
 * still in flight (or anything after it), and never a cut inside a unit (a tool call and its result
 * go together; with interleaved parallel calls, the cut moves back until no unit straddles it).
 */
export function planCompaction(
  messages: readonly ProjectedMessage[],
  options: { tailTokens: number; tokensOf: (unit: ProjectedMessage) => number },
): CompactionPlan | undefined {
  const units = messages.filter((unit) => unit.kind !== 'placeholder');
  let limit = units.findIndex((unit) => !unit.complete);
  if (limit === -1) limit = units.length;
  let tail = 0;
  let cut = units.length;
  while (cut > 0) {
    const tokens = options.tokensOf(units[cut - 1]!);
    if (tail + tokens > options.tailTokens) break;
    tail += tokens;
    cut--;
  }
  cut = Math.min(cut, limit);
  while (cut > 0 && !isBoundary(units, cut)) cut--;
  if (cut === 0) return undefined;
  const fold = units.slice(0, cut);
  return {
    fold,
    tail: units.slice(cut),
    throughSeq: Math.max(...fold.map((unit) => unit.lastSeq)),
    foldedMessages: fold.filter((unit) => unit.kind === 'message').length,
  };
}

function isBoundary(units: readonly ProjectedMessage[], cut: number): boolean {
  if (cut >= units.length) return true;
  let maxLast = -1;
  for (let index = 0; index < cut; index++) maxLast = Math.max(maxLast, units[index]!.lastSeq);
  return maxLast < units[cut]!.firstSeq;
}

/** A unit as the summarizer reads it; an old tool output is cut to its head (cheap pruning before summarizing). */
export function renderForSummary(unit: ProjectedMessage, prune: boolean): string {
  const tool = unit.tool;
  if (!prune || !tool || tool.pruned || tool.output.length <= PRUNED_HEAD_CHARS * 2) return unit.content;
  const head = tool.output.slice(0, PRUNED_HEAD_CHARS);
  const output = `${head}\n[… old tool output pruned before summarizing: ${(tool.output.length - head.length).toLocaleString('en-US')} more characters …]`;
  const at = unit.content.lastIndexOf(tool.output);
  return at === -1 ? unit.content : unit.content.slice(0, at) + output + unit.content.slice(at + tool.output.length);
}

const PRUNED_HEAD_CHARS = 300;

/** Indexes of fold units whose tool output is pruned: all but the newest `protectChars` of output. */
export function prunedForSummary(fold: readonly ProjectedMessage[], protectChars: number): Set<number> {
  const pruned = new Set<number>();
  let kept = 0;
  for (let index = fold.length - 1; index >= 0; index--) {
    const tool = fold[index]!.tool;
    if (!tool || tool.pruned) continue;
    if (kept + tool.output.length <= protectChars) kept += tool.output.length;
    else pruned.add(index);
  }
  return pruned;
}

/** Splits rendered units into summarizer calls of at most `maxTokens` each; a unit bigger than that is cut in the middle. */
export function chunkForSummary(rendered: readonly string[], maxTokens: number, counter: TokenCounter): string[][] {
  const chunks: string[][] = [];
  let current: string[] = [];
  let size = 0;
  for (const text of rendered) {
    let piece = text;
    let tokens = counter.countText(piece);
    if (tokens > maxTokens) {
      const cut = truncateText(piece, maxTokens, (value) => counter.countText(value), 'this message (the full text is kept in the session log)');
      piece = cut.text;
      tokens = cut.tokens;
    }
    if (size + tokens > maxTokens && current.length > 0) {
      chunks.push(current);
      current = [];
      size = 0;
    }
    current.push(piece);
    size += tokens;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

// ---- what survives verbatim ------------------------------------------------------------------------------

export interface IntentOptions {
  throughSeq: number;
  clearedThroughSeq?: number;
  previous?: Pick<Checkpoint, 'pinned'>;
  counter: TokenCounter;
  /** Longest single kept message. */
  maxEntryTokens: number;
  /** Allowance for the most recent user requests besides the pinned ones. */
  recentTokens: number;
}

/**
 * User intent that must outlive the summary: the first user message and every pinned one (kept for
 * good, carried from checkpoint to checkpoint), and the most recent user messages folded in (refreshed
 * by each compaction). Recomputed from the log, which holds every message.
 */
export function collectIntents(blocks: readonly ConversationBlock[], options: IntentOptions): { pinned: string[]; userRequests: string[] } {
  const cleared = options.clearedThroughSeq ?? -1;
  const users = blocks.filter(
    (block): block is Extract<ConversationBlock, { type: 'user_message' }> =>
      block.type === 'user_message' && (block.seq ?? -1) > cleared && (block.seq ?? -1) <= options.throughSeq,
  );
  const clip = (text: string, maxTokens: number) =>
    truncateText(text.trim(), maxTokens, (value) => options.counter.countText(value), 'this message (the full text is kept in the session log)').text;
  const pinned = [...(options.previous?.pinned ?? [])];
  const pinnedIds = new Set<string>();
  const first = users[0];
  for (const block of users) {
    if (block !== first && !block.pinned) continue;
    pinnedIds.add(block.id);
    const text = clip(block.content, options.maxEntryTokens);
    if (text && !pinned.includes(text)) pinned.push(text);
  }
  const userRequests: string[] = [];
  let left = options.recentTokens;
  for (let index = users.length - 1; index >= 0 && left > 0; index--) {
    const block = users[index]!;
    if (pinnedIds.has(block.id)) continue;
    const text = clip(block.content, Math.min(options.maxEntryTokens, left));
    if (!text || pinned.includes(text) || userRequests.includes(text)) continue;
    const tokens = options.counter.countText(text);
    if (tokens > left) break;
    userRequests.unshift(text);
    left -= tokens;
  }
  return { pinned, userRequests };
}

/** Workers still pending or running (from subagent blocks), plus handles the previous checkpoint had that the log does not mention. */
export function collectLiveHandles(blocks: readonly ConversationBlock[], previous: readonly LiveHandle[] = []): LiveHandle[] {
  const latest = new Map<string, Extract<ConversationBlock, { type: 'subagent' }>>();
  for (const block of blocks) if (block.type === 'subagent') latest.set(block.subagentId, block);
  const handles: LiveHandle[] = [];
  for (const block of latest.values()) {
    if (block.status === 'pending' || block.status === 'running') handles.push({ id: block.subagentId, kind: 'worker', label: block.name, status: block.status });
  }
  for (const handle of previous) if (!latest.has(handle.id)) handles.push({ ...handle });
  return handles;
}

// ---- asking the model -----------------------------------------------------------------------------------

export interface SummarizeOptions {
  summarize: Summarizer;
  previous: CheckpointSummary | undefined;
  chunks: readonly string[][];
  fromSeq: number;
  throughSeq: number;
  instructions?: string;
  signal: AbortSignal;
  /** Called for each repair attempt (for metrics and tests). */
  onRepair?: (errors: string) => void;
}

/** Folds the chunks into the summary one call at a time; an invalid answer gets one repair attempt. */
export async function summarizeChunks(options: SummarizeOptions): Promise<CheckpointSummary> {
  let summary = options.previous;
  for (let index = 0; index < options.chunks.length; index++) {
    const prompt = buildCompactionPrompt({
      previous: summary,
      units: options.chunks[index]!,
      fromSeq: options.fromSeq,
      throughSeq: options.throughSeq,
      ...(options.instructions ? { instructions: options.instructions } : {}),
      part: index + 1,
      parts: options.chunks.length,
    });
    const first = await ask(options, prompt);
    let parsed = check(parseCheckpointOutput(first));
    if (!parsed.ok) {
      options.onRepair?.(parsed.errors);
      const second = await ask(options, buildRepairPrompt(prompt, first, parsed.errors));
      parsed = check(parseCheckpointOutput(second));
      if (!parsed.ok) {
        throw new CompactionError('COMPACTION_INVALID_OUTPUT', `The summarizer's answer was not a valid checkpoint, even after one repair attempt. ${parsed.errors}`, {
          fault: 'model',
          data: { errors: parsed.errors },
        });
      }
    }
    summary = parsed.summary;
  }
  return summary!;
}

function check(parsed: ParsedOutput): ParsedOutput {
  if (parsed.ok && isEmpty(parsed.summary)) return { ok: false, errors: 'Every list is empty, so the summary would lose the whole conversation. Fill in what was done, what is in progress and what is left.' };
  return parsed;
}

async function ask(options: SummarizeOptions, prompt: string): Promise<string> {
  if (options.signal.aborted) throw cancelled(options.signal);
  let text: unknown;
  try {
    text = await options.summarize({ systemPrompt: COMPACTION_SYSTEM_PROMPT, prompt, signal: options.signal });
  } catch (error) {
    if (options.signal.aborted) throw cancelled(options.signal);
    throw new CompactionError('COMPACTION_SUMMARIZER_FAILED', `The summarizer failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  if (options.signal.aborted) throw cancelled(options.signal);
  if (typeof text !== 'string') throw new CompactionError('COMPACTION_INVALID_OUTPUT', `The summarizer returned ${typeof text}, not text.`, { fault: 'model' });
  return text;
}

function cancelled(signal: AbortSignal): CompactionError {
  const reason = signal.reason instanceof Error ? signal.reason.message : 'cancelled';
  return new CompactionError('COMPACTION_CANCELLED', `The compaction was cancelled (${reason}); nothing changed.`, { cause: signal.reason });
}

// ---- running compactions for a manager ------------------------------------------------------------------

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
  committed(sessionId: string, checkpoint: Checkpoint, info: { trigger: CompactionTrigger; tokensBefore: number; tokensAfter: number }): Promise<void>;
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
  failed(event: { sessionId: string; trigger: CompactionTrigger; message: string; code: string; consecutiveFailures: number; autoCompactionStopped: boolean }): void;
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

export interface CompactOptions {
  trigger: CompactionTrigger;
  instructions?: string;
  /** The message about to be sent, when compaction runs for a request (it counts toward the request). */
  userMessage?: string;
  signal?: AbortSignal;
}

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
  private readonly settings: Required<Omit<CompactionSettings, 'protectToolChars'>> & Pick<CompactionSettings, 'protectToolChars'>;

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
        error: new CompactionError('COMPACTION_STOPPED', `Automatic compaction is stopped for session "${sessionId}" after repeated failures; use forceCompact.`, {
          fault: 'system',
          data: { sessionId },
        }),
      });
    }
    const run = this.run(sessionId, options).finally(() => {
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
    return this.host.summarize !== undefined && (this.failures.get(sessionId) ?? 0) >= this.settings.maxConsecutiveFailures;
  }

  private async run(sessionId: string, options: CompactOptions): Promise<CompactionResult> {
    const { trigger } = options;
    const model = this.host.summarize;
    const fallback = trigger === 'auto' && this.inFallback(sessionId);
    let summarizer: CheckpointSummarizer = !model || fallback ? { kind: 'structural', ...(fallback ? { fallback: true } : {}) } : modelSummarizer(model);
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
          const fallBack = trigger === 'auto' && count >= this.settings.maxConsecutiveFailures && failure.code !== 'COMPACTION_CANCELLED' && failure.code !== 'COMPACTION_NOTHING_TO_COMPACT';
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
      const stop = kind === 'structural' && (this.structuralFailures.get(sessionId) ?? 0) >= this.settings.maxConsecutiveFailures;
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
  private async attempt(snapshot: CompactionSnapshot, options: CompactOptions, summarizer: CheckpointSummarizer): Promise<CompactionResult> {
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
    this.host.completed({ sessionId, trigger, version: written.version, tokensBefore, tokensAfter, checkpoint: written, summarizer });
    return { ok: true, checkpoint: written, tokensBefore, tokensAfter };
  }

  private countFailure(sessionId: string, kind: CheckpointSummarizer['kind']): number {
    const count = (this.failures.get(sessionId) ?? 0) + 1;
    this.failures.set(sessionId, count);
    if (kind === 'structural') this.structuralFailures.set(sessionId, (this.structuralFailures.get(sessionId) ?? 0) + 1);
    return count;
  }

  private report(sessionId: string, trigger: CompactionTrigger, failure: CompactionError | ParleyError, options: { message: string }): void {
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
  private async fold(snapshot: CompactionSnapshot, summarizer: CheckpointSummarizer, options: CompactOptions): Promise<CheckpointInput> {
    const counter = this.host.counter;
    const tokensOf = (unit: ProjectedMessage) => counter.countKeyed(unit.key, unit.content);
    let plan = planCompaction(snapshot.messages, { tailTokens: snapshot.tailTokens, tokensOf });
    // Asked for explicitly, a compaction folds the tail too rather than doing nothing.
    if (!plan && options.trigger === 'manual') plan = planCompaction(snapshot.messages, { tailTokens: 0, tokensOf });
    if (!plan) {
      throw new CompactionError('COMPACTION_NOTHING_TO_COMPACT', 'There is nothing to compact: every message after the checkpoint is in the verbatim tail or still in flight.', {
        fault: 'user',
      });
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
      if (this.shutdown.signal.aborted || options.signal?.aborted) throw cancelled(options.signal?.aborted ? options.signal : this.shutdown.signal);
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
    const newestTimestamp = newest !== undefined ? new Date(newest).toISOString() : previous?.covers.newestMessageTimestamp;
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
  private async summarizeWithModel(summarize: Summarizer, snapshot: CompactionSnapshot, plan: CompactionPlan, options: CompactOptions): Promise<CheckpointSummary> {
    const counter = this.host.counter;
    const previous = snapshot.checkpoint;
    const budget = snapshot.tokenBudget;
    const protectChars = this.settings.protectToolChars ?? Math.floor(budget * 0.1 * 4);
    const pruned = prunedForSummary(plan.fold, protectChars);
    const rendered = plan.fold.map((unit, index) => renderForSummary(unit, pruned.has(index)));
    const previousTokens = previous ? counter.countText(JSON.stringify(previous.summary)) : 0;
    const overhead = counter.countText(COMPACTION_SYSTEM_PROMPT) + 200 + counter.countText(options.instructions ?? '');
    const chunkTokens = Math.max(500, Math.floor(budget * (1 - this.settings.outputReserve)) - overhead - previousTokens * 2);
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
  return { kind: 'model', ...(summarize.backend ? { backend: summarize.backend } : {}), ...(summarize.model ? { model: summarize.model } : {}) };
}

function asCompactionFailure(error: unknown): CompactionError | ParleyError {
  return error instanceof ParleyError
    ? error
    : new CompactionError('COMPACTION_SUMMARIZER_FAILED', `The compaction failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
}
