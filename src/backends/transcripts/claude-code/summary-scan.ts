import { MAIN_CONVERSATION, type UnsequencedEvent, type TurnMetadata } from '../../../conversation/index.js';
import { isObject, numberOf, objectOf, stringOf, timeOf, type JsonObject } from '../json.js';
import {
  emptyInfo,
  noteTime,
  transcriptWarning,
  type TranscriptInfo,
  type TranscriptParser,
  type TranscriptWarning,
} from '../types.js';
import { SUBAGENT_TOOLS, classifyWrapped, isTitleRecord, maxUsage, recordOfLine, textOf, usageOf } from './records.js';
import { skimRecord } from './record-skim.js';
import { noteCompactionSummary, noteEnvelope, noteTitle } from './session-info.js';
import type { MessageGroup, RecordNode } from './thread.js';
import { UsageLedger } from './usage-ledger.js';

/**
 * What a listing needs from a Claude Code transcript — title, message and turn counts, usage, cost,
 * models, timestamps, compactions — read without building blocks: the import's fast pass
 * (`parley import` keeps the transcript verbatim and builds the blocks on first read).
 *
 * It folds records in file order with the parser's rules for the numbers: usage counted once per
 * `message.id:requestId` (the largest its records report), a turn ended by an ending stop reason
 * or by the next human prompt, records repeated by a resumed session skipped, inline sidechains
 * counted as threads (their usage joins the totals, not the turns), `cost-state` totals as deltas.
 * A rewind (a human prompt whose parent lies before the previous prompt) takes the abandoned
 * records' messages and blocks back when they are within the parser's window, as the parser does.
 * It does not place records by the `parentUuid` chain, so a transcript written out of order can
 * count a turn's end differently; the parser's numbers replace these when the blocks are built.
 */
export interface ClaudeCodeSummary {
  info: TranscriptInfo;
  /** The `metadata_update` events the parser would emit, in file order (usage, cost, turn ends). */
  metadata: UnsequencedEvent[];
}

/** A main-thread record still in the parser's window (a rewind can take it back). */
interface WindowNode {
  position: number;
  uuid: string | undefined;
  bytes: number;
  messages: number;
  blocks: number;
}

interface ScanThread {
  conversationId: string;
  seen: Set<string>;
  group: MessageGroup | undefined;
  turnOpen: boolean;
}

/** Lines at least this long are skimmed rather than parsed (measured on generated transcripts: see bench/import.bench.ts). */
const SKIM_FROM_BYTES = 4096;

/** The ledger's groups point at the record that holds their events; the scan holds none. */
const NO_NODE: RecordNode = { position: 0, uuid: undefined, events: [], bytes: 0, emitted: true };

export class ClaudeCodeSummaryScan implements TranscriptParser {
  readonly warnings: TranscriptWarning[] = [];
  readonly info: TranscriptInfo = emptyInfo();
  readonly metadata: UnsequencedEvent[] = [];

  private readonly main: ScanThread = newThread(MAIN_CONVERSATION);
  private readonly sideThreads = new Map<string, ScanThread>();
  /** Inline sidechain record uuid → its thread id. */
  private readonly sideThreadOf = new Map<string, string>();
  private readonly usage = new UsageLedger();
  private lastAt = 0;
  private ended = false;
  /** The main thread's window, as `Thread` keeps it: position of each chain record, and the newest records. */
  private readonly positions = new Map<string, number>();
  private readonly window: WindowNode[] = [];
  private windowHead = 0;
  private windowBytes = 0;
  private nextPosition = 0;
  private lastHumanPosition = -1;
  /** Window nodes that left the window, reused by `addNode` (one per record otherwise, each living long enough to be promoted). */
  private readonly spareNodes: WindowNode[] = [];
  /** The change in counts a rewind made while the current record was read. */
  private rewoundMessages = 0;
  private rewoundBlocks = 0;
  private readonly limits: { records: number; bytes: number };

