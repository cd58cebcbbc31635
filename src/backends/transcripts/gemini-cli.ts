import {
  MAIN_CONVERSATION,
  type BlockStatus,
  type ConversationBlock,
  type UnsequencedEvent,
  type SystemBlock,
  type SystemBlockSubtype,
  type ToolResultBlock,
  type ToolUseBlock,
  type TurnMetadata,
  type Usage,
} from '../../conversation/index.js';
import { isBlank, isObject, numberOf, objectOf, parseJson, stringOf, timeOf, type JsonObject } from './json.js';
import type { TranscriptInput } from './lines.js';
import { hasStateSnapshot } from './summary-sections.js';
import { systemBlock } from './system-block.js';
import {
  emptyInfo,
  parseCollected,
  transcriptWarning,
  type EventSink,
  type ParsedNativeTranscript,
  type TranscriptInfo,
  type TranscriptParser,
  type TranscriptWarning,
} from './types.js';

/**
 * Gemini CLI session files (`~/.gemini/tmp/<project>/chats/`) → Parley blocks. Three shapes are read:
 *
 * - the JSONL event log (since 2026-04): `{"$rewindTo"}`, a message upsert `{"id", …}` (last write
 *   wins, position of the first), `{"$set"}` (a `messages` array replaces the whole list) and the
 *   metadata line `{"sessionId", "projectHash"}`; unknown lines are kept as `unknown_record` blocks;
 * - the older single JSON document `{sessionId, projectHash, messages: […]}`;
 * - a `/resume save` checkpoint `{history: [{role, parts}]}`.
 *
 * A log is a replay (rewinds and checkpoints rewrite history), so blocks are emitted at `end()`.
 * Tool results live inside the `gemini` message (`toolCalls[].result`); the `user` message of
 * `functionResponse` parts that repeats them is not shown twice. A user message carrying a
 * `<state_snapshot>` (what `/compress` leaves) becomes a `system` compaction block.
 */

export interface GeminiParserOptions {
  emit: EventSink;
  /** `main`, or the subagent's session id for a subagent file. */
  conversationId?: string;
  file?: string;
  /** Milliseconds since the epoch for records with no timestamp at all (a checkpoint has none): the file's time. */
  fallbackTime?: number;
}

/** A message as the replay keeps it, or a line of a kind this parser does not know. */
type Entry = { kind: 'message'; record: JsonObject } | { kind: 'unknown'; record: JsonObject; line: number };

const RUNNING_STATUSES = new Set(['validating', 'scheduled', 'awaiting_approval', 'executing']);

export class GeminiTranscriptParser implements TranscriptParser {
  readonly warnings: TranscriptWarning[] = [];
  readonly info: TranscriptInfo = emptyInfo();

  private readonly conversationId: string;
  private entries = new Map<string, Entry>();
  private metadata: JsonObject = {};
  /** Lines kept while the input may be one pretty-printed JSON document rather than JSONL. */
  private documentLines: string[] | undefined;
  private sawRecord = false;
  private ended = false;
  private unknownCount = 0;

  constructor(private readonly options: GeminiParserOptions) {
    this.conversationId = options.conversationId ?? MAIN_CONVERSATION;
  }

