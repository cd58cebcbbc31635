import {
  MAIN_CONVERSATION,
  type BlockStatus,
  type ConversationBlock,
  type StreamEventDraft,
  type SubagentBlock,
  type SystemBlock,
  type SystemBlockSubtype,
  type ToolUseBlock,
  type TurnMetadata,
  type Usage,
} from '../../conversation/index.js';
import { firstLine, isBlank, isObject, numberOf, objectOf, parseJson, stringOf, timeOf, type JsonObject } from './json.js';
import type { TranscriptInput } from './lines.js';
import {
  emptyInfo,
  parseCollected,
  type EventSink,
  type ParsedNativeTranscript,
  type TranscriptInfo,
  type TranscriptParser,
  type TranscriptWarning,
} from './types.js';

/**
 * Claude Code's session JSONL (`~/.claude/projects/<encoded-cwd>/<sessionId>.jsonl`, schema in
 * reference/anchors-clis.md §3.1) → Parley blocks.
 *
 * - One record per content block; assistant records of one API message share `message.id`, and
 *   their usage (repeated on each) is counted once per `message.id:requestId`.
 * - Order: file order, which is the `parentUuid` chain's order except after a rewind. A human prompt
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
  /** Keep the assistant message ids seen (`messageIds`), to pass to the subagent files' parsers. */
  collectMessageIds?: boolean;
  /**
   * Records held back so a rewind can take its abandoned branch out of the thread (default 256, at
   * most 4 MiB of them). Larger windows cost throughput: the held records survive young-generation
   * garbage collections. A rewind further back than the window is still marked, naming where the
   * abandoned branch starts.
   */
  windowRecords?: number;
  windowBytes?: number;
}

/** Tool names whose call runs a subagent. */
const SUBAGENT_TOOLS = new Set(['Task', 'Agent']);

/** System subtypes that are notices for the reader (kept as `info` blocks). */
const INFO_SUBTYPES = new Set([
  'informational',
  'local_command',
  'stop_hook_summary',
  'away_summary',
  'scheduled_task_fire',
  'agents_killed',
  'permission_denied',
  'hook_summary',
]);

/** Records that only describe the session (titles, leaf pointers): folded into `TranscriptInfo` (and titles kept as `unknown_record`). */
function isTitleRecord(type: string): boolean {
  switch (type) {
    case 'summary':
    case 'ai-title':
    case 'custom-title':
    case 'agent-name':
    case 'last-prompt':
      return true;
    default:
      return false;
  }
}

const STOP_REASONS_ENDING_A_TURN = new Set(['end_turn', 'max_tokens', 'stop_sequence', 'refusal', 'model_context_window_exceeded']);

interface RecordNode {
  position: number;
  uuid: string | undefined;
  events: StreamEventDraft[];
  bytes: number;
  emitted: boolean;
}

interface MessageGroup {
  key: string;
  messageId: string | undefined;
  usage: Usage | undefined;
  model: string | undefined;
  stopReason: string | undefined;
  costUsd: number | undefined;
  node: RecordNode;
  at: number;
}

class Thread {
  readonly window: RecordNode[] = [];
  head = 0;
  windowBytes = 0;
  nextPosition = 0;
  lastHumanPosition = -1;
  /** Position of every chain record (also the set of uuids seen, for dropping repeated records). */
  readonly positions = new Map<string, number>();
  /** uuid by position, to name the first already-emitted record of an abandoned branch. */
  readonly uuidAt: Array<string | undefined> = [];
  group: MessageGroup | undefined;
  /** The last chain record added: almost every record's parent, checked before the map. */
  lastUuid: string | undefined;

  constructor(
    readonly conversationId: string,
    readonly detectRewinds: boolean,
  ) {}

  get size(): number {
    return this.window.length - this.head;
  }

  firstWindowPosition(): number {
    return this.window[this.head]?.position ?? this.nextPosition;
  }
}

interface PendingTool {
  block: ToolUseBlock;
  node: RecordNode;
  thread: Thread;
  subagent?: { name: string; prompt: string };
}

export class ClaudeCodeParser implements TranscriptParser {
  readonly warnings: TranscriptWarning[] = [];
  readonly info: TranscriptInfo = emptyInfo();
  /** Assistant message ids seen (when `collectMessageIds`). */
  readonly messageIds = new Set<string>();

  private readonly emit: EventSink;
  private readonly main: Thread;
  private readonly sideThreads = new Map<string, Thread>();
  /** Inline sidechain record uuid → its thread id. */
  private readonly sideThreadOf = new Map<string, string>();
  private readonly pendingTools = new Map<string, PendingTool>();
  /** Subagent prompts of unanswered Task calls → tool use ids (links old inline sidechains to their call). */
  private readonly subagentPrompts = new Map<string, string[]>();
  private readonly threadOfToolUse = new Map<string, string>();
  private readonly linkedSubagents = new Set<string>();
  private readonly usageKeys = new Set<string>();
  private readonly windowRecords: number;
  private readonly windowBytesMax: number;
  private lastAt = 0;
  private lastCost: number | undefined;
  private costSeen = false;
  private usageSeen = false;
  private droppedReplays = 0;
  private ended = false;