  constructor(private readonly options: { file?: string; windowRecords?: number; windowBytes?: number } = {}) {
    this.limits = { records: options.windowRecords ?? 256, bytes: options.windowBytes ?? 4 * 1024 * 1024 };
  }

  /**
   * A line as bytes: a long one is skimmed for the fields the summary reads (`record-skim.ts`);
   * a short one, or one the skim gives up on, is decoded and parsed whole (V8's JSON.parse beats a
   * skim in JavaScript until there is much to skip).
   */
  lineBytes(buffer: Buffer, start: number, end: number, lineNumber: number, terminated: boolean): void {
    const record = terminated && end - start >= SKIM_FROM_BYTES ? skimRecord(buffer, start, end) : undefined;
    if (record === undefined) {
      this.parsedLine(buffer.toString('utf8', start, end), lineNumber, terminated, end - start);
      return;
    }
    this.fold(record, lineNumber, end - start);
  }

  line(text: string, lineNumber: number, terminated = true): void {
    this.parsedLine(text, lineNumber, terminated, undefined);
  }

  /** A line parsed whole; `bytes` is its length in UTF-8 when the caller knows it. */
  private parsedLine(text: string, lineNumber: number, terminated: boolean, bytes: number | undefined): void {
    const record = recordOfLine(text, lineNumber, terminated, this.warnLine);
    if (record === undefined) return;
    this.fold(record, lineNumber, bytes ?? Buffer.byteLength(text));
  }

  private readonly warnLine = (code: string, message: string, line: number): void => this.warn(code, message, line);

  private fold(record: JsonObject, lineNumber: number, bytes: number): void {
    const messagesBefore = this.info.messageCount;
    const blocksBefore = this.info.blockCount;
    this.rewoundMessages = 0;
    this.rewoundBlocks = 0;
    const node = this.record(record, lineNumber, bytes);
    if (node === 'main') {
      // What a rewind took back (and its marker) belongs to other nodes, not to this record's.
      const messages = this.info.messageCount - messagesBefore - this.rewoundMessages;
      const blocks = this.info.blockCount - blocksBefore - this.rewoundBlocks;
      this.addNode(stringOf(record['uuid']), bytes, messages, blocks);
    }
  }

  end(): TranscriptInfo {
    if (this.ended) return this.info;
    this.ended = true;
    this.closeGroup(this.main);
    for (const thread of this.sideThreads.values()) this.closeGroup(thread);
    // As the parser's `end`: a finished file's last exchange is a turn.
    if (this.main.turnOpen) {
      this.main.turnOpen = false;
      this.push(MAIN_CONVERSATION, this.lastAt, { turnComplete: true });
    }
    const estimate = this.usage.estimate();
    if (estimate !== undefined) {
      if (estimate.costUnknown === true) this.info.costUnknown = true;
      this.push(MAIN_CONVERSATION, this.lastAt, estimate);
    } else if (this.usage.costUnknown) {
      this.info.costUnknown = true;
      this.push(MAIN_CONVERSATION, this.lastAt, { costUnknown: true });
    }
    return this.info;
  }

  /** The scan's result (call after `end`). */
  summary(): ClaudeCodeSummary {
    return { info: this.info, metadata: this.metadata };
  }

