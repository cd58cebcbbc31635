import {
  MAIN_CONVERSATION,
  type ConversationBlock,
  type ToolResultBlock,
  type ToolUseBlock,
  type UnsequencedEvent,
} from '../../conversation/index.js';
import { isObject, numberOf, objectOf, parseJson, stringOf, type JsonObject } from '../transcripts/json.js';
import type { EventSink } from '../transcripts/types.js';
import type { FileEdit } from './codex-patch.js';

/**
 * The vocabulary of Codex rollouts the reader shares between its parts: which record and event
 * types are skipped, skimmed or kept, the shapes a call waits in, and the pure readers of a
 * record's values (texts, outputs, exit codes, usage totals, reviews).
 */

export interface CodexRolloutParserOptions {
  emit: EventSink;
  /** Named in warnings. */
  file?: string;
  /**
   * The file is still being written: an open turn stays open, and a call without its output yet
   * (with what follows it) is held back until a later reading finds the output.
   */
  live?: boolean;
  /**
   * Only what a listing needs (`CodexRolloutScan`): usage, turns, the title, the counts. The model's
   * answers and tool traffic are counted from their first bytes, not parsed; the block count is
   * then an estimate (a call and its output count as two blocks).
   */
  summary?: boolean;
}

/** `event_msg` types that only repeat a response item or say nothing worth a block: skipped unparsed. */
export const SKIPPED_EVENTS = new Set([
  'user_message',
  'agent_message',
  'agent_reasoning',
  'agent_reasoning_raw_content',
  'agent_reasoning_section_break',
  'thread_settings_applied',
  'session_configured',
  'exec_command_begin',
  'item_started',
  'web_search_begin',
  'web_search_end',
  'mcp_tool_call_begin',
  'mcp_tool_call_end',
  'mcp_startup_update',
  'mcp_startup_complete',
  'plan_update',
  'view_image_tool_call',
  'context_compacted',
  'background_event',
  'turn_diff',
  'deprecation_notice',
  'shutdown_complete',
]);
/** `item_completed` items that repeat a response item. */
export const SKIPPED_ITEMS = new Set([
  'UserMessage',
  'AgentMessage',
  'Reasoning',
  'WebSearch',
  'McpToolCall',
  'TodoList',
  'Plan',
  'ContextCompaction',
  'ImageView',
]);
/** Events that only complete a tool call's block: a listing (`summary`) skips them unparsed. */
export const DETAIL_EVENTS = new Set(['item_completed', 'exec_command_end', 'patch_apply_begin', 'patch_apply_end']);
/** Top-level records read for nothing but their presence. */
export const SILENT_RECORDS = new Set(['world_state']);
export const SHELL_TOOLS = new Set(['shell', 'container.exec', 'shell_command', 'exec_command', 'local_shell']);
/** Text Codex puts in a `user` message that the user did not type. */
export const CONTEXT_PREFIXES = [
  '<environment_context>',
  '<user_instructions>',
  '# AGENTS.md instructions',
  '<INSTRUCTIONS>',
  '<permissions instructions>',
  '<skills_instructions>',
  '<user_shell_command>',
  '<turn_aborted>',
  '<subagent_notification>',
  '<collaboration_mode>',
];
export const HEAD_BYTES = 320;
export const ROLE_PATTERN = /"role":"([a-z]+)"/;
/** Response items a listing only counts (`summary`). */
export const SKIMMED_ITEMS = new Set([
  'reasoning',
  'function_call',
  'function_call_output',
  'custom_tool_call',
  'custom_tool_call_output',
  'local_shell_call',
  'web_search_call',
  'ghost_snapshot',
]);
export const TYPE_PATTERN = /"type":"([A-Za-z_]+)"/g;

/** A command's end as Codex reported it (`exec_command_end`, a `CommandExecution` item). */
export interface CommandEnd {
  exitCode?: number;
  output?: string;
  durationMs?: number;
  command?: string;
  failed?: boolean;
}

/** A call waiting for its output, held with the blocks after it so the log keeps the call before its result. */
export interface OpenCall {
  block: ToolUseBlock;
  entry: QueueEntry;
  shell?: { command: string; cwd?: string };
  patch?: string;
}

export interface QueueEntry {
  event: UnsequencedEvent | undefined;
  waiting: boolean;
  /** Replaced at release by the blocks a call becomes (a patch's files). */
  events?: UnsequencedEvent[];
}

export interface Totals {
  input: number;
  cached: number;
  output: number;
}

export const RESPONSE_ITEM_TYPES = new Set([
  'message',
  'reasoning',
  'function_call',
  'function_call_output',
  'custom_tool_call',
  'custom_tool_call_output',
  'local_shell_call',
  'web_search_call',
  'compaction',
]);

export function blockEvent(block: ConversationBlock): UnsequencedEvent {
  return { type: 'block_complete', conversationId: MAIN_CONVERSATION, at: block.createdAt, block };
}

export function toolResult(
  id: string,
  toolUseId: string,
  content: string,
  at: number,
  isError: boolean,
  output?: unknown,
): ToolResultBlock {
  return {
    type: 'tool_result',
    id,
    createdAt: at,
    completedAt: at,
    toolUseId,
    content,
    isError,
    ...(output !== undefined && typeof output !== 'string' ? { output } : {}),
  };
}

