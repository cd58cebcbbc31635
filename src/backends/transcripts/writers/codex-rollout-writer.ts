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
 * Parley's history as a Codex CLI 0.163 rollout, the JSONL file `codex exec resume <id>` (and the
 * SDK's `resumeThread`) rebuilds a thread from: a `session_meta` record naming the thread, then one
 * `response_item` per Responses API input item (`message` with `input_text` / `output_text`,
 * `function_call` with its `function_call_output`), each user and agent message also as the
 * `event_msg` Codex's own session list reads. What a checkpoint compacted is written as items and
 * then replaced by a `compacted` record whose `replacement_history` is the checkpoint, as Codex's
 * own compaction leaves it. Codex rebuilds its state database from the file, so the file is all it
 * needs (checked against the real CLI: a thread with no row in `state_5.sqlite` resumes).
 *
 * The model reads these items exactly as it reads its own earlier turns, which is why Parley writes
 * a rollout rather than starting a new thread with the history pasted into its first message.
 *
 * What Codex cannot take becomes marked text: reasoning (Codex sends reasoning back only with
 * OpenAI's encrypted content, which no other writer has), calls to tools every Codex model does not
 * have (file edits go through `apply_patch`, which only some models are given), Parley's workers.
 */

/** The Codex CLI version the records copy (the pinned @openai/codex). */
export const CODEX_ROLLOUT_CLI_VERSION = '0.163.0';

/** Parley's names for a shell call whose input is `{command}`: written as Codex's own `exec_command`. */
const SHELL_TOOLS: ReadonlySet<string> = new Set(['shell', 'exec_command']);

interface RolloutRecord {
  timestamp: string;
  type: 'session_meta' | 'response_item' | 'event_msg' | 'compacted';
  payload: Record<string, unknown>;
}

/** A Responses API input item as a rollout's `response_item` carries it. */
type ResponseItem = Record<string, unknown>;

/** Writes a Parley conversation as a Codex rollout, so Codex resumes it as its own thread. */
export function writeCodexRollout(history: PortableHistory, options: TranscriptWriteOptions): WrittenTranscript {
  const conversions = new ConversionLog();
  const records: RolloutRecord[] = [];
  let checkpoint: ResponseItem[] | undefined;
  let callCount = 0;

  const push = (time: number | undefined, item: ResponseItem, event?: Record<string, unknown>): void => {
    const timestamp = isoOf(time, options.now);
    records.push({ timestamp, type: 'response_item', payload: item });
    if (event) records.push({ timestamp, type: 'event_msg', payload: event });
  };
  const userText = (text: string, time: number | undefined): void =>
    push(
      time,
      { type: 'message', role: 'user', content: [{ type: 'input_text', text }] },
      { type: 'user_message', message: text, images: [] },
    );
  const agentText = (text: string, time: number | undefined): void =>
    push(
      time,
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] },
      { type: 'agent_message', message: text },
    );

  for (const item of historyItems(history)) {
    switch (item.kind) {
      case 'checkpoint':
        checkpoint = [
          { type: 'message', role: 'user', content: [{ type: 'input_text', text: checkpointText(item.summary) }] },
        ];
        records.push({
          timestamp: isoOf(undefined, options.now),
          type: 'compacted',
          payload: { message: item.summary, replacement_history: checkpoint },
        });
        break;
      case 'user':
        userText(item.block.content, item.block.createdAt);
        break;
      case 'text':
        agentText(item.block.content, item.block.createdAt);
        break;
      case 'thinking':
        conversions.add('thinking');
        agentText(thinkingAsText(item.block.content, history.source), item.block.createdAt);
        break;
      case 'tool': {
        const { call, result } = item;
        const command = shellCommand(call.name, call.input);
        if (command === undefined) {
          conversions.add('tool_call', call.name);
          agentText(toolCallAsText(call, result, history.source), call.createdAt);
          break;
        }
        callCount += 1;
        const callId = `call_parley_${callCount}`;
        push(call.createdAt, {
          type: 'function_call',
          name: 'exec_command',
          arguments: JSON.stringify({ cmd: command }),
          call_id: callId,
        });
        push(result?.createdAt ?? call.createdAt, {
          type: 'function_call_output',
          call_id: callId,
          output: shellOutput(result),
        });
        break;
      }
      case 'orphan_result':
        conversions.add('orphan_result');
        userText(orphanResultAsText(item.result), item.result.createdAt);
        break;
      case 'worker':
        conversions.add('worker', item.block.name);
        agentText(workerAsText(item.block), item.block.createdAt);
        break;
      case 'notice':
        conversions.add('notice');
        break;
    }
  }

  const first = records[0]?.timestamp ?? isoOf(undefined, options.now);
  const meta: RolloutRecord = {
    timestamp: first,
    type: 'session_meta',
    payload: {
      id: options.nativeSessionId,
      timestamp: first,
      cwd: options.cwd,
      originator: 'parley',
      cli_version: CODEX_ROLLOUT_CLI_VERSION,
      source: 'exec',
    },
  };
  const lines = [meta, ...records].map((record) => JSON.stringify(record));
  return { main: `${lines.join('\n')}\n`, conversions: conversions.list() };
}

/** The checkpoint as the user message Codex's compaction leaves in place of what it compacted. */
function checkpointText(summary: string): string {
  return `Another language model started to solve this problem and produced a summary of its thinking process. Use it to build on the work that has already been done.\n\n${summary}`;
}

/** The command of a shell call Codex can take as its own, or undefined. */
function shellCommand(name: string, input: unknown): string | undefined {
  if (!SHELL_TOOLS.has(name) || typeof input !== 'object' || input === null) return undefined;
  const fields = input as Record<string, unknown>;
  const command = fields['command'] ?? fields['cmd'];
  if (typeof command === 'string') return command;
  // Codex's older `shell` tool took argv.
  if (Array.isArray(command) && command.every((part) => typeof part === 'string')) return command.join(' ');
  return undefined;
}

function shellOutput(result: Parameters<typeof toolCallAsText>[1]): string {
  if (result === undefined) return INTERRUPTED_RESULT;
  const output = result.output as { exitCode?: unknown } | undefined;
  const exit = typeof output?.exitCode === 'number' ? `Process exited with code ${output.exitCode}\n` : '';
  return `${exit}Output:\n${result.content}`;
}