  constructor(private readonly options: ClaudeCodeParserOptions) {
    this.emit = options.emit;
    this.main = new Thread(options.conversationId ?? MAIN_CONVERSATION, true);
    this.windowRecords = options.windowRecords ?? 256;
    this.windowBytesMax = options.windowBytes ?? 4 * 1024 * 1024;
  }

  line(text: string, lineNumber: number, terminated = true): void {
    if (text.length === 0 || isBlank(text)) return;
    const parsed = parseJson(text);
    if (parsed === undefined) {
      this.warn(
        terminated ? 'MALFORMED_LINE' : 'TRUNCATED_LINE',
        terminated
          ? `line ${lineNumber} is not valid JSON (${describeStart(text)}); skipped`
          : `line ${lineNumber} is cut off (the file ends mid-record, e.g. while Claude Code was writing it); skipped`,
        lineNumber,
      );
      return;
    }
    if (!isObject(parsed.value)) {
      this.warn('NOT_A_RECORD', `line ${lineNumber} is JSON but not a record object; skipped`, lineNumber);
      return;
    }
    this.record(parsed.value, lineNumber, text.length);
  }

  end(): TranscriptInfo {
    if (this.ended) return this.info;
    this.ended = true;
    const late: StreamEventDraft[] = [];
    for (const thread of this.allThreads()) this.closeGroup(thread);
    for (const [toolUseId, pending] of this.pendingTools) {
      const error = 'interrupted: the transcript ends before this tool returned a result';
      const events: StreamEventDraft[] = [];
      if (pending.node.emitted) {
        events.push(this.blockEvent(pending.thread.conversationId, { ...pending.block, status: 'error', error }));
      } else {
        pending.block.status = 'error';
        pending.block.error = error;
      }
      const threadId = pending.subagent !== undefined ? this.threadOfToolUse.get(toolUseId) : undefined;
      if (pending.subagent !== undefined && threadId !== undefined) {
        events.push(this.blockEvent(pending.thread.conversationId, this.subagentBlock(toolUseId, threadId, pending.subagent, 'error', pending.block.createdAt)));
      }
      if (pending.node.emitted) late.push(...events);
      else pending.node.events.push(...events);
    }
    this.pendingTools.clear();
    for (const thread of this.allThreads()) this.flush(thread, true);
    for (const event of late) this.emit(event);
    for (const [threadId] of this.sideThreads) {
      if (!this.linkedSubagents.has(threadId)) this.info.subagents.push({ subagentId: threadId, name: 'sidechain', linked: false });
    }
    if (this.main.conversationId === MAIN_CONVERSATION && this.usageSeen && !this.costSeen) {
      this.info.costUnknown = true;
      this.emit({ type: 'metadata_update', conversationId: MAIN_CONVERSATION, at: this.lastAt, metadata: { costUnknown: true } });
    }
    if (this.droppedReplays > 0) {
      this.warn('PARENT_REPLAY', `${this.droppedReplays} record(s) repeating the parent session's messages were dropped`);
    }
    return this.info;
  }

  // ---------------------------------------------------------------------------------------------
  // Records

  private record(record: JsonObject, lineNumber: number, bytes: number): void {
    const type = stringOf(record['type']);
    const at = this.timeOf(record['timestamp']);
    this.noteEnvelope(record);
    if (type !== undefined && isTitleRecord(type)) {
      this.titleRecord(type, record);
      // A leaf pointer is bookkeeping; a title is kept verbatim too.
      if (type !== 'last-prompt') this.addNode(this.main, undefined, [this.blockEvent(this.main.conversationId, unknownRecord(blockId(undefined, lineNumber), at, record, type))], bytes);
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
        this.addNode(thread, uuid, [this.blockEvent(thread.conversationId, unknownRecord(blockId(uuid, lineNumber), at, record, type))], bytes);
    }
  }

  private noteEnvelope(record: JsonObject): void {
    const info = this.info;
    if (info.nativeSessionId === undefined) {
      const sessionId = stringOf(record['sessionId']);
      if (sessionId !== undefined) info.nativeSessionId = sessionId;
    }
    if (info.cwd === undefined) {
      const cwd = stringOf(record['cwd']);
      if (cwd !== undefined) info.cwd = cwd;
    }
    const version = stringOf(record['version']);
    if (version !== undefined) info.version = version;
  }

  private titleRecord(type: string, record: JsonObject): void {
    switch (type) {
      case 'custom-title':
        this.info.customTitle = stringOf(record['customTitle']) ?? this.info.customTitle;
        return;
      case 'ai-title':
        this.info.generatedTitle = stringOf(record['aiTitle']) ?? this.info.generatedTitle;
        return;
      case 'summary':
        this.info.generatedTitle ??= stringOf(record['summary']);
        return;
      default:
    }
  }

