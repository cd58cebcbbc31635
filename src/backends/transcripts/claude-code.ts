import { MAIN_CONVERSATION, type ConversationBlock, type UnsequencedEvent } from '../../conversation/index.js';
import { isBlank, isObject, numberOf, objectOf, parseJson, stringOf, timeOf, type JsonObject } from './json.js';
import type { TranscriptInput } from './lines.js';
import {
  emptyInfo,
  noteTime,
  parseCollected,
  transcriptWarning,
  type EventSink,
  type ParsedNativeTranscript,
  type TranscriptInfo,
  type TranscriptParser,
  type TranscriptWarning,
} from './types.js';
import { ChainOrder, type HeldRecord } from './claude-code/chain-order.js';
import {
  assignIds,
  blockEvent,
  blockId,
  mapAssistantContent,
  mapAttachment,
  mapSystemRecord,
  unknownRecord,
} from './claude-code/blocks.js';
import { isTitleRecord, recordOfLine, textOf, usageOf } from './claude-code/records.js';
import { rewindBlock } from './claude-code/rewind.js';
import { noteCompactionSummary, noteEnvelope, noteTitle } from './claude-code/session-info.js';
import { Thread, type RecordNode } from './claude-code/thread.js';
import { ToolPairing } from './claude-code/tool-pairing.js';
import { UsageLedger } from './claude-code/usage-ledger.js';
import { mapUserContent } from './claude-code/user-content.js';

/**
 * Claude Code's session JSONL (`~/.claude/projects/<encoded-cwd>/<sessionId>.jsonl`) → Parley blocks.
 *
 * - One record per content block; assistant records of one API message share `message.id`, and
 *   their usage (repeated on each) is counted once per `message.id:requestId`.
 * - Order: the `parentUuid` chain's. A record read before its parent is held until the parent is
 *   read, then placed right after it (bounded: past the window it is let go in file order). A human prompt
 *   whose parent lies before the previous human prompt starts a new branch: the records of the
 *   abandoned branch are taken out of the thread and kept inside a `system` block at the fork
 *   (their usage still counts: those tokens were spent). To do that while streaming, the newest
 *   records are held back in a bounded window before they are emitted.
 * - Inline sidechain records (`isSidechain`, older versions) become subagent threads; a subagent
 *   file is parsed by its own parser with its agent id as the conversation id.
 * - Every record kind it does not map is kept as a `system` block `unknown_record` with the record
 *   in `data`; a line that is not JSON is reported with its number and skipped.
 */

export interface ClaudeCodeParserOptions {
  emit: EventSink;
  /** The thread this file's records go to: `main`, or a subagent id for a subagent file. */
  conversationId?: string;
  /** Named in warnings. */
  file?: string;
  /** Assistant message ids of the parent transcript: a subagent file's replays of them are dropped. */
  parentMessageIds?: ReadonlySet<string>;
  /** Keep the assistant message ids and record uuids seen (`messageIds`, `uuids`), to pass to the subagent files' parsers. */
  collectMessageIds?: boolean;
  /** Record uuids of the parent transcript: a subagent file's record whose parent is one of them is not missing its parent. */
  parentUuids?: ReadonlySet<string>;
  /**
   * Blocks for the main thread to place where they happened: each goes before the first record at or
   * after its time (a compaction agent's thread, started before the boundary it leads to), in time order.
   */
  placeByTime?: ReadonlyArray<{ at: number; block: ConversationBlock }>;
  /**
   * Records held back so a rewind can take its abandoned branch out of the thread (default 256, at
   * most 4 MiB of them). Larger windows cost throughput: the held records survive young-generation
   * garbage collections. A rewind further back than the window is still marked, naming where the
   * abandoned branch starts.
   */
  windowRecords?: number;
  windowBytes?: number;
  /**
   * The file is still being written (`parley import --watch`): at `end()` an API message with no
   * stop reason yet keeps its usage back (more of its records may follow, and usage must be counted
   * once), and a tool call with no result yet stays running instead of being closed as interrupted.
   */
  live?: boolean;
}

export class ClaudeCodeParser implements TranscriptParser {
  readonly warnings: TranscriptWarning[] = [];
  readonly info: TranscriptInfo = emptyInfo();
  /** Assistant message ids seen (when `collectMessageIds`). */
  readonly messageIds = new Set<string>();
  /** Record uuids seen (when `collectMessageIds`). */
  readonly uuids = new Set<string>();

