import type { ConversationBlock, UnsequencedEvent } from '../../../conversation/index.js';
import { isObject, objectOf, stringOf, type JsonObject } from '../json.js';
import { systemBlock, unknownRecord } from './blocks.js';
import { classifyWrapped, textOf } from './records.js';
import type { ToolPairing } from './tool-pairing.js';

/** A user record's content as Parley blocks. Blocks come back with an empty id (the parser names them, `assignIds`). */
export interface UserContent {
  blocks: ConversationBlock[];
  /** New states of tool calls whose blocks were already emitted: they go before `blocks`. */
  updates: UnsequencedEvent[];
  /** The user typed it (a prompt, or a slash command): a rewind can branch from it. */
  human: boolean;
  /** The text of the `user_message` block, when the record holds a prompt. */
  prompt?: string;
  /** The compaction summary, when the record is one (`isCompactSummary`). */
  summary?: string;
}

/**
 * A user record's content: a prompt, text the CLI wrapped or injected (kept as `system` blocks),
 * tool results (paired with their calls by `tools`), images and documents (named in the text and
 * listed in the prompt's metadata), or a compaction summary.
 */
export function mapUserContent(record: JsonObject, tools: ToolPairing, at: number): UserContent {
  const content = objectOf(record['message'])?.['content'];
  const mapped: UserContent = { blocks: [], updates: [], human: false };
  const blocks = mapped.blocks;
  if (record['isCompactSummary'] === true) {
    mapped.summary = textOf(content);
    blocks.push(systemBlock('compaction', mapped.summary, at, { summary: true }));
  } else if (typeof content === 'string') {
    addUserText(mapped, content, record, at);
  } else if (Array.isArray(content)) {
    const texts: string[] = [];
    const attachments: JsonObject[] = [];
    for (const item of content) {
      if (!isObject(item)) continue;
      const itemType = item['type'];
      if (itemType === 'text') {
        texts.push(stringOf(item['text']) ?? '');
      } else if (itemType === 'tool_result') {
        tools.result(item, record, content.length, blocks, mapped.updates, at);
      } else if (itemType === 'image' || itemType === 'document') {
        const source = objectOf(item['source']);
        const mediaType = stringOf(source?.['media_type']);
        texts.push(`[${itemType}${mediaType ? `: ${mediaType}` : ''}]`);
        attachments.push({ type: itemType, ...(mediaType ? { mediaType } : {}), ...attachmentData(source) });
      } else {
        blocks.push(unknownRecord('', at, item, `content:${String(itemType)}`));
      }
    }
    if (texts.length > 0) {
      const start = blocks.length;
      addUserText(mapped, texts.join('\n\n'), record, at);
      const block = blocks[start];
      if (attachments.length > 0 && block?.type === 'user_message') block.metadata = { attachments };
    }
  } else {
    blocks.push(unknownRecord('', at, record, 'user'));
  }
  return mapped;
}

/** A user text: a human prompt, or something the CLI wrapped or injected (kept as a system block). */
function addUserText(mapped: UserContent, text: string, record: JsonObject, at: number): void {
  if (record['isMeta'] === true) {
    mapped.blocks.push(systemBlock('info', text, at, { kind: 'meta' }));
    return;
  }
  const wrapped = classifyWrapped(text);
  if (wrapped !== undefined) {
    mapped.blocks.push(systemBlock(wrapped.subtype, wrapped.content, at, { kind: wrapped.kind, text }));
    // A slash command the user typed is theirs: a rewind can branch from it like from a prompt.
    mapped.human = wrapped.kind === 'command';
    return;
  }
  mapped.blocks.push({ type: 'user_message', id: '', createdAt: at, completedAt: at, content: text });
  mapped.prompt = text;
  mapped.human = true;
}

/** Base64 characters of an image or document kept in the block, for a client to show on request; larger ones stay in the raw transcript only. */
export const ATTACHMENT_DATA_MAX_CHARS = 8 * 1024 * 1024;

/** An attachment's data (base64), or its URL, or how large the data left in the raw transcript is. */
function attachmentData(source: JsonObject | undefined): JsonObject {
  if (source === undefined) return {};
  const url = stringOf(source['url']);
  if (source['type'] === 'url' && url !== undefined) return { url };
  const data = stringOf(source['data']);
  if (source['type'] !== 'base64' || data === undefined) return {};
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  const bytes = Math.floor((data.length * 3) / 4) - padding;
  return data.length <= ATTACHMENT_DATA_MAX_CHARS
    ? { data, bytes }
    : { bytes, omitted: 'too large to keep in the session' };
}
