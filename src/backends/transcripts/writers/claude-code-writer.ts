import { randomUUID } from 'node:crypto';
import {
  ConversionLog,
  historyItems,
  INTERRUPTED_RESULT,
  isoOf,
  orphanResultAsText,
  thinkingAsText,
  toolCallAsText,
  workerAsText,
  type PortableHistory,
  type TranscriptWriteOptions,
  type WrittenTranscript,
} from './portable-history.js';

/**
 * Parley's history as a Claude Code 2.1.x session transcript:
 * one JSONL record per conversation entry, chained by `uuid`/`parentUuid`; an assistant message
 * split into one record per content block under one `message.id`, as the CLI writes it; each
 * tool result a `user` record pointing at its call; what a checkpoint compacted closed by a
 * `compact_boundary` record (`parentUuid: null`, `logicalParentUuid` to what came before) and the
 * `isCompactSummary` user record that carries the summary, which is what the CLI sends the model.
 *
 * What Claude Code cannot take becomes marked text: thinking (its signatures are Anthropic's own,
 * so no other writer's thinking can be sent back as thinking), calls to tools Claude Code does not
 * have, Parley's worker threads.
 */

/** The CLI version the records copy (the one the pinned SDK starts). */
export const CLAUDE_CODE_TRANSCRIPT_VERSION = '2.1.329';

/** Claude Code's own tools: calls to these stay tool_use/tool_result pairs. MCP tools (`mcp__…`) are its own too. */
export const CLAUDE_CODE_TOOLS: ReadonlySet<string> = new Set([
  'Agent',
  'Bash',
  'BashOutput',
  'Edit',
  'ExitPlanMode',
  'Glob',
  'Grep',
  'KillShell',
  'LS',
  'ListAgents',
  'MultiEdit',
  'NotebookEdit',
  'NotebookRead',
  'Read',
  'Skill',
  'Task',
  'TodoWrite',
  'ToolSearch',
  'WebFetch',
  'WebSearch',
  'Write',
]);

export function isClaudeCodeTool(name: string): boolean {
  return CLAUDE_CODE_TOOLS.has(name) || name.startsWith('mcp__');
}

/** What the CLI opens a continued conversation's summary with (its own words, 2.1.x). */
const SUMMARY_PREAMBLE =
  'This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\n\n';

type ContentBlock = Record<string, unknown>;

/** Writes a Parley conversation as a Claude Code JSONL transcript, so the Claude Agent SDK can resume it. */
export function writeClaudeCodeTranscript(
  history: PortableHistory,
  options: TranscriptWriteOptions,
): WrittenTranscript {
  const newId = options.newId ?? randomUUID;
  const conversions = new ConversionLog();
  const lines: string[] = [];
  const envelope = {
    isSidechain: false,
    userType: 'external',
    cwd: options.cwd,
    sessionId: options.nativeSessionId,
    version: CLAUDE_CODE_TRANSCRIPT_VERSION,
    gitBranch: '',
  };
  let parent: string | null = null;
  let messageId: string | undefined;
  let messageIndex = 0;
  let model = 'claude-sonnet-4-5';
  // The tool_use records of the assistant message being written, so each result can name its call's record.
  const callRecords = new Map<string, string>();

  const push = (record: Record<string, unknown>): string => {
    const uuid = newId();
    lines.push(JSON.stringify({ parentUuid: parent, ...envelope, ...record, uuid }));
    parent = uuid;
    return uuid;
  };
  const user = (
    content: string | ContentBlock[],
    time: number | undefined,
    extra: Record<string, unknown> = {},
  ): string => {
    messageId = undefined;
    return push({ type: 'user', message: { role: 'user', content }, timestamp: isoOf(time, options.now), ...extra });
  };
  const assistant = (block: ContentBlock, time: number | undefined, stopReason: 'end_turn' | 'tool_use'): string => {
    messageId ??= `msg_parley_${String(++messageIndex).padStart(6, '0')}`;
    return push({
      type: 'assistant',
      message: {
        id: messageId,
        type: 'message',
        role: 'assistant',
        model,
        content: [block],
        stop_reason: stopReason,
        stop_sequence: null,
        usage: { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      },
      timestamp: isoOf(time, options.now),
    });
  };

  for (const item of historyItems(history)) {
    switch (item.kind) {
      case 'user':
        user(item.block.content, item.block.createdAt);
        break;
      case 'text':
        if (item.block.model) model = item.block.model;
        assistant({ type: 'text', text: item.block.content }, item.block.createdAt, 'end_turn');
        break;
      case 'thinking':
        conversions.add('thinking');
        assistant(
          { type: 'text', text: thinkingAsText(item.block.content, history.source) },
          item.block.createdAt,
          'end_turn',
        );
        break;
      case 'tool': {
        const { call, result } = item;
        if (!isClaudeCodeTool(call.name)) {
          conversions.add('tool_call', call.name);
          assistant({ type: 'text', text: toolCallAsText(call, result, history.source) }, call.createdAt, 'end_turn');
          break;
        }
        const id = toolUseIdOf(call.toolUseId);
        const callRecord = assistant(
          {
            type: 'tool_use',
            id,
            name: call.name,
            input: isObjectLike(call.input) ? call.input : { input: call.input },
          },
          call.createdAt,
          'tool_use',
        );
        callRecords.set(id, callRecord);
        const content = result?.content ?? INTERRUPTED_RESULT;
        const isError = result === undefined || result.isError;
        user(
          [{ type: 'tool_result', tool_use_id: id, content, is_error: isError }],
          result?.createdAt ?? call.createdAt,
          {
            toolUseResult: isError ? `Error: ${content}` : (result?.output ?? content),
            sourceToolAssistantUUID: callRecord,
          },
        );
        break;
      }
      case 'orphan_result':
        conversions.add('orphan_result');
        user(orphanResultAsText(item.result), item.result.createdAt);
        break;
      case 'worker':
        conversions.add('worker', item.block.name);
        assistant({ type: 'text', text: workerAsText(item.block) }, item.block.createdAt, 'end_turn');
        break;
      case 'notice':
        conversions.add('notice');
        break;
      case 'checkpoint': {
        const logicalParent = parent;
        parent = null;
        messageId = undefined;
        push({
          type: 'system',
          subtype: 'compact_boundary',
          content: 'Conversation compacted',
          isMeta: false,
          level: 'info',
          logicalParentUuid: logicalParent,
          compactMetadata: { trigger: 'manual', preTokens: 0 },
          timestamp: isoOf(undefined, options.now),
        });
        user(`${SUMMARY_PREAMBLE}${item.summary}`, undefined, {
          isVisibleInTranscriptOnly: true,
          isCompactSummary: true,
        });
        break;
      }
    }
  }
  return { main: lines.length > 0 ? `${lines.join('\n')}\n` : '', conversions: conversions.list() };
}

/** The Messages API takes tool_use ids of letters, digits, `_` and `-` only. */
function toolUseIdOf(id: string): string {
  const safe = id.replace(/[^a-zA-Z0-9_-]/g, '_');
  return safe.length > 0 ? safe : 'toolu_parley';
}

function isObjectLike(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