  private readonly emit: EventSink;
  private readonly main: Thread;
  private readonly limits: { records: number; bytes: number };
  private readonly sideThreads = new Map<string, Thread>();
  /** Inline sidechain record uuid → its thread id. */
  private readonly sideThreadOf = new Map<string, string>();
  private readonly tools: ToolPairing;
  private readonly usage = new UsageLedger();
  private readonly order: ChainOrder;
  private lastAt = 0;
  private droppedReplays = 0;
  private ended = false;
  private readonly toPlace: Array<{ at: number; block: ConversationBlock }>;
  /** Inline sidechains Claude Code 2.0.x started with the prompt "Warmup" to fill its cache. */
  private readonly warmups = new Set<string>();

  constructor(private readonly options: ClaudeCodeParserOptions) {
    this.toPlace = [...(options.placeByTime ?? [])].sort((a, b) => b.at - a.at);
    this.emit = options.emit;
    this.tools = new ToolPairing(this.info);
    this.limits = { records: options.windowRecords ?? 256, bytes: options.windowBytes ?? 4 * 1024 * 1024 };
    this.main = new Thread(options.conversationId ?? MAIN_CONVERSATION, true, this.limits);
    this.order = new ChainOrder(this.limits);
  }

  line(text: string, lineNumber: number, terminated = true): void {
    const record = recordOfLine(text, lineNumber, terminated, (code, message, line) => this.warn(code, message, line));
    if (record === undefined) return;
    this.place({ record, lineNumber, bytes: text.length });
  }

  end(): TranscriptInfo {
    if (this.ended) return this.info;
    this.ended = true;
    // Records whose parent never came: in file order, each with its own children after it.
    for (let held = this.order.takeOldest(); held !== undefined; held = this.order.takeOldest())
      this.placeWithChildren(held);
    this.placeDue(Number.POSITIVE_INFINITY);
    for (const thread of this.allThreads()) {
      if (this.options.live !== true || thread.group?.stopReason !== undefined) this.closeGroup(thread);
    }
    const late = this.options.live === true ? [] : this.tools.closeUnanswered();
    for (const thread of this.allThreads()) thread.flush(true, this.emit);
    // A finished file's last exchange is a turn, though no stop reason (Claude Code 2.x writes null) ended it.
    const lastTurn = this.options.live === true ? undefined : this.endOpenTurn(this.main, this.lastAt);
    if (lastTurn !== undefined) this.emit(lastTurn);
    for (const event of late) this.emit(event);
    for (const [threadId] of this.sideThreads) {
      if (!this.tools.isLinked(threadId))
        this.info.subagents.push({
          subagentId: threadId,
          name: this.warmups.has(threadId) ? 'warmup' : 'sidechain',
          linked: false,
        });
    }
    const estimate = this.options.live === true ? undefined : this.usage.estimate();
    if (this.main.conversationId === MAIN_CONVERSATION && estimate !== undefined) {
      if (estimate.costUnknown === true) this.info.costUnknown = true;
      this.emit({ type: 'metadata_update', conversationId: MAIN_CONVERSATION, at: this.lastAt, metadata: estimate });
    } else if (this.main.conversationId === MAIN_CONVERSATION && this.usage.costUnknown) {
      this.info.costUnknown = true;
      this.emit({
        type: 'metadata_update',
        conversationId: MAIN_CONVERSATION,
        at: this.lastAt,
        metadata: { costUnknown: true },
      });
    }
    if (this.droppedReplays > 0) {
      this.warn(
        'PARENT_REPLAY',
        `${this.droppedReplays} record(s) repeating the parent session's messages were dropped`,
      );
    }
    return this.info;
  }

  // ---------------------------------------------------------------------------------------------
  // Chain order

  /** Places a record now, or holds it when its parent has not been read yet. */
  private place(held: HeldRecord): void {
    const parent = held.record['parentUuid'];
    if (
      typeof parent === 'string' &&
      !this.order.isPlaced(parent) &&
      !isTitleRecord(stringOf(held.record['type']) ?? '')
    ) {
      this.order.hold(parent, held);
      while (this.order.overLimits) {
        const oldest = this.order.takeOldest();
        if (oldest === undefined) break;
        this.placeWithChildren(oldest);
      }
      return;
    }
    this.placeWithChildren(held);
  }

