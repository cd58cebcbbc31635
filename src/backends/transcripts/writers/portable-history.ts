import type { ConversationBlock, SubagentBlock, ToolResultBlock, ToolUseBlock } from '../../../conversation/index.js';

/**
 * What a transcript writer is given: Parley's own history of a session, back-end neutral. The
 * writers (Claude Code JSONL, Gemini CLI session file) turn it into a back end's native
 * transcript, so any session can resume natively on any back end (architecture decision 11).
 */
export interface PortableHistory {
  /** The main thread's blocks, oldest first, each with its `seq`. Blocks still open are left out by the caller. */
  blocks: readonly ConversationBlock[];
  /** The newest checkpoint: blocks at or below `coversSeq` were compacted into `summary`. */
  compacted?: { summary: string; coversSeq: number };
  /** The back end (or tool) the history was written on, for the markers: `claude-code`, `gemini-cli`, `openai-compatible`, … */
  source?: string;
}

/** Options of the transcript writers: the native session id and the workspace it belongs to. */
export interface TranscriptWriteOptions {
  /** The native session id the file is written for (a UUID for both CLIs). */
  nativeSessionId: string;
  /** The workspace the native session belongs to. */
  cwd: string;
  /** Milliseconds since the epoch: the time of records that have none of their own. */
  now: number;
  /** New record ids; default random UUIDs. */
  newId?: () => string;
}

/** What the target could not represent, and became marked text (or was left out, said so). */
export type ConversionKind =
  /** Another vendor's reasoning, whose signatures the target cannot verify. */
  | 'thinking'
  /** A tool call (with its result) to a tool the target does not have. */
  | 'tool_call'
  /** A Parley worker's thread, which the target has no record for. */
  | 'worker'
  /** A tool result whose call is not in the history. */
  | 'orphan_result'
  /** A user message the target would read as a command (Gemini CLI: "/…", "?…"). */
  | 'user_command'
  /** Parley's own notices (errors, interruptions): kept in Parley's log, not in the native file. */
  | 'notice';

/** Content the target format could not hold as it was, and became marked text. */
export interface Conversion {
  kind: ConversionKind;
  count: number;
  /** Tool or worker names involved, without repeats. */
  names?: string[];
}

/** A native transcript written from Parley's log, with what had to be converted. */
export interface WrittenTranscript {
  /** The native file's text. */
  main: string;
  conversions: Conversion[];
}

/** Counts what a writer converted, by kind, with the names involved. */
export class ConversionLog {
  private readonly counts = new Map<ConversionKind, { count: number; names: Set<string> }>();

  add(kind: ConversionKind, name?: string): void {
    let entry = this.counts.get(kind);
    if (!entry) {
      entry = { count: 0, names: new Set() };
      this.counts.set(kind, entry);
    }
    entry.count++;
    if (name !== undefined) entry.names.add(name);
  }

  list(): Conversion[] {
    return [...this.counts.entries()].map(([kind, entry]) => ({
      kind,
      count: entry.count,
      ...(entry.names.size > 0 ? { names: [...entry.names] } : {}),
    }));
  }
}

const DESCRIPTIONS: Record<ConversionKind, (count: number) => string> = {
  thinking: (count) => `${plural(count, 'thinking block')} to marked text`,
  tool_call: (count) => `${plural(count, 'call')} to tools it does not have to marked text`,
  worker: (count) => `${plural(count, 'worker result')} to marked text`,
  orphan_result: (count) => `${plural(count, 'tool result')} without its call to marked text`,
  user_command: (count) => `${plural(count, 'user message')} that would read as a command, marked`,
  notice: (count) => `${plural(count, 'Parley notice')} (errors, interruptions) left in Parley's log only`,
};