  private userRecord(record: JsonObject, thread: Thread, uuid: string | undefined, lineNumber: number, at: number, bytes: number): void {
    const message = objectOf(record['message']);
    const content = message?.['content'];
    const conversationId = thread.conversationId;
    const blocks: ConversationBlock[] = [];
    const updates: StreamEventDraft[] = [];
    let human = false;

    let summary: string | undefined;
    if (record['isCompactSummary'] === true) {
      summary = textOf(content);
      blocks.push(systemBlock('compaction', summary, at, { summary: true }));
    } else if (typeof content === 'string') {
      human = this.addUserText(blocks, content, record, thread, at);
    } else if (Array.isArray(content)) {
      const texts: string[] = [];
      const attachments: JsonObject[] = [];
      for (const item of content) {
        if (!isObject(item)) continue;
        const itemType = item['type'];
        if (itemType === 'text') {
          texts.push(stringOf(item['text']) ?? '');
        } else if (itemType === 'tool_result') {
          this.toolResult(item, record, content.length, thread, blocks, updates, at);
        } else if (itemType === 'image' || itemType === 'document') {
          const source = objectOf(item['source']);
          const mediaType = stringOf(source?.['media_type']);
          texts.push(`[${itemType}${mediaType ? `: ${mediaType}` : ''}]`);
          attachments.push({ type: itemType, ...(mediaType ? { mediaType } : {}) });
        } else {
          blocks.push(unknownRecord('', at, item, `content:${String(itemType)}`));
        }
      }
      if (texts.length > 0) {
        const start = blocks.length;
        human = this.addUserText(blocks, texts.join('\n\n'), record, thread, at);
        const block = blocks[start];
        if (attachments.length > 0 && block?.type === 'user_message') block.metadata = { attachments };
      }
    } else {
      blocks.push(unknownRecord('', at, record, 'user'));
    }

    if (human && thread.detectRewinds) this.maybeRewind(thread, record, uuid, at);
    if (thread === this.main && !this.isChainKnown(thread, record)) this.warnMissingParent(record, uuid, lineNumber);
    this.assignIds(blocks, uuid, lineNumber);
    if (summary !== undefined && conversationId === MAIN_CONVERSATION) {
      const compaction = this.info.compactions.at(-1);
      const blockIdOfSummary = blocks[0]?.id;
      if (compaction !== undefined && compaction.summary === undefined) {
        compaction.summary = summary;
        if (blockIdOfSummary !== undefined) compaction.blockId = blockIdOfSummary;
      } else {
        this.info.compactions.push({ summary, at, messagesBefore: this.info.messageCount, ...(blockIdOfSummary !== undefined ? { blockId: blockIdOfSummary } : {}) });
      }
    }
    const events = blocks.map((block) => this.blockEvent(conversationId, block));
    // Status updates of tool calls emitted earlier come first, then the result blocks.
    const node = this.addNode(thread, uuid, [...updates, ...events], bytes);
    if (human) thread.lastHumanPosition = node.position;
  }

  /** A user text: a human prompt, or something the CLI wrapped or injected (kept as a system block). Returns true for a human prompt. */
  private addUserText(blocks: ConversationBlock[], text: string, record: JsonObject, thread: Thread, at: number): boolean {
    if (record['isMeta'] === true) {
      blocks.push(systemBlock('info', text, at, { kind: 'meta' }));
      return false;
    }
    const wrapped = classifyWrapped(text);
    if (wrapped !== undefined) {
      blocks.push(systemBlock(wrapped.subtype, wrapped.content, at, { kind: wrapped.kind, text }));
      // A slash command the user typed is theirs: a rewind can branch from it like from a prompt.
      return wrapped.kind === 'command';
    }
    blocks.push({ type: 'user_message', id: '', createdAt: at, completedAt: at, content: text });
    if (thread === this.main && this.info.firstUserMessage === undefined) this.info.firstUserMessage = text;
    return true;
  }

  private toolResult(
    item: JsonObject,
    record: JsonObject,
    itemCount: number,
    thread: Thread,
    blocks: ConversationBlock[],
    updates: StreamEventDraft[],
    at: number,
  ): void {
    const toolUseId = stringOf(item['tool_use_id']) ?? '';
    const isError = item['is_error'] === true;
    const text = toolResultText(item['content']);
    const structured = record['toolUseResult'];
    const pending = toolUseId ? this.pendingTools.get(toolUseId) : undefined;
    if (pending !== undefined) {
      this.pendingTools.delete(toolUseId);
      const status: BlockStatus = isError ? 'error' : 'success';
      if (pending.node.emitted) {
        const updated: ToolUseBlock = { ...pending.block, status, ...(isError ? { error: firstLine(text, 500) } : {}) };
        updates.push(this.blockEvent(pending.thread.conversationId, updated));
      } else {
        pending.block.status = status;
        if (isError) pending.block.error = firstLine(text, 500);
      }
      if (pending.subagent !== undefined) {
        const resultObject = objectOf(structured);
        const subagentId =
          stringOf(record['agentId']) ?? stringOf(resultObject?.['agentId']) ?? this.threadOfToolUse.get(toolUseId) ?? `task-${toolUseId}`;
        const status = isError ? 'error' : subagentStatus(stringOf(resultObject?.['status']));
        const block = this.subagentBlock(toolUseId, subagentId, pending.subagent, status, at);
        block.output = text;
        const usage = usageOf(resultObject?.['usage']);
        if (usage !== undefined) block.usage = usage;
        blocks.push(block);
      }
    }
    const result: ConversationBlock = {
      type: 'tool_result',
      id: '',
      createdAt: at,
      completedAt: at,
      toolUseId: toolUseId || 'unknown',
      content: text,
      isError,
      // The structured result belongs to the record; with several results in one record it is ambiguous.
      ...(itemCount === 1 ? outputOf(structured, text) : {}),
    };
    blocks.push(result);
  }

