import { createHash, randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import {
  ConversionLog,
  historyItems,
  INTERRUPTED_RESULT,
  isoOf,
  orphanResultAsText,
  toolCallAsText,
  workerAsText,
  type PortableHistory,
  type TranscriptWriteOptions,
  type WrittenTranscript,
} from './portable-history.js';

/**
 * Parley's history as a Gemini CLI 0.61 session file (read back by the CLI's
 * `loadConversationRecord` and `convertSessionToClientHistory`): a header
 * `{sessionId, projectHash, startTime, lastUpdated, kind: "main"}`, then one message record per
 * message: `user` with Part[] content, `gemini` with its text, `thoughts` and `toolCalls` (each call carrying its
 * `functionResponse`, which the CLI replays as the user turn that answers it). What a checkpoint
 * compacted is written as message records first, then a `$set.messages` that replaces them with
 * the checkpoint (a `<state_snapshot>` user message and the model's acknowledgement, as
 * `/compress` leaves them) and what followed it.
 *
 * Thinking stays thinking (`thoughts`: the CLI keeps no signatures in its file). What the CLI
 * cannot take becomes marked text: calls to tools it does not have, Parley's worker threads, and a
 * user message it would read as a command (the CLI skips a "/…" or "?…" message on resume).
 */

/** The Gemini CLI's own tools (0.61, with and without `--yolo`): calls to these stay function calls. */
export const GEMINI_CLI_TOOLS: ReadonlySet<string> = new Set([
  'activate_skill',
  'enter_plan_mode',
  'glob',
  'google_web_search',
  'grep_search',
  'invoke_agent',
  'list_background_processes',
  'list_directory',
  'read_background_output',
  'read_file',
  'read_many_files',
  'replace',
  'run_shell_command',
  'save_memory',
  'search_file_content',
  'update_topic',
  'web_fetch',
  'write_file',
  'write_todos',
]);

/** What the CLI's `/compress` puts after the snapshot, as the model's turn. */
const SNAPSHOT_ACKNOWLEDGEMENT = 'Got it. Thanks for the additional context!';

/** User text the CLI does not resume (read in `isIgnoredUserContent`). */
const IGNORED_USER_TEXT = /^\s*(\/|\?|<session_context>|<hook_context>)/;

interface GeminiToolCall {
  id: string;
  name: string;
  args: unknown;
  result: Array<{ functionResponse: { id: string; name: string; response: { output?: string; error?: string } } }>;
  status: 'success' | 'error';
  timestamp: string;
}

interface GeminiMessage {
  id: string;
  timestamp: string;
  type: 'user' | 'gemini';
  content: string | Array<{ text: string }>;
  thoughts?: Array<{ subject: string; description: string; timestamp: string }>;
  toolCalls?: GeminiToolCall[];
  model?: string;
}

/** sha256 of the absolute project root, as the CLI writes it in session headers. */
export function geminiProjectHash(cwd: string): string {
  return createHash('sha256').update(resolve(cwd)).digest('hex');
}

/** Writes a Parley conversation as a Gemini CLI session file, so the Gemini CLI can resume it. */
export function writeGeminiSession(history: PortableHistory, options: TranscriptWriteOptions): WrittenTranscript {
  const newId = options.newId ?? randomUUID;
  const conversions = new ConversionLog();
  const compacted: GeminiMessage[] = [];
  const kept: GeminiMessage[] = [];
  let sawCheckpoint = false;
  let current: GeminiMessage | undefined;

  const target = (isCompacted: boolean): GeminiMessage[] => (isCompacted && !sawCheckpoint ? compacted : kept);
  const userMessage = (text: string, time: number | undefined, into: GeminiMessage[]): void => {
    current = undefined;
    into.push({ id: newId(), timestamp: isoOf(time, options.now), type: 'user', content: [{ text }] });
  };
  /** The model message being written; a new one after tool calls (their answers are a user turn between). */
  const modelMessage = (time: number | undefined, into: GeminiMessage[], model?: string): GeminiMessage => {
    if (current === undefined || (current.toolCalls?.length ?? 0) > 0 || into.at(-1) !== current) {
      current = { id: newId(), timestamp: isoOf(time, options.now), type: 'gemini', content: '' };
      into.push(current);
    }
    if (model !== undefined) current.model = model;
    return current;
  };
  const appendText = (message: GeminiMessage, text: string): void => {
    message.content =
      typeof message.content === 'string' && message.content.length > 0 ? `${message.content}\n\n${text}` : text;
  };

  for (const item of historyItems(history)) {
    if (item.kind === 'checkpoint') {
      sawCheckpoint = true;
      current = undefined;
      kept.push({
        id: newId(),
        timestamp: isoOf(undefined, options.now),
        type: 'user',
        content: [{ text: `<state_snapshot>\n${item.summary}\n</state_snapshot>` }],
      });
      kept.push({
        id: newId(),
        timestamp: isoOf(undefined, options.now),
        type: 'gemini',
        content: SNAPSHOT_ACKNOWLEDGEMENT,
      });
      continue;
    }
    const into = target(item.compacted);
    switch (item.kind) {
      case 'user': {
        let text = item.block.content;
        if (IGNORED_USER_TEXT.test(text)) {
          conversions.add('user_command');
          text = `[user message] ${text}`;
        }
        userMessage(text, item.block.createdAt, into);
        break;
      }
      case 'text':
        appendText(modelMessage(item.block.createdAt, into, item.block.model), item.block.content);
        break;
      case 'thinking': {
        const message = modelMessage(item.block.createdAt, into);
        (message.thoughts ??= []).push({
          subject: '',
          description: item.block.content,
          timestamp: isoOf(item.block.createdAt, options.now),
        });
        break;
      }
      case 'tool': {
        const { call, result } = item;
        const message = modelMessage(call.createdAt, into);
        if (!GEMINI_CLI_TOOLS.has(call.name)) {
          conversions.add('tool_call', call.name);
          appendText(message, toolCallAsText(call, result, history.source));
          break;
        }
        const output = result?.content ?? INTERRUPTED_RESULT;
        const failed = result === undefined || result.isError;
        (message.toolCalls ??= []).push({
          id: call.toolUseId,
          name: call.name,
          args: call.input ?? {},
          result: [
            {
              functionResponse: {
                id: call.toolUseId,
                name: call.name,
                response: failed ? { error: output } : { output },
              },
            },
          ],
          status: failed ? 'error' : 'success',
          timestamp: isoOf(result?.createdAt ?? call.createdAt, options.now),
        });
        break;
      }
      case 'orphan_result':
        conversions.add('orphan_result');
        userMessage(orphanResultAsText(item.result), item.result.createdAt, into);
        break;
      case 'worker':
        conversions.add('worker', item.block.name);
        appendText(modelMessage(item.block.createdAt, into), workerAsText(item.block));
        break;
      case 'notice':
        conversions.add('notice');
        break;
    }
  }

  const startTime = compacted[0]?.timestamp ?? kept[0]?.timestamp ?? isoOf(undefined, options.now);
  const lastUpdated = kept.at(-1)?.timestamp ?? compacted.at(-1)?.timestamp ?? startTime;
  const lines = [
    JSON.stringify({
      sessionId: options.nativeSessionId,
      projectHash: geminiProjectHash(options.cwd),
      startTime,
      lastUpdated,
      kind: 'main',
    }),
    ...compacted.map((message) => JSON.stringify(message)),
  ];
  // After a checkpoint the compacted messages are replaced as `/compress` replaces them; otherwise each message is its own record.
  if (sawCheckpoint) lines.push(JSON.stringify({ $set: { messages: kept, lastUpdated } }));
  else lines.push(...kept.map((message) => JSON.stringify(message)));
  return { main: `${lines.join('\n')}\n`, conversions: conversions.list() };
}