/** One sentence part per conversion: "2 thinking blocks to marked text, 1 call to tools it does not have (Bash) to marked text". */
export function describeConversions(conversions: readonly Conversion[]): string {
  if (conversions.length === 0) return 'nothing needed converting';
  return conversions
    .map(
      (conversion) =>
        `${DESCRIPTIONS[conversion.kind](conversion.count)}${conversion.names?.length ? ` (${conversion.names.join(', ')})` : ''}`,
    )
    .join('; ');
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/** One step of the history as a writer walks it: a tool call travels with its result. */
export type HistoryItem =
  | { kind: 'user'; block: Extract<ConversationBlock, { type: 'user_message' }>; compacted: boolean }
  | { kind: 'text'; block: Extract<ConversationBlock, { type: 'assistant_text' }>; compacted: boolean }
  | { kind: 'thinking'; block: Extract<ConversationBlock, { type: 'thinking' }>; compacted: boolean }
  | { kind: 'tool'; call: ToolUseBlock; result: ToolResultBlock | undefined; compacted: boolean }
  | { kind: 'orphan_result'; result: ToolResultBlock; compacted: boolean }
  | { kind: 'worker'; block: SubagentBlock; compacted: boolean }
  | { kind: 'notice'; compacted: boolean }
  /** Where the compacted part ends: the checkpoint's summary goes here. */
  | { kind: 'checkpoint'; summary: string };

/**
 * The history in order, each tool call paired with its result (a call never split from its result),
 * the checkpoint placed after the last block it covers. Pure.
 */
export function historyItems(history: PortableHistory): HistoryItem[] {
  const results = new Map<string, ToolResultBlock>();
  for (const block of history.blocks)
    if (block.type === 'tool_result' && !results.has(block.toolUseId)) results.set(block.toolUseId, block);
  const paired = new Set<ToolResultBlock>();
  const items: HistoryItem[] = [];
  const covers = history.compacted?.coversSeq;
  let checkpointPlaced = history.compacted === undefined;
  for (const block of history.blocks) {
    const compacted = covers !== undefined && block.seq !== undefined && block.seq <= covers;
    if (!checkpointPlaced && !compacted) {
      items.push({ kind: 'checkpoint', summary: history.compacted!.summary });
      checkpointPlaced = true;
    }
    switch (block.type) {
      case 'user_message':
        items.push({ kind: 'user', block, compacted });
        break;
      case 'assistant_text':
        items.push({ kind: 'text', block, compacted });
        break;
      case 'thinking':
        items.push({ kind: 'thinking', block, compacted });
        break;
      case 'tool_use': {
        const result = results.get(block.toolUseId);
        if (result) paired.add(result);
        items.push({ kind: 'tool', call: block, result, compacted });
        break;
      }
      case 'tool_result':
        if (!paired.has(block)) items.push({ kind: 'orphan_result', result: block, compacted });
        break;
      case 'subagent':
        items.push({ kind: 'worker', block, compacted });
        break;
      case 'system':
        items.push({ kind: 'notice', compacted });
        break;
    }
  }
  if (!checkpointPlaced) items.push({ kind: 'checkpoint', summary: history.compacted!.summary });
  return items;
}

/** The text of a thinking block another vendor wrote, as the target sees it. */
export function thinkingAsText(content: string, source: string | undefined): string {
  return `[thinking${source ? ` from ${source}` : ''}, converted to text]\n${content}`;
}

/** A tool call (and its result) the target has no tool for, as text. */
export function toolCallAsText(
  call: ToolUseBlock,
  result: ToolResultBlock | undefined,
  source: string | undefined,
): string {
  const outcome =
    result === undefined ? INTERRUPTED_RESULT : `${result.isError ? 'error' : 'result'}:\n${result.content}`;
  return `[tool call${source ? ` from ${source}` : ''}, converted to text: ${call.name} ${JSON.stringify(call.input ?? {})}]\n${outcome}`;
}

export function orphanResultAsText(result: ToolResultBlock): string {
  return `[tool result without its call, converted to text]\n${result.content}`;
}

export function workerAsText(block: SubagentBlock): string {
  return `[worker ${block.name}, converted to text; status ${block.status}]\ntask: ${block.input}${block.output !== undefined ? `\nresult: ${block.output}` : ''}`;
}

/** What a call that never got a result answers (the turn was cut short). */
export const INTERRUPTED_RESULT = '[interrupted: the turn ended before this call returned a result]';

/** ISO 8601 of a block's time, or of `fallback`. */
export function isoOf(time: number | undefined, fallback: number): string {
  return new Date(time ?? fallback).toISOString();
}