  private subagentBlock(
    toolUseId: string,
    subagentId: string,
    subagent: { name: string; prompt: string },
    status: BlockStatus,
    at: number,
  ): SubagentBlock {
    if (!this.linkedSubagents.has(subagentId)) {
      this.linkedSubagents.add(subagentId);
      this.info.subagents.push({ subagentId, toolUseId, name: subagent.name, linked: true });
    }
    return {
      type: 'subagent',
      id: `subagent-${toolUseId}`,
      createdAt: at,
      completedAt: at,
      subagentId,
      name: subagent.name,
      input: subagent.prompt,
      status,
    };
  }

  private assistantRecord(record: JsonObject, thread: Thread, uuid: string | undefined, lineNumber: number, at: number, bytes: number): void {
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
    const conversationId = thread.conversationId;
    const blocks: ConversationBlock[] = [];
    const tools: Array<{ block: ToolUseBlock; subagent?: { name: string; prompt: string } }> = [];
    const content = message?.['content'];

    if (record['isApiErrorMessage'] === true) {
      blocks.push(
        systemBlock('error', textOf(content) || 'API error', at, {
          kind: 'api_error',
          ...(record['apiErrorStatus'] !== undefined ? { status: record['apiErrorStatus'] } : {}),
          ...(record['error'] !== undefined ? { error: record['error'] } : {}),
        }),
      );
    } else if (typeof content === 'string') {
      blocks.push({ type: 'assistant_text', id: '', createdAt: at, completedAt: at, content, ...(model ? { model } : {}) });
    } else if (Array.isArray(content)) {
      for (const item of content) {
        if (!isObject(item)) continue;
        switch (item['type']) {
          case 'text':
            blocks.push({ type: 'assistant_text', id: '', createdAt: at, completedAt: at, content: stringOf(item['text']) ?? '', ...(model ? { model } : {}) });
            break;
          case 'thinking': {
            const thinking = stringOf(item['thinking']) ?? '';
            // 2026 builds store only the signature: the reasoning was withheld.
            blocks.push({ type: 'thinking', id: '', createdAt: at, completedAt: at, content: thinking, ...(thinking.length === 0 ? { redacted: true } : {}) });
            break;
          }
          case 'redacted_thinking':
            blocks.push({ type: 'thinking', id: '', createdAt: at, completedAt: at, content: '', redacted: true });
            break;
          case 'tool_use':
          case 'server_tool_use':
          case 'mcp_tool_use': {
            const toolUseId = stringOf(item['id']) ?? `${uuid ?? `line-${lineNumber}`}-tool`;
            const name = stringOf(item['name']) ?? 'unknown';
            const input = item['input'];
            const serverSide = item['type'] !== 'tool_use';
            const block: ToolUseBlock = {
              type: 'tool_use',
              id: '',
              createdAt: at,
              completedAt: at,
              toolUseId,
              name,
              input,
              // A server-side tool ran inside the API call; its result block follows in the same message.
              status: serverSide ? 'success' : 'running',
            };
            blocks.push(block);
            if (!serverSide) {
              const inputObject = objectOf(input);
              const subagent = SUBAGENT_TOOLS.has(name)
                ? {
                    name: stringOf(inputObject?.['subagent_type']) ?? stringOf(inputObject?.['description']) ?? name,
                    prompt: stringOf(inputObject?.['prompt']) ?? JSON.stringify(input ?? null),
                  }
                : undefined;
              tools.push(subagent === undefined ? { block } : { block, subagent });
            }
            break;
          }
          default: {
            const itemType = stringOf(item['type']) ?? '';
            if (itemType.endsWith('_tool_result')) {
              const toolUseId = stringOf(item['tool_use_id']) ?? 'unknown';
              blocks.push({
                type: 'tool_result',
                id: '',
                createdAt: at,
                completedAt: at,
                toolUseId,
                content: toolResultText(item['content']),
                output: item['content'],
                isError: isObject(item['content']) && String(item['content']['type'] ?? '').endsWith('_error'),
              });
            } else {
              blocks.push(unknownRecord('', at, item, `content:${itemType}`));
            }
          }
        }
      }
    } else {
      blocks.push(unknownRecord('', at, record, 'assistant'));
    }

    if (thread === this.main && !this.isChainKnown(thread, record)) this.warnMissingParent(record, uuid, lineNumber);
    this.assignIds(blocks, uuid, lineNumber);
    const node = this.addNode(thread, uuid, blocks.map((block) => this.blockEvent(conversationId, block)), bytes);
    for (const tool of tools) {
      const pending: PendingTool = { block: tool.block, node, thread };
      if (tool.subagent !== undefined) {
        pending.subagent = tool.subagent;
        const list = this.subagentPrompts.get(tool.subagent.prompt);
        if (list === undefined) this.subagentPrompts.set(tool.subagent.prompt, [tool.block.toolUseId]);
        else list.push(tool.block.toolUseId);
      }
      this.pendingTools.set(tool.block.toolUseId, pending);
    }

    const usage = usageOf(message?.['usage']);
    const costUsd = numberOf(record['costUSD']);
    const stopReason = stringOf(message?.['stop_reason']);
    const group = thread.group;
    if (group !== undefined) {
      group.node = node;
      group.usage = maxUsage(group.usage, usage);
      if (stopReason !== undefined) group.stopReason = stopReason;
      if (model !== undefined) group.model = model;
      if (costUsd !== undefined) group.costUsd = Math.max(group.costUsd ?? 0, costUsd);
    } else {
      thread.group = { key, messageId, usage, model, stopReason, costUsd, node, at };
    }
  }