  line(text: string, lineNumber: number, terminated = true): void {
    if (this.documentLines !== undefined) {
      this.documentLines.push(text);
      return;
    }
    if (text.length === 0 || isBlank(text)) return;
    const parsed = parseJson(text);
    if (parsed === undefined) {
      // A legacy session file is one pretty-printed document: its first line is a lone "{".
      if (!this.sawRecord && /^\s*[{[]\s*$/.test(text)) {
        this.documentLines = [text];
        return;
      }
      this.warn(
        terminated ? 'MALFORMED_LINE' : 'TRUNCATED_LINE',
        terminated
          ? `line ${lineNumber} is not valid JSON; skipped`
          : `line ${lineNumber} is cut off (the file ends mid-record); skipped`,
        lineNumber,
      );
      return;
    }
    if (!isObject(parsed.value)) {
      this.warn('NOT_A_RECORD', `line ${lineNumber} is JSON but not a record object; skipped`, lineNumber);
      return;
    }
    this.sawRecord = true;
    this.apply(parsed.value, lineNumber);
  }

  end(): TranscriptInfo {
    if (this.ended) return this.info;
    this.ended = true;
    if (this.documentLines !== undefined) this.endDocument(this.documentLines);
    this.readMetadata();
    this.convert();
    return this.info;
  }

  // ---------------------------------------------------------------------------------------------
  // Replay

  private apply(record: JsonObject, lineNumber: number): void {
    if ('$rewindTo' in record) {
      this.rewindTo(stringOf(record['$rewindTo']));
      return;
    }
    if (typeof record['id'] === 'string') {
      const id = record['id'];
      // Map.set keeps the position of the first appearance: exactly the upsert rule.
      this.entries.set(id, { kind: 'message', record });
      return;
    }
    const set = objectOf(record['$set']);
    if (set !== undefined) {
      const { messages, ...rest } = set;
      Object.assign(this.metadata, rest);
      if (Array.isArray(messages)) this.replaceMessages(messages);
      return;
    }
    if (typeof record['sessionId'] === 'string' || typeof record['projectHash'] === 'string') {
      const { messages, ...rest } = record;
      Object.assign(this.metadata, rest);
      if (Array.isArray(messages)) this.replaceMessages(messages);
      return;
    }
    if (Array.isArray(record['history'])) {
      this.replaceMessages(historyToMessages(record['history']));
      if (typeof record['authType'] === 'string') this.metadata['authType'] = record['authType'];
      return;
    }
    this.unknownCount++;
    this.entries.set(`\u0000unknown-${lineNumber}`, { kind: 'unknown', record, line: lineNumber });
  }

  private rewindTo(id: string | undefined): void {
    if (id === undefined || !this.entries.has(id)) {
      this.entries.clear();
      return;
    }
    let removing = false;
    for (const key of [...this.entries.keys()]) {
      if (key === id) removing = true;
      if (removing) this.entries.delete(key);
    }
  }

  private replaceMessages(messages: unknown[]): void {
    this.entries = new Map();
    messages.forEach((message, index) => {
      if (!isObject(message)) return;
      const id = stringOf(message['id']) ?? `message-${index}`;
      this.entries.set(id, { kind: 'message', record: message });
    });
  }

  private endDocument(lines: string[]): void {
    const parsed = parseJson(lines.join('\n'));
    if (parsed !== undefined && isObject(parsed.value)) {
      this.apply(parsed.value, 1);
      return;
    }
    // Not one document after all: read the lines as JSONL and report what does not parse.
    this.documentLines = undefined;
    lines.forEach((text, index) => this.line(text, index + 1, true));
    if (!this.sawRecord) {
      this.warn('INVALID_FILE', 'the file is neither a Gemini CLI JSONL log nor a single JSON session document');
    }
  }

  private readMetadata(): void {
    const metadata = this.metadata;
    const info = this.info;
    const sessionId = stringOf(metadata['sessionId']);
    if (sessionId !== undefined) info.nativeSessionId = sessionId;
    const summary = stringOf(metadata['summary']);
    if (summary !== undefined) info.generatedTitle = summary;
    const start = timeOf(metadata['startTime']);
    if (start !== undefined) info.startedAt = start;
    const last = timeOf(metadata['lastUpdated']);
    if (last !== undefined) info.endedAt = last;
    const directories = metadata['directories'];
    if (Array.isArray(directories) && typeof directories[0] === 'string') info.cwd = directories[0];
  }

  // ---------------------------------------------------------------------------------------------
  // Conversion

  private convert(): void {
    const items: Array<{ block: ConversationBlock } | { metadata: TurnMetadata; at: number }> = [];
    const calls = new Map<string, ToolUseBlock>();
    const answered = new Set<string>();
    const unanswered = new Map<string, string[]>();
    const open = (block: ToolUseBlock): void => {
      const list = unanswered.get(block.name);
      if (list === undefined) unanswered.set(block.name, [block.toolUseId]);
      else list.push(block.toolUseId);
    };
    let lastAt = this.info.startedAt ?? this.options.fallbackTime ?? 0;
    let usageSeen = false;
    const push = (block: ConversationBlock): void => {
      items.push({ block });
    };
    // The last answer of a turn whose end the file did not mark (its last message called tools, or
    // it has no text): the next prompt, or the end of the file, ends that turn.
    let openTurn: { metadata: TurnMetadata } | undefined;
    const endOpenTurn = (): void => {
      if (openTurn !== undefined) openTurn.metadata.turnComplete = true;
      openTurn = undefined;
    };

    for (const [key, entry] of this.entries) {
      const record = entry.record;
      const at = timeOf(record['timestamp']) ?? lastAt;
      lastAt = at;
      if (entry.kind === 'unknown') {
        push(
          systemBlock(`line-${entry.line}`, 'unknown_record', 'Gemini CLI record of an unknown kind (not shown)', at, {
            source: 'gemini-cli',
            record,
          }),
        );
        continue;
      }
      const id = stringOf(record['id']) ?? key;
      const type = stringOf(record['type']);
      const parts = partsOf(record['content']);
      switch (type) {
        case 'user': {
          const text = textOfParts(parts, false);
          const responses = parts.filter((part) => isObject(part['functionResponse']));
          if (responses.length > 0) {
            responses.forEach((part, index) => {
              const response = objectOf(part['functionResponse']) ?? {};
              // Raw API contents (checkpoints) may omit ids: a response answers the oldest open call of its name.
              const byName =
                stringOf(response['id']) === undefined
                  ? unanswered.get(stringOf(response['name']) ?? '')?.shift()
                  : undefined;
              const result = resultFromResponse(response, byName ?? `${id}:${index}`, at);
              if (answered.has(result.toolUseId)) return; // already shown inside the gemini message
              answered.add(result.toolUseId);
              const call = calls.get(result.toolUseId);
              if (call !== undefined) {
                call.status = result.isError ? 'error' : 'success';
                if (result.isError) call.error = result.content.slice(0, 500);
              }
              push({ ...result, id: `${id}:result:${index}` });
            });
          }
          if (text.length === 0 && responses.length > 0) break;
          if (hasStateSnapshot(text)) {
            push(systemBlock(id, 'compaction', text, at, { kind: 'state_snapshot', summary: true }));
            if (this.conversationId === MAIN_CONVERSATION) {
              const messagesBefore = items.filter(
                (item) =>
                  'block' in item && (item.block.type === 'user_message' || item.block.type === 'assistant_text'),
              ).length;
              this.info.compactions.push({ blockId: id, summary: text, at, trigger: 'compress', messagesBefore });
            }
          } else if (text.trimStart().startsWith('<session_context>')) {
            push(systemBlock(id, 'info', text, at, { kind: 'session_context' }));
          } else {
            const display = textOfParts(partsOf(record['displayContent']), false);
            push({
              type: 'user_message',
              id,
              createdAt: at,
              completedAt: at,
              content: text,
              ...(display.length > 0 && display !== text ? { metadata: { displayContent: display } } : {}),
            });
            this.info.firstUserMessage ??= text;
            endOpenTurn();
          }
          break;
        }
        case 'gemini': {
          const model = stringOf(record['model']);
          const thoughts = Array.isArray(record['thoughts']) ? record['thoughts'] : [];
          thoughts.forEach((thought, index) => {
            if (!isObject(thought)) return;
            const subject = stringOf(thought['subject']) ?? '';
            const description = stringOf(thought['description']) ?? '';
            const content = subject && description ? `**${subject}**\n${description}` : subject || description;
            push({
              type: 'thinking',
              id: `${id}:thought:${index}`,
              createdAt: timeOf(thought['timestamp']) ?? at,
              completedAt: at,
              content,
            });
          });
          parts.forEach((part, index) => {
            if (part['thought'] === true && typeof part['text'] === 'string') {
              push({
                type: 'thinking',
                id: `${id}:thought-part:${index}`,
                createdAt: at,
                completedAt: at,
                content: part['text'],
              });
            }
          });
          const text = textOfParts(parts, false);
          if (text.length > 0)
            push({
              type: 'assistant_text',
              id: `${id}:text`,
              createdAt: at,
              completedAt: at,
              content: text,
              ...(model ? { model } : {}),
            });
          parts.forEach((part, index) => {
            const call = objectOf(part['functionCall']);
            if (call === undefined) return;
            const toolUseId = stringOf(call['id']) ?? `${id}:call:${index}`;
            const block: ToolUseBlock = {
              type: 'tool_use',
              id: `${id}:part-call:${index}`,
              createdAt: at,
              completedAt: at,
              toolUseId,
              name: stringOf(call['name']) ?? 'unknown',
              input: call['args'] ?? {},
              status: 'running',
            };
            calls.set(toolUseId, block);
            open(block);
            push(block);
          });
          const toolCalls = Array.isArray(record['toolCalls']) ? record['toolCalls'] : [];
          for (const call of toolCalls) {
            if (!isObject(call)) continue;
            const toolUseId = stringOf(call['id']) ?? `${id}:call:${calls.size}`;
            const callAt = timeOf(call['timestamp']) ?? at;
            const { status, error } = callStatus(stringOf(call['status']));
            const block: ToolUseBlock = {
              type: 'tool_use',
              id: `${id}:call:${toolUseId}`,
              createdAt: callAt,
              completedAt: callAt,
              toolUseId,
              name: stringOf(call['name']) ?? 'unknown',
              input: call['args'] ?? {},
              status,
              ...(error !== undefined ? { error } : {}),
            };
            calls.set(toolUseId, block);
            push(block);
            const result = resultOfCall(call, toolUseId, callAt, status === 'error');
            if (result !== undefined) {
              answered.add(toolUseId);
              if (result.isError && block.error === undefined) block.error = result.content.slice(0, 500);
              push({ ...result, id: `${id}:result:${toolUseId}` });
            }
          }
          const usage = usageOf(objectOf(record['tokens']));
          const metadata: TurnMetadata = {};
          if (usage !== undefined) {
            metadata.usage = usage;
            usageSeen = true;
          }
          if (model !== undefined) {
            metadata.model = model;
            if (this.conversationId === MAIN_CONVERSATION) this.info.model = model;
          }
          if (toolCalls.length === 0 && this.conversationId === MAIN_CONVERSATION && text.length > 0)
            metadata.turnComplete = true;
          const item = { metadata, at };
          items.push(item);
          openTurn = metadata.turnComplete === true || this.conversationId !== MAIN_CONVERSATION ? undefined : item;
          break;
        }
        case 'info':
        case 'warning':
        case 'error':
          push(systemBlock(id, type === 'error' ? 'error' : 'info', textOfParts(parts, true), at, { kind: type }));
          break;
        default:
          push(
            systemBlock(id, 'unknown_record', `Gemini CLI message of type "${type ?? 'untyped'}" (not shown)`, at, {
              source: 'gemini-cli',
              record,
            }),
          );
      }
    }

    endOpenTurn();
    for (const call of calls.values()) {
      if (call.status !== 'running') continue;
      call.status = 'error';
      call.error = 'interrupted: no result for this call in the session file';
    }
    let first: number | undefined;
    for (const item of items) {
      if ('metadata' in item) {
        if (Object.keys(item.metadata).length === 0) continue;
        this.options.emit({
          type: 'metadata_update',
          conversationId: this.conversationId,
          at: item.at,
          metadata: item.metadata,
        });
        continue;
      }
      const block = item.block;
      first ??= block.createdAt;
      this.info.blockCount++;
      if (block.type === 'user_message' || block.type === 'assistant_text') this.info.messageCount++;
      this.options.emit({ type: 'block_complete', conversationId: this.conversationId, at: block.createdAt, block });
    }
    if (usageSeen && this.conversationId === MAIN_CONVERSATION) {
      // Gemini CLI records tokens but never a price.
      this.info.costUnknown = true;
      this.options.emit({
        type: 'metadata_update',
        conversationId: this.conversationId,
        at: lastAt,
        metadata: { costUnknown: true },
      });
    }
    if (this.info.startedAt === undefined && first !== undefined) this.info.startedAt = first;
    if (this.info.endedAt === undefined && first !== undefined) this.info.endedAt = lastAt;
    if (this.unknownCount > 0)
      this.warn('UNKNOWN_RECORD', `${this.unknownCount} line(s) of an unknown kind were kept as unknown_record blocks`);
  }

  private warn(code: string, message: string, line?: number): void {
    this.warnings.push(transcriptWarning(code, message, this.options.file, line));
  }
}

/** Gemini's `PartListUnion`: a string, one Part, or a list of strings and Parts. */
function partsOf(content: unknown): JsonObject[] {
  if (typeof content === 'string') return [{ text: content }];
  if (isObject(content)) return [content];
  if (!Array.isArray(content)) return [];
  return content.map((part) => (typeof part === 'string' ? { text: part } : isObject(part) ? part : {}));
}

function textOfParts(parts: JsonObject[], includeThoughts: boolean): string {
  const texts: string[] = [];
  for (const part of parts) {
    if (typeof part['text'] === 'string') {
      if (part['thought'] === true && !includeThoughts) continue;
      texts.push(part['text']);
    } else if (isObject(part['inlineData'])) {
      texts.push(`[inline data: ${stringOf(part['inlineData']['mimeType']) ?? 'unknown type'}]`);
    } else if (isObject(part['fileData'])) {
      texts.push(
        `[file: ${stringOf(part['fileData']['fileUri']) ?? stringOf(part['fileData']['mimeType']) ?? 'unknown'}]`,
      );
    }
  }
  return texts.join('');
}

function callStatus(status: string | undefined): { status: BlockStatus; error?: string } {
  if (status === undefined || status === 'success') return { status: 'success' };
  if (status === 'error') return { status: 'error' };
  if (status === 'cancelled') return { status: 'error', error: 'cancelled' };
  if (RUNNING_STATUSES.has(status))
    return { status: 'error', error: `interrupted: the session ended while the call was ${status}` };
  return { status: 'success' };
}

function responseText(response: unknown): { text: string; isError: boolean } {
  const object = objectOf(response);
  if (object === undefined)
    return { text: typeof response === 'string' ? response : JSON.stringify(response ?? null), isError: false };
  if (typeof object['output'] === 'string') return { text: object['output'], isError: false };
  if (object['error'] !== undefined)
    return {
      text: typeof object['error'] === 'string' ? object['error'] : JSON.stringify(object['error']),
      isError: true,
    };
  return { text: JSON.stringify(object), isError: false };
}

function resultFromResponse(response: JsonObject, fallbackId: string, at: number): ToolResultBlock {
  const { text, isError } = responseText(response['response']);
  return {
    type: 'tool_result',
    id: '',
    createdAt: at,
    completedAt: at,
    toolUseId: stringOf(response['id']) ?? fallbackId,
    content: text,
    output: response['response'],
    isError,
  };
}

function resultOfCall(call: JsonObject, toolUseId: string, at: number, failed: boolean): ToolResultBlock | undefined {
  const result = call['result'];
  const display = call['resultDisplay'];
  if ((result === undefined || result === null) && display === undefined) return undefined;
  let text = '';
  let isError = failed;
  for (const part of partsOf(result)) {
    const response = objectOf(part['functionResponse']);
    if (response !== undefined) {
      const read = responseText(response['response']);
      text += read.text;
      isError ||= read.isError;
    } else if (typeof part['text'] === 'string') {
      text += part['text'];
    }
  }
  if (text.length === 0 && typeof display === 'string') text = display;
  return {
    type: 'tool_result',
    id: '',
    createdAt: at,
    completedAt: at,
    toolUseId,
    content: text,
    output: display !== undefined && typeof display !== 'string' ? { result, resultDisplay: display } : result,
    isError,
  };
}

/** Gemini's `tokens` (from `usageMetadata`): `input` includes `cached`; thoughts are billed as output. */
function usageOf(tokens: JsonObject | undefined): Usage | undefined {
  if (tokens === undefined) return undefined;
  const input = numberOf(tokens['input']) ?? 0;
  const cached = numberOf(tokens['cached']) ?? 0;
  const tool = numberOf(tokens['tool']) ?? 0;
  return {
    inputTokens: Math.max(0, input - cached + tool),
    outputTokens: Math.max(0, (numberOf(tokens['output']) ?? 0) + (numberOf(tokens['thoughts']) ?? 0)),
    cacheReadTokens: Math.max(0, cached),
    cacheWriteTokens: 0,
  };
}

/** A `/resume save` checkpoint's raw API contents → message records. */
function historyToMessages(history: unknown[]): JsonObject[] {
  const messages: JsonObject[] = [];
  history.forEach((content, index) => {
    if (!isObject(content)) return;
    const parts = Array.isArray(content['parts']) ? content['parts'] : [];
    messages.push({ id: `history-${index}`, type: content['role'] === 'model' ? 'gemini' : 'user', content: parts });
  });
  return messages;
}

/** Parses a whole Gemini CLI session file held in memory (JSONL log, legacy JSON document or checkpoint). */
export function parseGeminiTranscript(
  input: TranscriptInput,
  options: Omit<GeminiParserOptions, 'emit'> = {},
): ParsedNativeTranscript {
  return parseCollected(input, (emit) => new GeminiTranscriptParser({ ...options, emit }));
}
