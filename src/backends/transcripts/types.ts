import type { ConversationBlock, UnsequencedEvent, TurnMetadata } from '../../conversation/index.js';
import { MAIN_CONVERSATION } from '../../conversation/index.js';
import type { ParsedTranscripts, ParseWarning } from '../agent-backend.js';
import { timeOf } from './json.js';
import { forEachLine, type TranscriptInput } from './lines.js';

/**
 * What the native transcript parsers share. They are pure: text in, events out, no file or store
 * access, so the same code parses a file being streamed by an import and a string handed to
 * `AgentBackend.parseTranscripts`.
 */

/** A problem a parser recovered from: the line is skipped or kept as a system block, never a crash. */
export interface TranscriptWarning extends ParseWarning {
  /** Stable: `MALFORMED_LINE`, `TRUNCATED_LINE`, `NOT_A_RECORD`, `MISSING_PARENT`, `INVALID_FILE`, `UNRESOLVED_TOOL_USE`. */
  code: string;
  /** The file (or part of a layout) the warning is about, when the caller named it. */
  file?: string;
}

/** A warning about a line of `file` (when the caller named the file, the message starts with it). */
export function transcriptWarning(
  code: string,
  message: string,
  file: string | undefined,
  line?: number,
): TranscriptWarning {
  return {
    code,
    message: file !== undefined ? `${file}: ${message}` : message,
    ...(line !== undefined ? { line } : {}),
    ...(file !== undefined ? { file } : {}),
  };
}

/** Receives the parser's events in log order: `block_complete` for each block, `metadata_update` for usage. */
export type EventSink = (event: UnsequencedEvent) => void;

/** A native compaction seen in the transcript, newest last. */
export interface NativeCompaction {
  /** The block that holds the summary text (Claude Code's compact summary, Gemini's `<state_snapshot>`). */
  blockId?: string;
  summary?: string;
  /** Milliseconds since the epoch. */
  at?: number;
  trigger?: string;
  preTokens?: number;
  postTokens?: number;
  /** User and assistant messages of the thread before the compaction. */
  messagesBefore?: number;
}

/** A subagent the main transcript launched (Claude Code's Task/Agent tool), and the thread that holds its conversation. */
export interface SubagentLink {
  subagentId: string;
  /** The tool call that launched it, when known. */
  toolUseId?: string;
  name: string;
  /** The main thread has a `subagent` block for it. */
  linked: boolean;
}

/** Facts about a whole transcript, gathered while parsing it (for the session record). */
export interface TranscriptInfo {
  nativeSessionId?: string;
  /** A title the user gave the session (Claude Code's `custom-title`). */
  customTitle?: string;
  /** A generated title (Claude Code's `ai-title` / `summary`, Gemini's `summary`). */
  generatedTitle?: string;
  /** The first message a human typed. */
  firstUserMessage?: string;
  cwd?: string;
  /** The CLI version that wrote the transcript. */
  version?: string;
  /** The last model seen. */
  model?: string;
  /** Milliseconds since the epoch of the first and last timestamped record. */
  startedAt?: number;
  endedAt?: number;
  /** User and assistant message blocks (tool traffic, thinking and system blocks excluded). */
  messageCount: number;
  blockCount: number;
  compactions: NativeCompaction[];
  subagents: SubagentLink[];
  /** Some usage was reported but no cost: cost is unknown, not zero. */
  costUnknown: boolean;
}

/**
 * A record's time as the transcript's clock: noted as its start (the first) and its end (the
 * latest); `lastAt` (the time of the last record that had one) when it has none.
 */
export function noteTime(info: TranscriptInfo, value: unknown, lastAt: number): number {
  const at = timeOf(value);
  if (at === undefined) return lastAt;
  info.startedAt ??= at;
  info.endedAt = at;
  return at;
}

export function emptyInfo(): TranscriptInfo {
  return { messageCount: 0, blockCount: 0, compactions: [], subagents: [], costUnknown: false };
}