  private systemRecord(record: JsonObject, thread: Thread, uuid: string | undefined, lineNumber: number, at: number, bytes: number): void {
    const subtype = stringOf(record['subtype']);
    const content = stringOf(record['content']);
    const conversationId = thread.conversationId;
    let block: ConversationBlock | undefined;
    const metadata: TurnMetadata[] = [];
    switch (subtype) {
      case 'compact_boundary': {
        const compact = objectOf(record['compactMetadata']) ?? objectOf(record['compact_metadata']) ?? {};
        const trigger = stringOf(compact['trigger']);
        const preTokens = numberOf(compact['preTokens']) ?? numberOf(compact['pre_tokens']);
        const postTokens = numberOf(compact['postTokens']) ?? numberOf(compact['post_tokens']);
        const numbers = preTokens !== undefined ? ` (${preTokens}${postTokens !== undefined ? ` → ${postTokens}` : ''} tokens)` : '';
        block = systemBlock('compaction', `${content ?? 'Conversation compacted'}${trigger ? `, ${trigger}` : ''}${numbers}`, at, {
          kind: 'compact_boundary',
          ...compact,
          ...(record['logicalParentUuid'] !== undefined ? { logicalParentUuid: record['logicalParentUuid'] } : {}),
        });
        if (conversationId === MAIN_CONVERSATION) {
          this.info.compactions.push({
            at,
            messagesBefore: this.info.messageCount,
            ...(trigger !== undefined ? { trigger } : {}),
            ...(preTokens !== undefined ? { preTokens } : {}),
            ...(postTokens !== undefined ? { postTokens } : {}),
          });
        }
        break;
      }
      case 'microcompact_boundary':
        block = systemBlock('compaction', content ?? 'Old tool results cleared (micro-compaction)', at, { kind: 'microcompact_boundary', record });
        break;
      case 'turn_duration': {
        const durationMs = numberOf(record['durationMs']);
        if (durationMs !== undefined) metadata.push({ durationMs });
        break;
      }
      case 'api_error': {
        const error = record['error'];
        const errorObject = objectOf(error);
        const detail = stringOf(errorObject?.['message']) ?? stringOf(objectOf(errorObject?.['error'])?.['message']) ?? (typeof error === 'string' ? error : undefined);
        const attempt = numberOf(record['retryAttempt']);
        block = systemBlock('error', `API error${detail ? `: ${detail}` : ''}${attempt !== undefined ? ` (retry ${attempt})` : ''}`, at, { kind: 'api_error', record });
        break;
      }
      default:
        if (subtype !== undefined && INFO_SUBTYPES.has(subtype)) {
          const wrapped = content !== undefined ? classifyWrapped(content) : undefined;
          block = systemBlock(record['level'] === 'error' ? 'error' : 'info', wrapped?.content ?? content ?? subtype, at, { kind: subtype, record });
        } else {
          block = unknownRecord('', at, record, `system:${subtype ?? ''}`);
        }
    }
    const events: StreamEventDraft[] = [];
    if (block !== undefined) {
      this.assignIds([block], uuid, lineNumber);
      events.push(this.blockEvent(conversationId, block));
    }
    for (const entry of metadata) events.push({ type: 'metadata_update', conversationId, at, metadata: entry });
    this.addNode(thread, uuid, events, bytes);
  }

  private attachmentRecord(record: JsonObject, thread: Thread, uuid: string | undefined, lineNumber: number, at: number, bytes: number): void {
    const attachment = objectOf(record['attachment']) ?? {};
    const kind = stringOf(attachment['type']) ?? 'attachment';
    const prompt = stringOf(attachment['prompt']);
    let block: ConversationBlock;
    let human = false;
    if (kind === 'queued_command' && prompt !== undefined) {
      // A prompt typed while the agent was busy, delivered as an attachment: the user's words.
      block = { type: 'user_message', id: '', createdAt: at, completedAt: at, content: prompt, metadata: { queued: true } };
      human = true;
      if (thread === this.main && this.info.firstUserMessage === undefined) this.info.firstUserMessage = prompt;
    } else {
      const text = stringOf(attachment['content']);
      block = systemBlock('info', text !== undefined && text.length > 0 && text.length <= 200 ? `Attachment ${kind}: ${text}` : `Attachment ${kind}`, at, {
        kind: 'attachment',
        attachment,
      });
    }
    this.assignIds([block], uuid, lineNumber);
    const node = this.addNode(thread, uuid, [this.blockEvent(thread.conversationId, block)], bytes);
    if (human) thread.lastHumanPosition = node.position;
  }

