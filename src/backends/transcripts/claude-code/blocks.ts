import type {
  ConversationBlock,
  UnsequencedEvent,
  SystemBlock,
  SystemBlockSubtype,
  ToolUseBlock,
  TurnMetadata,
} from '../../../conversation/index.js';
import { isObject, numberOf, objectOf, stringOf, type JsonObject } from '../json.js';
import { classifyWrapped, INFO_SUBTYPES, SUBAGENT_TOOLS, textOf, toolResultText } from './records.js';

/**
 * Claude Code records → Parley blocks, for the records whose mapping needs no parser state
 * (assistant messages, system records, attachments). Blocks come back with an empty id; the parser
 * names them after their record (`assignIds`).
 */

/** A tool call the assistant made; a subagent call also carries the subagent's name and prompt. */
export interface ToolCall {
  block: ToolUseBlock;
  subagent?: { name: string; prompt: string };
}

export function blockId(uuid: string | undefined, lineNumber: number): string {
  return uuid ?? `line-${lineNumber}`;
}

export function systemBlock(subtype: SystemBlockSubtype, content: string, at: number, data?: unknown): SystemBlock {
  return {
    type: 'system',
    id: '',
    createdAt: at,
    completedAt: at,
    subtype,
    content,
    ...(data !== undefined ? { data } : {}),
  };
}

/** A record (or content item) Parley does not map, kept verbatim in `data` so nothing is lost. */
export function unknownRecord(id: string, at: number, record: unknown, kind: string | undefined): SystemBlock {
  const block = systemBlock('unknown_record', `Claude Code record "${kind ?? 'untyped'}" (not shown)`, at, {
    source: 'claude-code',
    record,
  });
  block.id = id;
  return block;
}

export function blockEvent(conversationId: string, block: ConversationBlock): UnsequencedEvent {
  return { type: 'block_complete', conversationId, at: block.createdAt, block };
}