  /** Folds one record; 'main' when the parser would add a node for it to the main thread. */
  private record(record: JsonObject, lineNumber: number, bytes: number): 'main' | undefined {
    const type = stringOf(record['type']);
    const at = this.timeOf(record['timestamp']);
    noteEnvelope(this.info, record);
    if (type !== undefined && isTitleRecord(type)) {
      noteTitle(this.info, type, record);
      if (type === 'last-prompt') return undefined;
      this.info.blockCount++;
      // The parser keeps a title as a node without a uuid: it takes a place in the window.
      this.addNode(undefined, bytes, 0, 1);
      return undefined;
    }
    const thread = this.threadFor(record);
    const counts = thread === this.main;
    const uuid = stringOf(record['uuid']);
    if (uuid !== undefined) {
      // A record repeated by a resumed session.
      if (counts ? this.positions.has(uuid) : thread.seen.has(uuid)) return undefined;
      if (!counts) thread.seen.add(uuid);
    }
    if (type !== 'assistant') this.closeGroup(thread);
    switch (type) {
      case 'user':
        this.userRecord(record, thread, uuid, lineNumber, at, counts);
        return counts ? 'main' : undefined;
      case 'assistant':
        this.assistantRecord(record, thread, uuid, lineNumber, at, counts);
        return counts ? 'main' : undefined;
      case 'system':
        this.systemRecord(record, thread, at, counts);
        return counts ? 'main' : undefined;
      case 'attachment': {
        const attachment = objectOf(record['attachment']);
        const prompt = stringOf(attachment?.['prompt']);
        const queued = attachment?.['type'] === 'queued_command' && prompt !== undefined;
        if (counts) {
          this.info.blockCount++;
          if (queued) {
            this.info.messageCount++;
            this.info.firstUserMessage ??= prompt;
          }
        }
        if (counts && queued) this.lastHumanPosition = this.nextPosition;
        return counts ? 'main' : undefined;
      }
      case 'cost-state': {
        const metadata = this.usage.costState(record);
        if (Object.keys(metadata).length === 0) return undefined;
        this.push(thread.conversationId, at, metadata);
        if (counts) this.addNode(undefined, bytes, 0, 0);
        return undefined;
      }
      default:
        if (counts) this.info.blockCount++;
        return counts ? 'main' : undefined;
    }
  }

  /** As `Thread.add`: the main thread's newest records, within the window's limits. */
  private addNode(uuid: string | undefined, bytes: number, messages: number, blocks: number): void {
    const position = this.nextPosition++;
    if (uuid !== undefined) this.positions.set(uuid, position);
    const spare = this.spareNodes.pop();
    if (spare === undefined) this.window.push({ position, uuid, bytes, messages, blocks });
    else {
      spare.position = position;
      spare.uuid = uuid;
      spare.bytes = bytes;
      spare.messages = messages;
      spare.blocks = blocks;
      this.window.push(spare);
    }
    this.windowBytes += bytes;
    while (
      this.window.length - this.windowHead > 0 &&
      (this.window.length - this.windowHead > this.limits.records || this.windowBytes > this.limits.bytes)
    ) {
      // Nothing reads the window before its head again: the node can be reused.
      const leaving = this.window[this.windowHead]!;
      this.windowBytes -= leaving.bytes;
      this.spareNodes.push(leaving);
      this.windowHead++;
    }
    if (this.windowHead > 1024 && this.windowHead * 2 > this.window.length) {
      this.window.splice(0, this.windowHead);
      this.windowHead = 0;
    }
  }

  /**
   * As the parser's `maybeRewind`: the records after the fork that are still in the window leave
   * the thread (their messages and blocks with them; their usage still counts), and a `system`
   * block marks the fork.
   */
  private maybeRewind(record: JsonObject): void {
    const parent = stringOf(record['parentUuid']);
    if (parent === undefined) return;
    const fork = this.positions.get(parent);
    if (fork === undefined || fork >= this.lastHumanPosition) return;
    const kept: WindowNode[] = [];
    let cut = 0;
    for (let index = this.windowHead; index < this.window.length; index++) {
      const node = this.window[index]!;
      if (node.position <= fork || node.uuid === undefined) {
        kept.push(node);
        continue;
      }
      cut++;
      this.windowBytes -= node.bytes;
      this.positions.delete(node.uuid);
      this.info.messageCount -= node.messages;
      this.info.blockCount -= node.blocks;
      this.rewoundMessages -= node.messages;
      this.rewoundBlocks -= node.blocks;
    }
    const firstInWindow = this.window[this.windowHead]?.position ?? this.nextPosition;
    this.window.length = 0;
    this.window.push(...kept);
    this.windowHead = 0;
    // Records of the branch that already left the window stay, and are named by the marker.
    if (cut === 0 && fork + 1 >= firstInWindow) return;
    this.info.blockCount++;
    this.rewoundBlocks++;
    this.addNode(undefined, 0, 0, 1);
  }