  private costRecord(record: JsonObject, thread: Thread, at: number, bytes: number): void {
    const total = numberOf(record['totalCostUSD']);
    const metadata: TurnMetadata = {};
    if (total !== undefined) {
      this.costSeen = true;
      // `totalCostUSD` is cumulative per session; Parley keeps per-turn deltas.
      const delta = total - (this.lastCost ?? 0);
      this.lastCost = total;
      if (delta > 0) metadata.costUsd = delta;
    }
    if (record['hasUnknownModelCost'] === true) metadata.costUnknown = true;
    if (Object.keys(metadata).length === 0) return;
    this.addNode(thread, undefined, [{ type: 'metadata_update', conversationId: thread.conversationId, at, metadata }], bytes);
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
      thread = new Thread(threadId, false);
      this.sideThreads.set(threadId, thread);
      this.linkInlineSidechain(threadId, record);
    }
    return thread;
  }

  /** An old inline sidechain starts with the Task prompt: link it to the unanswered Task call with that prompt. */
  private linkInlineSidechain(threadId: string, record: JsonObject): void {
    const content = objectOf(record['message'])?.['content'];
    const prompt = typeof content === 'string' ? content : Array.isArray(content) ? textOf(content) : undefined;
    if (prompt === undefined) return;
    const candidates = this.subagentPrompts.get(prompt);
    const toolUseId = candidates?.shift();
    if (toolUseId !== undefined) this.threadOfToolUse.set(toolUseId, threadId);
  }

  private *allThreads(): Iterable<Thread> {
    yield this.main;
    yield* this.sideThreads.values();
  }

  private isChainKnown(thread: Thread, record: JsonObject): boolean {
    const parent = record['parentUuid'];
    return typeof parent !== 'string' || parent === thread.lastUuid || thread.positions.has(parent) || this.sideThreadOf.has(parent);
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

    const abandonedBlocks: ConversationBlock[] = [];
    const kept: RecordNode[] = [];
    const keptMetadata: StreamEventDraft[] = [];
    let abandonedRecords = 0;
    for (let index = thread.head; index < thread.window.length; index++) {
      const node = thread.window[index]!;
      if (node.position <= forkPosition || node.uuid === undefined) {
        kept.push(node);
        continue;
      }
      abandonedRecords++;
      thread.windowBytes -= node.bytes;
      thread.positions.delete(node.uuid);
      for (const event of node.events) {
        if (event.type === 'metadata_update') keptMetadata.push(event);
        else if (event.type === 'block_complete') {
          abandonedBlocks.push(event.block);
          if (event.block.type === 'tool_use') this.pendingTools.delete(event.block.toolUseId);
          if (event.conversationId === MAIN_CONVERSATION) {
            this.info.blockCount--;
            if (event.block.type === 'user_message' || event.block.type === 'assistant_text') this.info.messageCount--;
          }
        }
      }
    }
    let emittedFrom: string | undefined;
    for (let position = forkPosition + 1; position < thread.firstWindowPosition(); position++) {
      emittedFrom = thread.uuidAt[position];
      if (emittedFrom !== undefined) break;
    }
    thread.window.length = 0;
    thread.window.push(...kept);
    thread.head = 0;
    if (abandonedRecords === 0 && emittedFrom === undefined) return;

    const count = abandonedBlocks.length;
    const block = systemBlock(
      'info',
      `Rewound: the conversation continues from an earlier point; ${count} block(s) of the abandoned branch are kept in this block's data${
        emittedFrom !== undefined ? `, and the blocks from record ${emittedFrom} up to here belong to it too` : ''
      }.`,
      at,
      {
        kind: 'rewind',
        forkUuid: parent,
        abandonedBlocks,
        ...(emittedFrom !== undefined ? { abandonedEmittedFromRecord: emittedFrom } : {}),
      },
    );
    block.id = `${uuid ?? `rewind-${thread.nextPosition}`}:rewind`;
    this.addNode(thread, undefined, [this.blockEvent(thread.conversationId, block), ...keptMetadata], 0);
  }

  private addNode(thread: Thread, uuid: string | undefined, events: StreamEventDraft[], bytes: number): RecordNode {
    const node: RecordNode = { position: thread.nextPosition++, uuid, events, bytes, emitted: false };
    if (uuid !== undefined) {
      thread.positions.set(uuid, node.position);
      thread.lastUuid = uuid;
      if (thread.detectRewinds) thread.uuidAt[node.position] = uuid;
    }
    if (thread.conversationId === this.main.conversationId) {
      for (const event of events) {
        if (event.type !== 'block_complete') continue;
        this.info.blockCount++;
        if (event.block.type === 'user_message' || event.block.type === 'assistant_text') this.info.messageCount++;
      }
    }
    thread.window.push(node);
    thread.windowBytes += bytes;
    if (thread.size > this.windowRecords || thread.windowBytes > this.windowBytesMax) this.flush(thread, false);
    return node;
  }

  private flush(thread: Thread, all: boolean): void {
    while (thread.size > 0 && (all || thread.size > this.windowRecords || thread.windowBytes > this.windowBytesMax)) {
      const node = thread.window[thread.head]!;
      thread.window[thread.head] = undefined as unknown as RecordNode;
      thread.head++;
      thread.windowBytes -= node.bytes;
      node.emitted = true;
      for (const event of node.events) this.emit(event);
      // Drop references to the node's content (pending tools may still point at the node).
      node.events = [];
    }
    if (thread.head > 1024 && thread.head * 2 > thread.window.length) {
      thread.window.splice(0, thread.head);
      thread.head = 0;
    }
  }

  private closeGroup(thread: Thread): void {
    const group = thread.group;
    if (group === undefined) return;
    thread.group = undefined;
    if (this.usageKeys.has(group.key)) return;
    this.usageKeys.add(group.key);
    const metadata: TurnMetadata = {};
    if (group.usage !== undefined) {
      metadata.usage = group.usage;
      this.usageSeen = true;
    }
    if (group.model !== undefined) {
      metadata.model = group.model;
      if (thread.conversationId === this.main.conversationId) this.info.model = group.model;
    }
    if (group.stopReason !== undefined) metadata.stopReason = group.stopReason;
    if (group.costUsd !== undefined) {
      metadata.costUsd = group.costUsd;
      this.costSeen = true;
    }
    if (thread.conversationId === MAIN_CONVERSATION && group.stopReason !== undefined && STOP_REASONS_ENDING_A_TURN.has(group.stopReason)) {
      metadata.turnComplete = true;
    }
    if (Object.keys(metadata).length === 0) return;
    const event: StreamEventDraft = { type: 'metadata_update', conversationId: thread.conversationId, at: group.at, metadata };
    if (group.node.emitted) this.emit(event);
    else group.node.events.push(event);
  }

  // ---------------------------------------------------------------------------------------------
  // Helpers

  private blockEvent(conversationId: string, block: ConversationBlock): StreamEventDraft {
    return { type: 'block_complete', conversationId, at: block.createdAt, block };
  }

  private assignIds(blocks: ConversationBlock[], uuid: string | undefined, lineNumber: number): void {
    const base = blockId(uuid, lineNumber);
    let plain = 0;
    for (const block of blocks) if (block.id === '') plain++;
    let index = 0;
    for (const block of blocks) {
      if (block.id !== '') continue;
      block.id = plain === 1 ? base : `${base}:${index}`;
      index++;
    }
  }

  private timeOf(value: unknown): number {
    const at = timeOf(value);
    if (at === undefined) return this.lastAt;
    this.lastAt = at;
    this.info.startedAt ??= at;
    this.info.endedAt = at;
    return at;
  }

  private warn(code: string, message: string, line?: number): void {
    this.warnings.push({
      code,
      message: this.options.file !== undefined ? `${this.options.file}: ${message}` : message,
      ...(line !== undefined ? { line } : {}),
      ...(this.options.file !== undefined ? { file: this.options.file } : {}),
    });
  }
}