/** Names the blocks of one record after it: the record's uuid alone, or `uuid:index` when it holds several. */
export function assignIds(blocks: ConversationBlock[], uuid: string | undefined, lineNumber: number): void {
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

/** An assistant record's content: text, thinking, tool calls (client-side ones wait for their result) and server-side results. */
export function mapAssistantContent(
  record: JsonObject,
  content: unknown,
  model: string | undefined,
  uuid: string | undefined,
  lineNumber: number,
  at: number,
): { blocks: ConversationBlock[]; tools: ToolCall[] } {
  const blocks: ConversationBlock[] = [];
  const tools: ToolCall[] = [];
  if (record['isApiErrorMessage'] === true) {
    blocks.push(
      systemBlock('error', textOf(content) || 'API error', at, {
        kind: 'api_error',
        ...(record['apiErrorStatus'] !== undefined ? { status: record['apiErrorStatus'] } : {}),
        ...(record['error'] !== undefined ? { error: record['error'] } : {}),
      }),
    );
  } else if (typeof content === 'string') {
    blocks.push({
      type: 'assistant_text',
      id: '',
      createdAt: at,
      completedAt: at,
      content,
      ...(model ? { model } : {}),
    });
  } else if (Array.isArray(content)) {
    for (const item of content) {
      if (!isObject(item)) continue;
      switch (item['type']) {
        case 'text':
          blocks.push({
            type: 'assistant_text',
            id: '',
            createdAt: at,
            completedAt: at,
            content: stringOf(item['text']) ?? '',
            ...(model ? { model } : {}),
          });
          break;
        case 'thinking': {
          const thinking = stringOf(item['thinking']) ?? '';
          // 2026 builds store only the signature: the reasoning was withheld.
          blocks.push({
            type: 'thinking',
            id: '',
            createdAt: at,
            completedAt: at,
            content: thinking,
            ...(thinking.length === 0 ? { redacted: true } : {}),
          });
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
  return { blocks, tools };
}

/** A compaction the CLI recorded (`compact_boundary`), for `TranscriptInfo.compactions`. */
export interface CompactBoundary {
  trigger?: string;
  preTokens?: number;
  postTokens?: number;
}

/** A `system` record: compaction boundaries, turn durations, API errors, notices; anything else is kept as `unknown_record`. */
export function mapSystemRecord(
  record: JsonObject,
  at: number,
): { block?: ConversationBlock; metadata: TurnMetadata[]; compaction?: CompactBoundary } {
  const subtype = stringOf(record['subtype']);
  const content = stringOf(record['content']);
  switch (subtype) {
    case 'compact_boundary': {
      const compact = objectOf(record['compactMetadata']) ?? objectOf(record['compact_metadata']) ?? {};
      const trigger = stringOf(compact['trigger']);
      const preTokens = numberOf(compact['preTokens']) ?? numberOf(compact['pre_tokens']);
      const postTokens = numberOf(compact['postTokens']) ?? numberOf(compact['post_tokens']);
      const numbers =
        preTokens !== undefined ? ` (${preTokens}${postTokens !== undefined ? ` → ${postTokens}` : ''} tokens)` : '';
      const block = systemBlock(
        'compaction',
        `${content ?? 'Conversation compacted'}${trigger ? `, ${trigger}` : ''}${numbers}`,
        at,
        {
          kind: 'compact_boundary',
          ...compact,
          ...(record['logicalParentUuid'] !== undefined ? { logicalParentUuid: record['logicalParentUuid'] } : {}),
        },
      );
      const compaction: CompactBoundary = {
        ...(trigger !== undefined ? { trigger } : {}),
        ...(preTokens !== undefined ? { preTokens } : {}),
        ...(postTokens !== undefined ? { postTokens } : {}),
      };
      return { block, metadata: [], compaction };
    }
    case 'microcompact_boundary':
      return {
        block: systemBlock('compaction', content ?? 'Old tool results cleared (micro-compaction)', at, {
          kind: 'microcompact_boundary',
          record,
        }),
        metadata: [],
      };
    case 'turn_duration': {
      const durationMs = numberOf(record['durationMs']);
      return { metadata: durationMs !== undefined ? [{ durationMs }] : [] };
    }
    case 'api_error': {
      const error = record['error'];
      const errorObject = objectOf(error);
      const detail =
        stringOf(errorObject?.['message']) ??
        stringOf(objectOf(errorObject?.['error'])?.['message']) ??
        (typeof error === 'string' ? error : undefined);
      const attempt = numberOf(record['retryAttempt']);
      return {
        block: systemBlock(
          'error',
          `API error${detail ? `: ${detail}` : ''}${attempt !== undefined ? ` (retry ${attempt})` : ''}`,
          at,
          { kind: 'api_error', record },
        ),
        metadata: [],
      };
    }
    default:
      if (subtype !== undefined && INFO_SUBTYPES.has(subtype)) {
        const wrapped = content !== undefined ? classifyWrapped(content) : undefined;
        return {
          block: systemBlock(
            record['level'] === 'error' ? 'error' : 'info',
            wrapped?.content ?? content ?? subtype,
            at,
            { kind: subtype, record },
          ),
          metadata: [],
        };
      }
      if (subtype === undefined && content !== undefined)
        return { block: noticeBlock(record, content, at), metadata: [] };
      return { block: unknownRecord('', at, record, `system:${subtype ?? ''}`), metadata: [] };
  }
}

/**
 * Claude Code 1.0.x wrote notices for the user as `system` records with a `level` and no subtype
 * ("Claude Opus 4 limit reached, now using Sonnet 4", hook output).
 */
function noticeBlock(record: JsonObject, content: string, at: number): ConversationBlock {
  const level = stringOf(record['level']);
  const wrapped = classifyWrapped(content);
  const text = wrapped?.content ?? content;
  const shown = level !== undefined && level !== 'info' && level !== 'error' ? `${level}: ${text}` : text;
  return systemBlock(level === 'error' ? 'error' : 'info', shown, at, {
    kind: 'notice',
    ...(level !== undefined ? { level } : {}),
    record,
  });
}

/** An `attachment` record: a prompt queued while the agent was busy is the user's (`prompt` set); anything else a notice. */
export function mapAttachment(record: JsonObject, at: number): { block: ConversationBlock; prompt?: string } {
  const attachment = objectOf(record['attachment']) ?? {};
  const kind = stringOf(attachment['type']) ?? 'attachment';
  const prompt = stringOf(attachment['prompt']);
  if (kind === 'queued_command' && prompt !== undefined) {
    // A prompt typed while the agent was busy, delivered as an attachment: the user's words.
    return {
      block: {
        type: 'user_message',
        id: '',
        createdAt: at,
        completedAt: at,
        content: prompt,
        metadata: { queued: true },
      },
      prompt,
    };
  }
  const text = stringOf(attachment['content']);
  const block = systemBlock(
    'info',
    text !== undefined && text.length > 0 && text.length <= 200 ? `Attachment ${kind}: ${text}` : `Attachment ${kind}`,
    at,
    {
      kind: 'attachment',
      attachment,
    },
  );
  return { block };
}
