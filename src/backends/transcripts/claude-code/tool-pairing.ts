import type {
  BlockStatus,
  ConversationBlock,
  UnsequencedEvent,
  SubagentBlock,
  ToolUseBlock,
} from '../../../conversation/index.js';
import { firstLine, objectOf, stringOf, type JsonObject } from '../json.js';
import type { TranscriptInfo } from '../types.js';
import { blockEvent, type ToolCall } from './blocks.js';
import { outputOf, subagentStatus, toolResultText, usageOf } from './records.js';
import type { RecordNode, Thread } from './thread.js';

interface PendingTool {
  block: ToolUseBlock;
  node: RecordNode;
  thread: Thread;
  subagent?: { name: string; prompt: string };
}

/**
 * Pairs each tool call with its result, which arrives in a later user record: the call's block
 * gets its final status (in place while its record is still held back, as an update once it was
 * emitted), a subagent call gets its `subagent` block, and a call the transcript never answers is
 * closed as interrupted at the end.
 */
export class ToolPairing {
  private readonly pending = new Map<string, PendingTool>();
  /** Subagent prompts of unanswered Task calls → tool use ids (links old inline sidechains to their call). */
  private readonly subagentPrompts = new Map<string, string[]>();
  private readonly threadOfToolUse = new Map<string, string>();
  private readonly linkedSubagents = new Set<string>();

  constructor(private readonly info: TranscriptInfo) {}

  /** The client-side calls of an assistant record, now waiting for their results. */
  register(tools: readonly ToolCall[], node: RecordNode, thread: Thread): void {
    for (const tool of tools) {
      const pending: PendingTool = { block: tool.block, node, thread };
      if (tool.subagent !== undefined) {
        pending.subagent = tool.subagent;
        const list = this.subagentPrompts.get(tool.subagent.prompt);
        if (list === undefined) this.subagentPrompts.set(tool.subagent.prompt, [tool.block.toolUseId]);
        else list.push(tool.block.toolUseId);
      }
      this.pending.set(tool.block.toolUseId, pending);
    }
  }

  /** A call whose record a rewind abandoned: its result will not come. */
  forget(toolUseId: string): void {
    this.pending.delete(toolUseId);
  }

  isLinked(subagentId: string): boolean {
    return this.linkedSubagents.has(subagentId);
  }

  /** An old inline sidechain starts with the Task prompt: link it to the unanswered Task call with that prompt. */
  linkInlineSidechain(threadId: string, prompt: string): void {
    const candidates = this.subagentPrompts.get(prompt);
    const toolUseId = candidates?.shift();
    if (toolUseId !== undefined) this.threadOfToolUse.set(toolUseId, threadId);
  }

  /**
   * A `tool_result` content item: adds the `tool_result` block (after the call's `subagent` block)
   * to `blocks`, and to `updates` the new state of a call whose block was already emitted.
   */
  result(
    item: JsonObject,
    record: JsonObject,
    itemCount: number,
    blocks: ConversationBlock[],
    updates: UnsequencedEvent[],
    at: number,
  ): void {
    const toolUseId = stringOf(item['tool_use_id']) ?? '';
    const isError = item['is_error'] === true;
    const text = toolResultText(item['content']);
    const structured = record['toolUseResult'];
    const pending = toolUseId ? this.pending.get(toolUseId) : undefined;
    if (pending !== undefined) {
      this.pending.delete(toolUseId);
      const status: BlockStatus = isError ? 'error' : 'success';
      if (pending.node.emitted) {
        const updated: ToolUseBlock = { ...pending.block, status, ...(isError ? { error: firstLine(text, 500) } : {}) };
        updates.push(blockEvent(pending.thread.conversationId, updated));
      } else {
        pending.block.status = status;
        if (isError) pending.block.error = firstLine(text, 500);
      }
      if (pending.subagent !== undefined) {
        const resultObject = objectOf(structured);
        const subagentId =
          stringOf(record['agentId']) ??
          stringOf(resultObject?.['agentId']) ??
          this.threadOfToolUse.get(toolUseId) ??
          `task-${toolUseId}`;
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

  /**
   * The transcript ended: every call still waiting is closed as interrupted. A call still held back
   * is changed in place; for one already emitted, the updates are returned, to emit after the rest.
   */
  closeUnanswered(): UnsequencedEvent[] {
    const late: UnsequencedEvent[] = [];
    for (const [toolUseId, pending] of this.pending) {
      const error = 'interrupted: the transcript ends before this tool returned a result';
      const events: UnsequencedEvent[] = [];
      if (pending.node.emitted) {
        events.push(blockEvent(pending.thread.conversationId, { ...pending.block, status: 'error', error }));
      } else {
        pending.block.status = 'error';
        pending.block.error = error;
      }
      const threadId = pending.subagent !== undefined ? this.threadOfToolUse.get(toolUseId) : undefined;
      if (pending.subagent !== undefined && threadId !== undefined) {
        events.push(
          blockEvent(
            pending.thread.conversationId,
            this.subagentBlock(toolUseId, threadId, pending.subagent, 'error', pending.block.createdAt),
          ),
        );
      }
      if (pending.node.emitted) late.push(...events);
      else pending.node.events.push(...events);
    }
    this.pending.clear();
    return late;
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
}