function blockId(uuid: string | undefined, lineNumber: number): string {
  return uuid ?? `line-${lineNumber}`;
}

function systemBlock(subtype: SystemBlockSubtype, content: string, at: number, data?: unknown): SystemBlock {
  return { type: 'system', id: '', createdAt: at, completedAt: at, subtype, content, ...(data !== undefined ? { data } : {}) };
}

function unknownRecord(id: string, at: number, record: unknown, kind: string | undefined): SystemBlock {
  const block = systemBlock('unknown_record', `Claude Code record "${kind ?? 'untyped'}" (not shown)`, at, { source: 'claude-code', record });
  block.id = id;
  return block;
}

const WRAPPERS: Array<{ prefix: string; kind: string; subtype: SystemBlockSubtype }> = [
  { prefix: '<command-name>', kind: 'command', subtype: 'info' },
  { prefix: '<command-message>', kind: 'command', subtype: 'info' },
  { prefix: '<local-command-stdout>', kind: 'command_output', subtype: 'info' },
  { prefix: '<local-command-stderr>', kind: 'command_output', subtype: 'info' },
  { prefix: '<local-command-caveat>', kind: 'caveat', subtype: 'info' },
  { prefix: '<task-notification>', kind: 'task_notification', subtype: 'info' },
  { prefix: '<bash-input>', kind: 'shell', subtype: 'info' },
  { prefix: '<bash-stdout>', kind: 'shell', subtype: 'info' },
  { prefix: '<bash-stderr>', kind: 'shell', subtype: 'info' },
  { prefix: '<system-reminder>', kind: 'system_reminder', subtype: 'info' },
  { prefix: '[Request interrupted by user', kind: 'interrupted', subtype: 'interrupted' },
];

