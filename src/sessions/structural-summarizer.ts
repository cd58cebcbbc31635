import type { ConversationBlock } from '../conversation/index.js';
import type { CheckpointSummary } from '../store/index.js';

/**
 * The checkpoint builder that needs no model: it fills the same typed summary the model summarizer
 * must answer with, from the history's structure alone. Used when no model is configured, and as the
 * fallback that keeps a session under its budget when the model summarizer keeps failing.
 *
 * What goes where (the model cannot be asked what is done, so nothing is guessed):
 * - pending: the user's requests, in order, verbatim (whitespace collapsed) and trimmed when long;
 *   requests kept verbatim elsewhere in the checkpoint (pinned, recent requests) are not repeated.
 * - completed: the files the tool calls touched (path and which tools, with counts), the other tool
 *   calls by name, the workers that finished, and the assistant's last answers.
 * - inProgress: tool calls the turn ended before they returned.
 * - blockers: errors (failed tool calls, error notices, failed workers), newest kept.
 * - decisions: only what the previous checkpoint had (structure says nothing about decisions).
 * Items of the previous checkpoint are kept before the new ones. The result is deterministic, and its
 * items add up to at most `maxTokens`: when they do not fit, the oldest give way first and one line per
 * list says how many were left out (the session log keeps them all).
 */

export interface StructuralSummaryInput {
  /** The blocks being folded, in log order (main thread). */
  blocks: readonly ConversationBlock[];
  /** The previous checkpoint's summary: its items are kept (oldest first) when they fit. */
  previous?: CheckpointSummary;
  /** Texts the checkpoint keeps verbatim anyway (pinned intents, recent requests): not repeated as requests. */
  verbatim?: readonly string[];
  /** Recent requests the previous checkpoint kept verbatim; those no longer in `verbatim` join the requests. */
  previousRequests?: readonly string[];
  countText: (text: string) => number;
  /** Allowance for all the items together. */
  maxTokens: number;
}

/** Longest request item, before the allowance cuts further. */
const REQUEST_MAX_TOKENS = 200;
const ANSWER_MAX_TOKENS = 80;
const ERROR_MAX_TOKENS = 60;
const HINT_MAX_CHARS = 80;
/** Answers of the assistant kept from one fold: the last ones say where the work stands. */
const ANSWERS_KEPT = 3;
/** Shortest cut of an item worth showing. */
const MIN_CLIPPED_TOKENS = 16;
/** Per item: "- " and the line break, as rendered. */
const ITEM_OVERHEAD_TOKENS = 2;

/** Keys of tool inputs that name a file or folder (Claude Code, Gemini CLI, common MCP tools). */
const PATH_KEYS = [
  'file_path',
  'filePath',
  'path',
  'paths',
  'notebook_path',
  'absolute_path',
  'target_file',
  'file',
  'files',
  'filename',
  'dir_path',
];
/** Keys whose value says what a tool call did when it names no file. */
const HINT_KEYS = ['command', 'pattern', 'query', 'url', 'description', 'prompt'];