  private userRecord(
    record: JsonObject,
    thread: ScanThread,
    uuid: string | undefined,
    lineNumber: number,
    at: number,
    counts: boolean,
  ): void {
    const content = objectOf(record['message'])?.['content'];
    let blocks = 0;
    let prompt: string | undefined;
    let human = false;
    const text = (value: string): void => {
      blocks++;
      if (record['isMeta'] === true) return;
      const wrapped = classifyWrapped(value);
      if (wrapped !== undefined) {
        human = wrapped.kind === 'command';
        return;
      }
      prompt = value;
      human = true;
    };
    if (record['isCompactSummary'] === true) {
      blocks = 1;
      if (thread.conversationId === MAIN_CONVERSATION)
        noteCompactionSummary(this.info, textOf(content), uuid ?? `line-${lineNumber}`, at);
    } else if (typeof content === 'string') {
      text(content);
    } else if (Array.isArray(content)) {
      const texts: string[] = [];
      for (const item of content) {
        if (!isObject(item)) continue;
        const itemType = item['type'];
        if (itemType === 'text') texts.push(stringOf(item['text']) ?? '');
        else if (itemType === 'image' || itemType === 'document') texts.push(`[${itemType}]`);
        else blocks++; // a tool result, or an item kept as `unknown_record`
      }
      if (texts.length > 0) text(texts.join('\n\n'));
    } else {
      blocks = 1;
    }
    if (human && thread.turnOpen) {
      // A human prompt starts a new turn, so the one before it has ended even without a stop reason.
      thread.turnOpen = false;
      if (thread.conversationId === MAIN_CONVERSATION) this.push(thread.conversationId, at, { turnComplete: true });
    }
    if (counts && human) this.maybeRewind(record);
    if (counts) {
      this.info.blockCount += blocks;
      if (prompt !== undefined) {
        this.info.messageCount++;
        this.info.firstUserMessage ??= prompt;
      }
      // The prompt's node comes next (see `line`).
      if (human) this.lastHumanPosition = this.nextPosition;
    }
  }

  private assistantRecord(
    record: JsonObject,
    thread: ScanThread,
    uuid: string | undefined,
    lineNumber: number,
    at: number,
    counts: boolean,
  ): void {
    const message = objectOf(record['message']);
    const messageId = stringOf(message?.['id']);
    const requestId = stringOf(record['requestId']);
    const key = `${messageId ?? uuid ?? `line-${lineNumber}`}:${requestId ?? ''}`;
    if (thread.group !== undefined && thread.group.key !== key) this.closeGroup(thread);
    const model = stringOf(message?.['model']);
    if (counts) {
      const content = message?.['content'];
      if (record['isApiErrorMessage'] === true || !Array.isArray(content)) {
        this.info.blockCount++;
        if (record['isApiErrorMessage'] !== true && typeof content === 'string') this.info.messageCount++;
      } else {
        for (const item of content) {
          if (!isObject(item)) continue;
          this.info.blockCount++;
          if (item['type'] === 'text') this.info.messageCount++;
          // A subagent call gets a `subagent` block beside it when its result comes.
          else if (item['type'] === 'tool_use' && typeof item['name'] === 'string' && SUBAGENT_TOOLS.has(item['name']))
            this.info.blockCount++;
        }
      }
    }
    const usage = usageOf(message?.['usage']);
    const costUsd = numberOf(record['costUSD']);
    const stopReason = stringOf(message?.['stop_reason']);
    joinGroup(thread, { key, messageId, usage, model, stopReason, costUsd, node: NO_NODE, at });
    thread.turnOpen = true;
  }