/** Text the CLI wrapped (slash commands, their output, notifications, reminders, interruptions). */
function classifyWrapped(text: string): { kind: string; subtype: SystemBlockSubtype; content: string } | undefined {
  const start = text.trimStart();
  if (start.charCodeAt(0) !== 60 /* < */ && start.charCodeAt(0) !== 91 /* [ */) return undefined;
  for (const wrapper of WRAPPERS) {
    if (!start.startsWith(wrapper.prefix)) continue;
    if (wrapper.kind === 'command') {
      const name = /<command-name>([\s\S]*?)<\/command-name>/.exec(start)?.[1]?.trim();
      const args = /<command-args>([\s\S]*?)<\/command-args>/.exec(start)?.[1]?.trim();
      const message = /<command-message>([\s\S]*?)<\/command-message>/.exec(start)?.[1]?.trim();
      const command = name ?? (message !== undefined ? `/${message}` : undefined);
      return { kind: 'command', subtype: 'info', content: command !== undefined ? `${command}${args ? ` ${args}` : ''}` : start };
    }
    const inner = new RegExp(`^${escapeRegExp(wrapper.prefix)}([\\s\\S]*?)(?:</${escapeRegExp(wrapper.prefix.slice(1))}|$)`).exec(start)?.[1];
    return { kind: wrapper.kind, subtype: wrapper.subtype, content: wrapper.subtype === 'interrupted' ? start : (inner ?? start).trim() };
  }
  return undefined;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const parts: string[] = [];
  for (const item of content) {
    if (isObject(item) && item['type'] === 'text' && typeof item['text'] === 'string') parts.push(item['text']);
  }
  return parts.join('\n\n');
}

function toolResultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (content === undefined || content === null) return '';
  if (!Array.isArray(content)) return isObject(content) ? JSON.stringify(content) : String(content);
  const parts: string[] = [];
  for (const item of content) {
    if (!isObject(item)) continue;
    const type = item['type'];
    if (type === 'text') parts.push(stringOf(item['text']) ?? '');
    else if (type === 'image') parts.push('[image]');
    else if (type === 'tool_reference') parts.push(`[tool: ${stringOf(item['tool_name']) ?? '?'}]`);
    else parts.push(JSON.stringify(item));
  }
  return parts.join('\n');
}

/**
 * The structured `toolUseResult` without what repeats the result text: a failure's message, Read's
 * `file.content`, Bash's `stdout`, an Agent's `content` parts. A third of a typical transcript's
 * bytes are these copies; the raw transcript keeps them.
 */
function outputOf(structured: unknown, text: string): { output?: unknown } {
  if (structured === undefined || structured === null) return {};
  if (typeof structured === 'string') return structured === text || text.includes(structured) ? {} : { output: structured };
  if (!isObject(structured)) return { output: structured };
  let output: JsonObject = structured;
  const file = objectOf(structured['file']);
  if (file !== undefined && typeof file['content'] === 'string') {
    const { content: _content, ...rest } = file;
    output = { ...output, file: rest };
  }
  if (typeof output['stdout'] === 'string' && output['stdout'].length > 0 && text.includes(output['stdout'])) {
    const { stdout: _stdout, ...rest } = output;
    output = rest;
  }
  if (Array.isArray(output['content']) && toolResultText(output['content']) === text) {
    const { content: _content, ...rest } = output;
    output = rest;
  }
  return { output };
}

function usageOf(value: unknown): Usage | undefined {
  const usage = objectOf(value);
  if (usage === undefined) return undefined;
  const input = numberOf(usage['input_tokens']) ?? numberOf(usage['inputTokens']);
  const output = numberOf(usage['output_tokens']) ?? numberOf(usage['outputTokens']);
  const cacheRead = numberOf(usage['cache_read_input_tokens']) ?? numberOf(usage['cacheReadInputTokens']);
  const cacheWrite = numberOf(usage['cache_creation_input_tokens']) ?? numberOf(usage['cacheCreationInputTokens']);
  if (input === undefined && output === undefined && cacheRead === undefined && cacheWrite === undefined) return undefined;
  return {
    inputTokens: Math.max(0, input ?? 0),
    outputTokens: Math.max(0, output ?? 0),
    cacheReadTokens: Math.max(0, cacheRead ?? 0),
    cacheWriteTokens: Math.max(0, cacheWrite ?? 0),
  };
}

/** Usage repeated on each record of one message may grow as the message streams: keep the largest. */
function maxUsage(a: Usage | undefined, b: Usage | undefined): Usage | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return {
    inputTokens: Math.max(a.inputTokens, b.inputTokens),
    outputTokens: Math.max(a.outputTokens, b.outputTokens),
    cacheReadTokens: Math.max(a.cacheReadTokens, b.cacheReadTokens),
    cacheWriteTokens: Math.max(a.cacheWriteTokens, b.cacheWriteTokens),
  };
}

function subagentStatus(status: string | undefined): BlockStatus {
  if (status === undefined || status === 'completed' || status === 'success') return 'success';
  if (status === 'async_launched' || status === 'running' || status === 'started') return 'running';
  return 'error';
}

function describeStart(text: string): string {
  const start = text.slice(0, 40);
  return `starts with ${JSON.stringify(start)}${text.length > 40 ? '…' : ''}`;
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