const OMITTED = /^\((\d+) earlier (?:items|requests) left out; the session log keeps them\)$/;
const FILE_ITEM = /^File `([^`]+)`: (.+)$/;
const TOOL_ITEM = /^Tool `([^`]+)` ×(\d+)(?: \(last: .*\))?$/;

type Lists = { [K in keyof CheckpointSummary]: string[] };

export function buildStructuralSummary(input: StructuralSummaryInput): CheckpointSummary {
  const clip = (text: string, maxTokens: number) => clipText(text, maxTokens, input.countText);
  const previous = input.previous ?? { completed: [], inProgress: [], pending: [], decisions: [], blockers: [] };
  const omitted: Record<keyof CheckpointSummary, number> = {
    completed: 0,
    inProgress: 0,
    pending: 0,
    decisions: 0,
    blockers: 0,
  };
  const lists = {} as Lists;
  for (const key of Object.keys(omitted) as Array<keyof CheckpointSummary>) {
    lists[key] = [];
    for (const item of previous[key]) {
      const marker = OMITTED.exec(item);
      if (marker) omitted[key] += Number(marker[1]);
      else lists[key].push(item);
    }
  }

  // Requests: those the previous checkpoint kept verbatim and no longer are, then the fold's own.
  const verbatim = new Set((input.verbatim ?? []).map(normalize));
  const requests = [
    ...(input.previousRequests ?? []),
    ...input.blocks.flatMap((block) => (block.type === 'user_message' ? [block.content] : [])),
  ];
  for (const request of requests) {
    const text = normalize(request);
    if (!text || verbatim.has(text)) continue;
    const item = `User asked: ${clip(text, REQUEST_MAX_TOKENS)}`;
    if (!lists.pending.includes(item)) lists.pending.push(item);
  }

  const tools = collectToolWork(input.blocks);
  mergeFiles(lists.completed, tools.files);
  mergeTools(lists.completed, tools.others);
  for (const worker of tools.workers) lists.completed.push(clip(worker, ANSWER_MAX_TOKENS));
  const answers = input.blocks.flatMap((block) =>
    block.type === 'assistant_text' && block.content.trim() !== '' ? [block.content] : [],
  );
  for (const answer of answers.slice(-ANSWERS_KEPT))
    lists.completed.push(`Assistant answered: ${clip(normalize(answer), ANSWER_MAX_TOKENS)}`);
  for (const call of tools.interrupted) lists.inProgress.push(call);
  for (const error of tools.errors) lists.blockers.push(clip(error, ERROR_MAX_TOKENS));

  return fitAllowance(lists, omitted, input.maxTokens, input.countText);
}

// ---- tool calls ------------------------------------------------------------------------------------------

interface ToolWork {
  /** Path → tool name → calls, in first-seen order. */
  files: Map<string, Map<string, number>>;
  /** Tool name → calls and the last call's hint, for calls that name no file. */
  others: Map<string, { count: number; hint: string | undefined }>;
  workers: string[];
  interrupted: string[];
  errors: string[];
}

function collectToolWork(blocks: readonly ConversationBlock[]): ToolWork {
  const work: ToolWork = { files: new Map(), others: new Map(), workers: [], interrupted: [], errors: [] };
  const calls = new Map<string, Extract<ConversationBlock, { type: 'tool_use' }>>();
  const answered = new Set<string>();
  for (const block of blocks) if (block.type === 'tool_result') answered.add(block.toolUseId);
  for (const block of blocks) {
    switch (block.type) {
      case 'tool_use': {
        calls.set(block.toolUseId, block);
        const paths = pathsOf(block.input);
        for (const path of paths) {
          const byTool = work.files.get(path) ?? new Map<string, number>();
          byTool.set(block.name, (byTool.get(block.name) ?? 0) + 1);
          work.files.set(path, byTool);
        }
        if (paths.length === 0) {
          const other = work.others.get(block.name) ?? { count: 0, hint: undefined };
          other.count += 1;
          other.hint = hintOf(block.input) ?? other.hint;
          work.others.set(block.name, other);
        }
        if (!answered.has(block.toolUseId)) {
          if (block.status === 'error')
            work.errors.push(`${describeCall(block)} failed: ${normalize(block.error ?? 'no result')}`);
          else work.interrupted.push(`${describeCall(block)} did not return before its turn ended`);
        }
        break;
      }
      case 'tool_result': {
        if (!block.isError) break;
        const call = calls.get(block.toolUseId);
        work.errors.push(
          `${call ? describeCall(call) : 'A tool call'} failed: ${normalize(block.content) || '(no message)'}`,
        );
        break;
      }
      case 'system':
        if (block.subtype === 'error') work.errors.push(`Error: ${normalize(block.content)}`);
        break;
      case 'subagent':
        if (block.status === 'success')
          work.workers.push(
            `Worker \`${block.name}\` (${block.subagentId}) finished: ${normalize(block.output ?? '') || '(no output)'}`,
          );
        else if (block.status === 'error')
          work.errors.push(
            `Worker \`${block.name}\` (${block.subagentId}) failed: ${normalize(block.output ?? '') || '(no output)'}`,
          );
        break;
      default:
        break;
    }
  }
  return work;
}

/** File and folder paths a tool input names, in order, each once. */
export function pathsOf(input: unknown): string[] {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return [];
  const record = input as Record<string, unknown>;
  const paths: string[] = [];
  const add = (value: unknown) => {
    if (typeof value !== 'string') return;
    const path = value.trim();
    if (path && path.length <= 500 && !/[\n\r`]/.test(path) && !paths.includes(path)) paths.push(path);
  };
  for (const key of PATH_KEYS) {
    const value = record[key];
    if (Array.isArray(value)) value.forEach(add);
    else add(value);
  }
  return paths;
}

function hintOf(input: unknown): string | undefined {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return undefined;
  const record = input as Record<string, unknown>;
  for (const key of HINT_KEYS) {
    const value = record[key];
    if (typeof value === 'string' && value.trim()) return clipChars(normalize(value), HINT_MAX_CHARS);
  }
  return undefined;
}

function describeCall(call: Extract<ConversationBlock, { type: 'tool_use' }>): string {
  const paths = pathsOf(call.input);
  const target = paths.length > 0 ? paths.join(', ') : hintOf(call.input);
  return `\`${call.name}\`${target ? ` (${clipChars(target, HINT_MAX_CHARS)})` : ''}`;
}

/** One item per file; an item the previous checkpoint had for the same file is replaced by the merged one. */
function mergeFiles(completed: string[], files: ToolWork['files']): void {
  for (const [path, byTool] of files) {
    const counts = new Map<string, number>();
    const at = completed.findIndex((item) => FILE_ITEM.exec(item)?.[1] === path);
    if (at !== -1) {
      for (const match of FILE_ITEM.exec(completed[at]!)![2]!.matchAll(/([^\s,]+) ×(\d+)/g))
        counts.set(match[1]!, Number(match[2]));
      completed.splice(at, 1);
    }
    for (const [tool, count] of byTool) counts.set(tool, (counts.get(tool) ?? 0) + count);
    completed.push(`File \`${path}\`: ${[...counts].map(([tool, count]) => `${tool} ×${count}`).join(', ')}`);
  }
}

function mergeTools(completed: string[], others: ToolWork['others']): void {
  for (const [name, { count, hint }] of others) {
    let total = count;
    const at = completed.findIndex((item) => TOOL_ITEM.exec(item)?.[1] === name);
    if (at !== -1) {
      total += Number(TOOL_ITEM.exec(completed[at]!)![2]);
      completed.splice(at, 1);
    }
    completed.push(`Tool \`${name}\` ×${total}${hint ? ` (last: ${hint})` : ''}`);
  }
}

// ---- the allowance ---------------------------------------------------------------------------------------

/** Each list's share of the allowance; what one list leaves unused goes to the others, in this order. */
const SHARES: ReadonlyArray<[keyof CheckpointSummary, number]> = [
  ['pending', 0.3],
  ['completed', 0.3],
  ['blockers', 0.15],
  ['decisions', 0.15],
  ['inProgress', 0.1],
];

/**
 * Keeps the newest items of each list within its share, then gives what is left to the items dropped,
 * newest first. A list that lost items starts with one line saying how many (counted in the allowance).
 */
function fitAllowance(
  lists: Lists,
  omittedBefore: Record<keyof CheckpointSummary, number>,
  maxTokens: number,
  countText: (text: string) => number,
): CheckpointSummary {
  const cost = (item: string) => countText(item) + ITEM_OVERHEAD_TOKENS;
  const markerCost = cost(omittedMarker(99_999, 'pending'));
  const costs = {} as Record<keyof CheckpointSummary, number[]>;
  const kept = {} as Record<keyof CheckpointSummary, number>;
  for (const [key] of SHARES) {
    costs[key] = lists[key].map(cost);
    kept[key] = 0;
  }
  const marked = (key: keyof CheckpointSummary) => omittedBefore[key] > 0 || kept[key] < lists[key].length;
  /** Keeps more of the list's newest items while they fit `allowance`; returns the tokens they take. */
  const keepNewest = (key: keyof CheckpointSummary, allowance: number, canDropMarker: boolean): number => {
    const items = costs[key];
    let spent = 0;
    while (kept[key] < items.length) {
      const tokens = items[items.length - 1 - kept[key]]!;
      const isLast = kept[key] === items.length - 1;
      // Keeping the last dropped item frees the "left out" line it would have needed.
      if (spent + tokens > allowance + (isLast && canDropMarker && omittedBefore[key] === 0 ? markerCost : 0)) break;
      spent += tokens;
      kept[key]++;
    }
    return spent;
  };
  let used = 0;
  for (const [key, share] of SHARES) {
    const allowance = Math.floor(maxTokens * share);
    const total = costs[key].reduce((sum, tokens) => sum + tokens, 0);
    if (total <= allowance && omittedBefore[key] === 0) {
      kept[key] = costs[key].length;
      used += total;
    } else {
      const room = Math.max(0, allowance - markerCost);
      let spent = keepNewest(key, room, false);
      // The newest item alone is too long for the share: it is cut to fit rather than left out.
      if (kept[key] === 0 && costs[key].length > 0 && room - ITEM_OVERHEAD_TOKENS >= MIN_CLIPPED_TOKENS) {
        const items = lists[key];
        items[items.length - 1] = clipText(items[items.length - 1]!, room - ITEM_OVERHEAD_TOKENS, countText);
        costs[key][items.length - 1] = cost(items[items.length - 1]!);
        spent = keepNewest(key, room, false);
      }
      used += spent + markerCost;
    }
  }
  for (const [key] of SHARES) {
    if (!marked(key)) continue;
    const spent = keepNewest(key, Math.max(0, maxTokens - used), true);
    used += spent - (marked(key) ? 0 : markerCost);
  }
  const result = {} as Lists;
  for (const [key] of SHARES) {
    const items = lists[key];
    const left = omittedBefore[key] + items.length - kept[key];
    result[key] = [...(left > 0 ? [omittedMarker(left, key)] : []), ...items.slice(items.length - kept[key])];
  }
  return result;
}

function omittedMarker(count: number, key: keyof CheckpointSummary): string {
  return `(${count} earlier ${key === 'pending' ? 'requests' : 'items'} left out; the session log keeps them)`;
}

// ---- text ------------------------------------------------------------------------------------------------

function normalize(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function clipChars(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `${text.slice(0, maxChars - 1).trimEnd()}…`;
}

/** The head of `text` within `maxTokens`, marked with "[…]" when cut; never splits a surrogate pair. */
export function clipText(text: string, maxTokens: number, countText: (text: string) => number): string {
  if (countText(text) <= maxTokens) return text;
  const suffix = ' […]';
  let low = 0;
  let high = text.length;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (countText(safeHead(text, middle) + suffix) <= maxTokens) low = middle;
    else high = middle - 1;
  }
  return `${safeHead(text, low).trimEnd()}${suffix}`;
}

function safeHead(text: string, length: number): string {
  const code = text.charCodeAt(length - 1);
  return code >= 0xd800 && code <= 0xdbff ? text.slice(0, length - 1) : text.slice(0, length);
}