  private systemRecord(record: JsonObject, thread: ScanThread, at: number, counts: boolean): void {
    const subtype = stringOf(record['subtype']);
    if (subtype === 'turn_duration') {
      // Metadata only (a duration), no block; it closes the turn as the parser's `systemRecord` does.
      if (thread.turnOpen) {
        thread.turnOpen = false;
        if (thread.conversationId === MAIN_CONVERSATION) this.push(thread.conversationId, at, { turnComplete: true });
      }
      return;
    }
    if (counts) this.info.blockCount++;
    if (subtype !== 'compact_boundary' || thread.conversationId !== MAIN_CONVERSATION) return;
    const compact = objectOf(record['compactMetadata']) ?? objectOf(record['compact_metadata']) ?? {};
    const trigger = stringOf(compact['trigger']);
    const preTokens = numberOf(compact['preTokens']) ?? numberOf(compact['pre_tokens']);
    const postTokens = numberOf(compact['postTokens']) ?? numberOf(compact['post_tokens']);
    this.info.compactions.push({
      at,
      messagesBefore: this.info.messageCount,
      ...(trigger !== undefined ? { trigger } : {}),
      ...(preTokens !== undefined ? { preTokens } : {}),
      ...(postTokens !== undefined ? { postTokens } : {}),
    });
  }

  private threadFor(record: JsonObject): ScanThread {
    if (record['isSidechain'] !== true) return this.main;
    const uuid = stringOf(record['uuid']);
    const parent = stringOf(record['parentUuid']);
    let threadId = stringOf(record['agentId']) ?? (parent !== undefined ? this.sideThreadOf.get(parent) : undefined);
    if (threadId === undefined) threadId = `sidechain-${uuid ?? this.sideThreads.size}`;
    if (uuid !== undefined) this.sideThreadOf.set(uuid, threadId);
    let thread = this.sideThreads.get(threadId);
    if (thread === undefined) {
      thread = newThread(threadId);
      this.sideThreads.set(threadId, thread);
    }
    return thread;
  }

  private closeGroup(thread: ScanThread): void {
    const group = thread.group;
    if (group === undefined) return;
    thread.group = undefined;
    const metadata = this.usage.message(group, thread.conversationId === MAIN_CONVERSATION);
    if (metadata === undefined || metadata.turnComplete === true) thread.turnOpen = false;
    if (metadata === undefined) return;
    if (group.model !== undefined && thread === this.main) this.info.model = group.model;
    if (Object.keys(metadata).length > 0) this.push(thread.conversationId, group.at, metadata);
  }

  private push(conversationId: string, at: number, metadata: TurnMetadata): void {
    this.metadata.push({ type: 'metadata_update', conversationId, at, metadata });
  }

  private timeOf(value: unknown): number {
    this.lastAt = noteTime(this.info, value, this.lastAt);
    return this.lastAt;
  }

  private warn(code: string, message: string, line?: number): void {
    this.warnings.push(transcriptWarning(code, message, this.options.file, line));
  }
}

function newThread(conversationId: string): ScanThread {
  return { conversationId, seen: new Set(), group: undefined, turnOpen: false };
}

/** As `Thread.joinGroup`: a message's usage and cost are the largest its records report, its stop reason and model the last. */
function joinGroup(thread: ScanThread, part: MessageGroup): void {
  const group = thread.group;
  if (group === undefined) {
    thread.group = part;
    return;
  }
  group.usage = maxUsage(group.usage, part.usage);
  if (part.stopReason !== undefined) group.stopReason = part.stopReason;
  if (part.model !== undefined) group.model = part.model;
  if (part.costUsd !== undefined) group.costUsd = Math.max(group.costUsd ?? 0, part.costUsd);
}