  /** Places a record, then the records that waited for it, depth first (each child's own children right after it). */
  private placeWithChildren(first: HeldRecord): void {
    const stack = [first];
    for (let held = stack.pop(); held !== undefined; held = stack.pop()) {
      this.record(held.record, held.lineNumber, held.bytes);
      const uuid = held.record['uuid'];
      if (typeof uuid !== 'string') continue;
      this.order.markPlaced(uuid);
      const children = this.order.takeChildren(uuid);
      if (children !== undefined)
        for (let index = children.length - 1; index >= 0; index--) stack.push(children[index]!);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Records

  private record(record: JsonObject, lineNumber: number, bytes: number): void {
    const type = stringOf(record['type']);
    const at = this.timeOf(record['timestamp']);
    noteEnvelope(this.info, record);
    if (record['timestamp'] !== undefined && record['isSidechain'] !== true) this.placeDue(at);
    if (this.options.collectMessageIds === true && typeof record['uuid'] === 'string') this.uuids.add(record['uuid']);
    if (type !== undefined && isTitleRecord(type)) {
      noteTitle(this.info, type, record);
      // A leaf pointer is bookkeeping; a title is kept verbatim too.
      if (type !== 'last-prompt')
        this.addNode(
          this.main,
          undefined,
          [blockEvent(this.main.conversationId, unknownRecord(blockId(undefined, lineNumber), at, record, type))],
          bytes,
        );
      return;
    }
    const thread = this.threadFor(record);
    const uuid = stringOf(record['uuid']);
    if (uuid !== undefined && thread.positions.has(uuid)) return; // a record repeated by a resumed session
    if (type !== 'assistant') this.closeGroup(thread);
    switch (type) {
      case 'user':
        this.userRecord(record, thread, uuid, lineNumber, at, bytes);
        return;
      case 'assistant':
        this.assistantRecord(record, thread, uuid, lineNumber, at, bytes);
        return;
      case 'system':
        this.systemRecord(record, thread, uuid, lineNumber, at, bytes);
        return;
      case 'attachment':
        this.attachmentRecord(record, thread, uuid, lineNumber, at, bytes);
        return;
      case 'cost-state':
        this.costRecord(record, thread, at, bytes);
        return;
      default:
        this.addNode(
          thread,
          uuid,
          [blockEvent(thread.conversationId, unknownRecord(blockId(uuid, lineNumber), at, record, type))],
          bytes,
        );
    }
  }

  private userRecord(
    record: JsonObject,
    thread: Thread,
    uuid: string | undefined,
    lineNumber: number,
    at: number,
    bytes: number,
  ): void {
    const { blocks, updates, human, prompt, summary } = mapUserContent(record, this.tools, at);
    if (prompt !== undefined && thread === this.main) this.info.firstUserMessage ??= prompt;
    const turnEnd = human ? this.endOpenTurn(thread, at) : undefined;
    if (human && thread.detectRewinds) this.maybeRewind(thread, record, uuid, at);
    if (thread === this.main && !this.isChainKnown(thread, record)) this.warnMissingParent(record, uuid, lineNumber);
    assignIds(blocks, uuid, lineNumber);
    if (summary !== undefined && thread.conversationId === MAIN_CONVERSATION)
      noteCompactionSummary(this.info, summary, blocks[0]?.id, at);
    // Status updates of tool calls emitted earlier come first, then the result blocks.
    // The turn end goes after the prompt's blocks: a re-import recognises metadata by the block before it.
    const events = [...updates, ...blocks.map((block) => blockEvent(thread.conversationId, block))];
    if (turnEnd !== undefined) events.push(turnEnd);
    const node = this.addNode(thread, uuid, events, bytes);
    if (human) thread.lastHumanPosition = node.position;
  }

  private assistantRecord(
    record: JsonObject,
    thread: Thread,
    uuid: string | undefined,
    lineNumber: number,
    at: number,
    bytes: number,
  ): void {
    const message = objectOf(record['message']);
    const messageId = stringOf(message?.['id']);
    if (messageId !== undefined && this.options.parentMessageIds?.has(messageId)) {
      this.droppedReplays++;
      return;
    }
    if (messageId !== undefined && this.options.collectMessageIds) this.messageIds.add(messageId);
    const requestId = stringOf(record['requestId']);
    const key = `${messageId ?? uuid ?? `line-${lineNumber}`}:${requestId ?? ''}`;
    if (thread.group !== undefined && thread.group.key !== key) this.closeGroup(thread);

    const model = stringOf(message?.['model']);
    const { blocks, tools } = mapAssistantContent(record, message?.['content'], model, uuid, lineNumber, at);
    if (thread === this.main && !this.isChainKnown(thread, record)) this.warnMissingParent(record, uuid, lineNumber);
    assignIds(blocks, uuid, lineNumber);
    const node = this.addNode(
      thread,
      uuid,
      blocks.map((block) => blockEvent(thread.conversationId, block)),
      bytes,
    );
    this.tools.register(tools, node, thread);
    const usage = usageOf(message?.['usage']);
    const costUsd = numberOf(record['costUSD']);
    const stopReason = stringOf(message?.['stop_reason']);
    thread.joinGroup({ key, messageId, usage, model, stopReason, costUsd, node, at });
    thread.turnOpen = true;
  }

  /**
   * A human prompt starts a new turn, so the one before it has ended even if its last assistant
   * record carries no `stop_reason` (interrupted, or written by a CLI version that leaves it null).
   */
  private endOpenTurn(thread: Thread, at: number): UnsequencedEvent | undefined {
    if (!thread.turnOpen) return undefined;
    thread.turnOpen = false;
    if (thread.conversationId !== MAIN_CONVERSATION) return undefined;
    return { type: 'metadata_update', conversationId: thread.conversationId, at, metadata: { turnComplete: true } };
  }

  private systemRecord(
    record: JsonObject,
    thread: Thread,
    uuid: string | undefined,
    lineNumber: number,
    at: number,
    bytes: number,
  ): void {
    const conversationId = thread.conversationId;
    const { block, metadata, compaction } = mapSystemRecord(record, at);
    // Claude Code 2.1 closes each turn with its duration: the turn has ended, whatever the stop reason said.
    if (stringOf(record['subtype']) === 'turn_duration' && thread.turnOpen) {
      thread.turnOpen = false;
      if (conversationId === MAIN_CONVERSATION) {
        if (metadata.length === 0) metadata.push({});
        metadata[0]!.turnComplete = true;
      }
    }
    if (compaction !== undefined && conversationId === MAIN_CONVERSATION) {
      this.info.compactions.push({ at, messagesBefore: this.info.messageCount, ...compaction });
    }
    const events: UnsequencedEvent[] = [];
    if (block !== undefined) {
      assignIds([block], uuid, lineNumber);
      events.push(blockEvent(conversationId, block));
    }
    for (const entry of metadata) events.push({ type: 'metadata_update', conversationId, at, metadata: entry });
    this.addNode(thread, uuid, events, bytes);
  }

  private attachmentRecord(
    record: JsonObject,
    thread: Thread,
    uuid: string | undefined,
    lineNumber: number,
    at: number,
    bytes: number,
  ): void {
    const { block, prompt } = mapAttachment(record, at);
    const human = prompt !== undefined;
    if (human && thread === this.main && this.info.firstUserMessage === undefined) this.info.firstUserMessage = prompt;
    assignIds([block], uuid, lineNumber);
    const node = this.addNode(thread, uuid, [blockEvent(thread.conversationId, block)], bytes);
    if (human) thread.lastHumanPosition = node.position;
  }

  private costRecord(record: JsonObject, thread: Thread, at: number, bytes: number): void {
    const metadata = this.usage.costState(record);
    if (Object.keys(metadata).length === 0) return;
    this.addNode(
      thread,
      undefined,
      [{ type: 'metadata_update', conversationId: thread.conversationId, at, metadata }],
      bytes,
    );
  }

  // ---------------------------------------------------------------------------------------------
  // Threads, rewinds and the window

  private threadFor(record: JsonObject): Thread {
    if (record['isSidechain'] !== true || this.main.conversationId !== MAIN_CONVERSATION) return this.main;
    const uuid = stringOf(record['uuid']);
    const parent = stringOf(record['parentUuid']);
    const agentId = stringOf(record['agentId']);
    let threadId = agentId ?? (parent !== undefined ? this.sideThreadOf.get(parent) : undefined);
    if (threadId === undefined) threadId = `sidechain-${uuid ?? this.sideThreads.size}`;
    if (uuid !== undefined) this.sideThreadOf.set(uuid, threadId);
    let thread = this.sideThreads.get(threadId);
    if (thread === undefined) {
      thread = new Thread(threadId, false, this.limits);
      this.sideThreads.set(threadId, thread);
      this.linkInlineSidechain(threadId, record);
    }
    return thread;
  }

  /** An old inline sidechain starts with the Task prompt: link it to the unanswered Task call with that prompt. */
  private linkInlineSidechain(threadId: string, record: JsonObject): void {
    const content = objectOf(record['message'])?.['content'];
    const prompt = typeof content === 'string' ? content : Array.isArray(content) ? textOf(content) : undefined;
    if (prompt?.trim() === 'Warmup') this.warmups.add(threadId);
    if (prompt !== undefined) this.tools.linkInlineSidechain(threadId, prompt);
  }

  private *allThreads(): Iterable<Thread> {
    yield this.main;
    yield* this.sideThreads.values();
  }

  /** The blocks to place whose time has come, before the record at `at`. */
  private placeDue(at: number): void {
    for (let next = this.toPlace.at(-1); next !== undefined && next.at <= at; next = this.toPlace.at(-1)) {
      this.toPlace.pop();
      this.addNode(this.main, undefined, [blockEvent(this.main.conversationId, next.block)], 0);
    }
  }

  private isChainKnown(thread: Thread, record: JsonObject): boolean {
    const parent = record['parentUuid'];
    return (
      typeof parent !== 'string' ||
      this.options.parentUuids?.has(parent) === true ||
      parent === thread.lastUuid ||
      thread.positions.has(parent) ||
      this.sideThreadOf.has(parent)
    );
  }

  private warnMissingParent(record: JsonObject, uuid: string | undefined, lineNumber: number): void {
    this.warn(
      'MISSING_PARENT',
      `line ${lineNumber}: record ${uuid ?? '(no uuid)'} names parent ${String(record['parentUuid'])}, which is not in this transcript; kept in file order`,
      lineNumber,
    );
  }

  /** A human prompt whose parent lies before the previous human prompt: the user rewound, and what came after the parent is abandoned. */
  private maybeRewind(thread: Thread, record: JsonObject, uuid: string | undefined, at: number): void {
    const parent = stringOf(record['parentUuid']);
    if (parent === undefined) return;
    const forkPosition = thread.positions.get(parent);
    if (forkPosition === undefined || forkPosition >= thread.lastHumanPosition) return;

    const branch = thread.cutAfter(forkPosition);
    for (const event of branch.blocks) {
      if (event.block.type === 'tool_use') this.tools.forget(event.block.toolUseId);
      if (event.conversationId === MAIN_CONVERSATION) {
        this.info.blockCount--;
        if (event.block.type === 'user_message' || event.block.type === 'assistant_text') this.info.messageCount--;
      }
    }
    if (branch.records === 0 && branch.emittedFrom === undefined) return;
    const block = rewindBlock(branch, parent, `${uuid ?? `rewind-${thread.nextPosition}`}:rewind`, at);
    this.addNode(thread, undefined, [blockEvent(thread.conversationId, block), ...branch.metadata], 0);
  }

  private addNode(thread: Thread, uuid: string | undefined, events: UnsequencedEvent[], bytes: number): RecordNode {
    // Counted as they are added: a rewind takes back what it abandons.
    if (thread.conversationId === this.main.conversationId) {
      for (const event of events) {
        if (event.type !== 'block_complete') continue;
        this.info.blockCount++;
        if (event.block.type === 'user_message' || event.block.type === 'assistant_text') this.info.messageCount++;
      }
    }
    return thread.add(uuid, events, bytes, this.emit);
  }

  private closeGroup(thread: Thread): void {
    const group = thread.group;
    if (group === undefined) return;
    thread.group = undefined;
    const metadata = this.usage.message(group, thread.conversationId === MAIN_CONVERSATION);
    // A message counted already (repeated by a resumed session) had its turn counted with it.
    if (metadata === undefined || metadata.turnComplete === true) thread.turnOpen = false;
    if (metadata === undefined) return;
    if (group.model !== undefined && thread.conversationId === this.main.conversationId) this.info.model = group.model;
    if (Object.keys(metadata).length === 0) return;
    const event: UnsequencedEvent = {
      type: 'metadata_update',
      conversationId: thread.conversationId,
      at: group.at,
      metadata,
    };
    if (group.node.emitted) this.emit(event);
    else group.node.events.push(event);
  }

  // ---------------------------------------------------------------------------------------------
  // Helpers

  private timeOf(value: unknown): number {
    this.lastAt = noteTime(this.info, value, this.lastAt);
    return this.lastAt;
  }

  private warn(code: string, message: string, line?: number): void {
    this.warnings.push(transcriptWarning(code, message, this.options.file, line));
  }
}

/**
 * Parses a whole Claude Code transcript held in memory (a string or its lines). For files, stream
 * them through `ClaudeCodeParser` instead (see `src/sessions/import`).
 */
export function parseClaudeCodeTranscript(
  input: TranscriptInput,
  options: Omit<ClaudeCodeParserOptions, 'emit'> = {},
): ParsedNativeTranscript {
  return parseCollected(input, (emit) => new ClaudeCodeParser({ ...options, emit }));
}