/** The texts of a `summary` or `content` list (`{type: "summary_text" | "reasoning_text" | "text", text}`). */
export function textsOf(parts: unknown): string[] {
  if (!Array.isArray(parts)) return [];
  const texts: string[] = [];
  for (const part of parts) {
    const text = isObject(part) ? stringOf(part['text']) : undefined;
    if (text !== undefined && text.length > 0) texts.push(text);
  }
  return texts;
}

/** A message's content parts as text; an image is a placeholder (its data URL is in the raw rollout). */
export function messageText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const texts: string[] = [];
  for (const part of content) {
    if (!isObject(part)) continue;
    const text = stringOf(part['text']) ?? stringOf(part['refusal']);
    if (text !== undefined) texts.push(text);
    else if (part['type'] === 'input_image' || part['type'] === 'image') texts.push('[image]');
  }
  return texts.join('\n');
}

/** Context Codex put in a user message (instructions, the environment), told apart by its kinds or its opening tag. */
export function isInjected(item: JsonObject, text: string): boolean {
  const kinds = objectOf(item['internal_chat_message_metadata_passthrough'])?.['content_item_kinds'];
  if (Array.isArray(kinds) && kinds.length > 0)
    return !kinds.some((kind) => typeof kind === 'string' && kind.startsWith('user.'));
  const opening = text.trimStart();
  return CONTEXT_PREFIXES.some((prefix) => opening.startsWith(prefix));
}

/** A shell command as one line: `["bash", "-lc", script]` is its script; other argument lists are joined. */
export function commandText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (!Array.isArray(value) || !value.every((part) => typeof part === 'string')) return undefined;
  const parts = value as string[];
  if (parts.length === 3 && /(?:^|\/)(?:ba|z|da)?sh$/.test(parts[0]!) && /^-l?c$/.test(parts[1]!)) return parts[2];
  return parts.map((part) => (/^[\w@%+=:,./-]+$/.test(part) ? part : `'${part.replace(/'/g, `'\\''`)}'`)).join(' ');
}

/** A tool's output: a string, content items, or the older `{content, success}`. */
export function outputText(output: unknown): { text: string; failed: boolean } {
  if (typeof output === 'string') return { text: output, failed: false };
  if (Array.isArray(output)) return { text: messageText(output), failed: false };
  if (isObject(output)) {
    const content = output['content'];
    const text =
      typeof content === 'string' ? content : Array.isArray(content) ? messageText(content) : JSON.stringify(output);
    return { text, failed: output['success'] === false };
  }
  return { text: output === undefined || output === null ? '' : JSON.stringify(output), failed: false };
}

/** Older shell outputs are JSON `{"output", "metadata": {"exit_code"}}`; newer ones say "Process exited with code N". */
export function exitCodeOf(text: string): number | undefined {
  if (text.startsWith('{')) {
    const metadata = objectOf(objectOf(parseJson(text)?.value)?.['metadata']);
    const code = numberOf(metadata?.['exit_code']);
    if (code !== undefined) return code;
  }
  const match = /^(?:Process exited with code|Exit code:) (-?\d+)$/m.exec(text);
  return match !== null ? Number(match[1]) : undefined;
}

export function legacyShellOutput(text: string): string | undefined {
  if (!text.startsWith('{"output"')) return undefined;
  return stringOf(objectOf(parseJson(text)?.value)?.['output']);
}

export function joinOutput(stdout: unknown, stderr: unknown): string {
  return [stringOf(stdout), stringOf(stderr)].filter((text) => text !== undefined && text.length > 0).join('\n');
}

/** Rust's `Duration` as serde writes it (`{secs, nanos}`), or milliseconds. */
export function durationOf(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  const duration = objectOf(value);
  const secs = numberOf(duration?.['secs']);
  if (secs === undefined) return undefined;
  return Math.round(secs * 1000 + (numberOf(duration?.['nanos']) ?? 0) / 1e6);
}

export function totalsOf(usage: JsonObject | undefined): Totals | undefined {
  if (usage === undefined) return undefined;
  const input = numberOf(usage['input_tokens']);
  const output = numberOf(usage['output_tokens']);
  if (input === undefined && output === undefined) return undefined;
  return { input: input ?? 0, cached: numberOf(usage['cached_input_tokens']) ?? 0, output: output ?? 0 };
}

/** The patch's own reading of each file, completed by what Codex reported (its diff and contents win). */
export function mergeEdits(base: FileEdit[], reported: FileEdit[]): FileEdit[] {
  if (base.length === 0) return reported;
  const merged = base.map((edit) => ({ ...edit }));
  for (const report of reported) {
    const match = merged.find(
      (edit) =>
        edit.path === report.path || report.path.endsWith(`/${edit.path}`) || edit.path.endsWith(`/${report.path}`),
    );
    if (match === undefined) merged.push(report);
    else Object.assign(match, { ...report, path: match.path });
  }
  return merged;
}

export function reviewText(type: string, payload: JsonObject): string {
  if (type === 'entered_review_mode') {
    const hint =
      stringOf(payload['user_facing_hint']) ?? stringOf(objectOf(payload['review_request'])?.['user_facing_hint']);
    return `Codex started a review${hint !== undefined ? `: ${hint}` : ''}.`;
  }
  if (type === 'exited_review_mode') return 'Codex finished the review.';
  return `Codex ${type === 'undo_started' ? 'started undoing' : 'undid'} the last turn's changes${
    stringOf(payload['message']) !== undefined ? `: ${stringOf(payload['message'])}` : ''
  }.`;
}
