import * as z from 'zod';
import { ParleyError, type ConversationBlock, type TokenCounter } from '../conversation/index.js';
import type { Checkpoint, CheckpointSummary, LiveHandle } from '../store/index.js';
import type { ProjectedMessage } from './projection.js';
import { truncateText } from './request-builder.js';
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

/** The codes a `CompactionError` carries. */
export type CompactionErrorCode =
  /** No longer raised: without a model summarizer, checkpoints are built structurally. Kept so older servers' errors still type-check. */
  | 'COMPACTION_NO_SUMMARIZER'
  | 'COMPACTION_NOTHING_TO_COMPACT'
  | 'COMPACTION_INVALID_OUTPUT'
  | 'COMPACTION_SUMMARIZER_FAILED'
  | 'COMPACTION_NO_PROGRESS'
  | 'COMPACTION_CANCELLED'
  | 'COMPACTION_STOPPED';

/** A compaction failed (the model's output could not be used, it was cancelled); the history is left as it was. */
export class CompactionError extends ParleyError {
  declare readonly code: CompactionErrorCode;
  constructor(
    code: CompactionErrorCode,
    message: string,
    options: { fault?: 'user' | 'model' | 'system'; cause?: unknown; data?: Record<string, unknown> } = {},
  ) {
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

/** Names models use for the same lists (`completedItems` and `pendingItems` among them); mapped before validation. */
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
  if (json === undefined)
    return { ok: false, errors: 'The answer contains no JSON object. Answer with exactly one JSON object.' };
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    return { ok: false, errors: `The JSON does not parse: ${error instanceof Error ? error.message : String(error)}.` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { ok: false, errors: 'The answer must be a JSON object, not an array or a value.' };
  const renamed: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) renamed[ALIASES[key] ?? key] = item;
  const result = CompactionOutputSchema.safeParse(renamed);
  if (!result.success) {
    const issues = result.error.issues.map(
      (issue) => `- ${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`,
    );
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
  "- decisions: decisions and corrections made or agreed (especially the user's), each with its reason.",
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
    input.previous && !isEmpty(input.previous)
      ? JSON.stringify(input.previous, null, 1)
      : '(none: this is the first checkpoint)',
    '',
    `# Conversation To Fold In (seq ${input.fromSeq}–${input.throughSeq}${input.parts && input.parts > 1 ? `, part ${input.part} of ${input.parts}` : ''})`,
    '',
    input.units.join('\n\n'),
  ];
  if (input.instructions?.trim())
    sections.push('', '# Instructions From The User For This Compaction', '', input.instructions.trim());
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
      const cut = truncateText(
        piece,
        maxTokens,
        (value) => counter.countText(value),
        'this message (the full text is kept in the session log)',
      );
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
export function collectIntents(
  blocks: readonly ConversationBlock[],
  options: IntentOptions,
): { pinned: string[]; userRequests: string[] } {
  const cleared = options.clearedThroughSeq ?? -1;
  const users = blocks.filter(
    (block): block is Extract<ConversationBlock, { type: 'user_message' }> =>
      block.type === 'user_message' && (block.seq ?? -1) > cleared && (block.seq ?? -1) <= options.throughSeq,
  );
  const clip = (text: string, maxTokens: number) =>
    truncateText(
      text.trim(),
      maxTokens,
      (value) => options.counter.countText(value),
      'this message (the full text is kept in the session log)',
    ).text;
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
export function collectLiveHandles(
  blocks: readonly ConversationBlock[],
  previous: readonly LiveHandle[] = [],
): LiveHandle[] {
  const latest = new Map<string, Extract<ConversationBlock, { type: 'subagent' }>>();
  for (const block of blocks) if (block.type === 'subagent') latest.set(block.subagentId, block);
  const handles: LiveHandle[] = [];
  for (const block of latest.values()) {
    if (block.status === 'pending' || block.status === 'running')
      handles.push({ id: block.subagentId, kind: 'worker', label: block.name, status: block.status });
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
        throw new CompactionError(
          'COMPACTION_INVALID_OUTPUT',
          `The summarizer's answer was not a valid checkpoint, even after one repair attempt. ${parsed.errors}`,
          {
            fault: 'model',
            data: { errors: parsed.errors },
          },
        );
      }
    }
    summary = parsed.summary;
  }
  return summary!;
}

function check(parsed: ParsedOutput): ParsedOutput {
  if (parsed.ok && isEmpty(parsed.summary))
    return {
      ok: false,
      errors:
        'Every list is empty, so the summary would lose the whole conversation. Fill in what was done, what is in progress and what is left.',
    };
  return parsed;
}

async function ask(options: SummarizeOptions, prompt: string): Promise<string> {
  if (options.signal.aborted) throw cancelledCompaction(options.signal);
  let text: unknown;
  try {
    text = await options.summarize({ systemPrompt: COMPACTION_SYSTEM_PROMPT, prompt, signal: options.signal });
  } catch (error) {
    if (options.signal.aborted) throw cancelledCompaction(options.signal);
    throw new CompactionError(
      'COMPACTION_SUMMARIZER_FAILED',
      `The summarizer failed: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  if (options.signal.aborted) throw cancelledCompaction(options.signal);
  if (typeof text !== 'string')
    throw new CompactionError('COMPACTION_INVALID_OUTPUT', `The summarizer returned ${typeof text}, not text.`, {
      fault: 'model',
    });
  return text;
}

/** The error of a compaction cancelled by its signal; nothing changed. */
export function cancelledCompaction(signal: AbortSignal): CompactionError {
  const reason = signal.reason instanceof Error ? signal.reason.message : 'cancelled';
  return new CompactionError('COMPACTION_CANCELLED', `The compaction was cancelled (${reason}); nothing changed.`, {
    cause: signal.reason,
  });
}