/** A turn's numbers as the transcript reported them, in log order (also carried by the `metadata_update` events). */
export interface TranscriptUsage {
  conversationId: string;
  metadata: TurnMetadata;
}

/** Everything a parser produced, collected (for small inputs and `AgentBackend.parseTranscripts`). */
export interface ParsedNativeTranscript extends ParsedTranscripts {
  warnings: TranscriptWarning[];
  /** The events in log order: what an import appends. */
  events: UnsequencedEvent[];
  /** Per-message usage, in order. */
  usage: TranscriptUsage[];
  info: TranscriptInfo;
}

/** A streaming parser: feed lines, then `end()`. Events reach the sink as soon as their order is settled. */
export interface TranscriptParser {
  line(text: string, lineNumber: number, terminated: boolean): void;
  /** Optional: takes a line as undecoded bytes instead (see `LineBytesHandler`); a streaming reader then calls only this. */
  lineBytes?(buffer: Buffer, start: number, end: number, lineNumber: number, terminated: boolean): void;
  end(): TranscriptInfo;
  readonly warnings: readonly TranscriptWarning[];
}

/** Blocks by conversation from events: later `block_complete`s of the same id replace earlier ones in place. */
export class BlockCollector {
  readonly main: ConversationBlock[] = [];
  private readonly threads = new Map<string, ConversationBlock[]>();
  private readonly indexes = new Map<string, Map<string, number>>();
  readonly usage: TranscriptUsage[] = [];

  add(event: UnsequencedEvent): void {
    if (event.type === 'metadata_update') {
      this.usage.push({ conversationId: event.conversationId, metadata: event.metadata });
      return;
    }
    if (event.type !== 'block_complete' && event.type !== 'block_start') return;
    const list = this.list(event.conversationId);
    let index = this.indexes.get(event.conversationId);
    if (index === undefined) {
      index = new Map();
      this.indexes.set(event.conversationId, index);
    }
    const at = index.get(event.block.id);
    if (at === undefined) {
      index.set(event.block.id, list.length);
      list.push(event.block);
    } else {
      list[at] = event.block;
    }
  }

  subagents(): Array<{ id: string; blocks: ConversationBlock[] }> {
    return [...this.threads].map(([id, blocks]) => ({ id, blocks }));
  }

  private list(conversationId: string): ConversationBlock[] {
    if (conversationId === MAIN_CONVERSATION) return this.main;
    let list = this.threads.get(conversationId);
    if (list === undefined) {
      list = [];
      this.threads.set(conversationId, list);
    }
    return list;
  }
}

/** Feeds a string or an iterable of lines to a parser, numbering lines from 1. */
export function feed(input: TranscriptInput, parser: TranscriptParser): void {
  if (typeof input === 'string') {
    forEachLine(input, (line, lineNumber, terminated) => parser.line(line, lineNumber, terminated));
    return;
  }
  let lineNumber = 0;
  for (const line of input) parser.line(line, ++lineNumber, true);
}

/**
 * Runs a whole input held in memory through a parser made for it and collects everything it
 * produced: the shared body of `parseClaudeCodeTranscript` and `parseGeminiTranscript`.
 */
export function parseCollected(
  input: TranscriptInput,
  makeParser: (emit: EventSink) => TranscriptParser,
): ParsedNativeTranscript {
  const collector = new BlockCollector();
  const events: UnsequencedEvent[] = [];
  const parser = makeParser((event) => {
    events.push(event);
    collector.add(event);
  });
  feed(input, parser);
  const info = parser.end();
  return {
    blocks: collector.main,
    subagents: collector.subagents(),
    warnings: [...parser.warnings],
    ...(info.nativeSessionId !== undefined ? { nativeSessionId: info.nativeSessionId } : {}),
    events,
    usage: collector.usage,
    info,
  };
}
