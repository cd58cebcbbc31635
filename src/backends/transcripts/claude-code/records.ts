import type { BlockStatus, SystemBlockSubtype, Usage } from '../../../conversation/index.js';
import { isBlank, isObject, numberOf, objectOf, parseJson, stringOf, type JsonObject } from '../json.js';

/**
 * The vocabulary of Claude Code's session records (2.0.x to 2.1.x): which record
 * kinds and subtypes mean what, and readers for the fields whose shape varies between versions.
 * Pure: no parser state.
 */

/** Tool names whose call runs a subagent. */
export const SUBAGENT_TOOLS = new Set(['Task', 'Agent']);

/** System subtypes that are notices for the reader (kept as `info` blocks). */
export const INFO_SUBTYPES = new Set([
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
export function isTitleRecord(type: string): boolean {
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

export const STOP_REASONS_ENDING_A_TURN = new Set([
  'end_turn',
  'max_tokens',
  'stop_sequence',
  'refusal',
  'model_context_window_exceeded',
]);

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
export function classifyWrapped(
  text: string,
): { kind: string; subtype: SystemBlockSubtype; content: string } | undefined {
  const start = text.trimStart();
  if (start.charCodeAt(0) !== 60 /* < */ && start.charCodeAt(0) !== 91 /* [ */) return undefined;
  for (const wrapper of WRAPPERS) {
    if (!start.startsWith(wrapper.prefix)) continue;
    if (wrapper.kind === 'command') {
      const name = /<command-name>([\s\S]*?)<\/command-name>/.exec(start)?.[1]?.trim();
      const args = /<command-args>([\s\S]*?)<\/command-args>/.exec(start)?.[1]?.trim();
      const message = /<command-message>([\s\S]*?)<\/command-message>/.exec(start)?.[1]?.trim();
      const command = name ?? (message !== undefined ? `/${message}` : undefined);
      return {
        kind: 'command',
        subtype: 'info',
        content: command !== undefined ? `${command}${args ? ` ${args}` : ''}` : start,
      };
    }
    const inner = new RegExp(
      `^${escapeRegExp(wrapper.prefix)}([\\s\\S]*?)(?:</${escapeRegExp(wrapper.prefix.slice(1))}|$)`,
    ).exec(start)?.[1];
    return {
      kind: wrapper.kind,
      subtype: wrapper.subtype,
      content: wrapper.subtype === 'interrupted' ? start : (inner ?? start).trim(),
    };
  }
  return undefined;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const parts: string[] = [];
  for (const item of content) {
    if (isObject(item) && item['type'] === 'text' && typeof item['text'] === 'string') parts.push(item['text']);
  }
  return parts.join('\n\n');
}

export function toolResultText(content: unknown): string {
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
export function outputOf(structured: unknown, text: string): { output?: unknown } {
  if (structured === undefined || structured === null) return {};
  if (typeof structured === 'string')
    return structured === text || text.includes(structured) ? {} : { output: structured };
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

export function usageOf(value: unknown): Usage | undefined {
  const usage = objectOf(value);
  if (usage === undefined) return undefined;
  const input = numberOf(usage['input_tokens']) ?? numberOf(usage['inputTokens']);
  const output = numberOf(usage['output_tokens']) ?? numberOf(usage['outputTokens']);
  const cacheRead = numberOf(usage['cache_read_input_tokens']) ?? numberOf(usage['cacheReadInputTokens']);
  const cacheWrite = numberOf(usage['cache_creation_input_tokens']) ?? numberOf(usage['cacheCreationInputTokens']);
  if (input === undefined && output === undefined && cacheRead === undefined && cacheWrite === undefined)
    return undefined;
  return {
    inputTokens: Math.max(0, input ?? 0),
    outputTokens: Math.max(0, output ?? 0),
    cacheReadTokens: Math.max(0, cacheRead ?? 0),
    cacheWriteTokens: Math.max(0, cacheWrite ?? 0),
  };
}

/** Usage repeated on each record of one message may grow as the message streams: keep the largest. */
export function maxUsage(a: Usage | undefined, b: Usage | undefined): Usage | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return {
    inputTokens: Math.max(a.inputTokens, b.inputTokens),
    outputTokens: Math.max(a.outputTokens, b.outputTokens),
    cacheReadTokens: Math.max(a.cacheReadTokens, b.cacheReadTokens),
    cacheWriteTokens: Math.max(a.cacheWriteTokens, b.cacheWriteTokens),
  };
}

export function subagentStatus(status: string | undefined): BlockStatus {
  if (status === undefined || status === 'completed' || status === 'success') return 'success';
  if (status === 'async_launched' || status === 'running' || status === 'started') return 'running';
  return 'error';
}

export function describeStart(text: string): string {
  const start = text.slice(0, 40);
  return `starts with ${JSON.stringify(start)}${text.length > 40 ? '…' : ''}`;
}

/**
 * One transcript line as a record object, or undefined (blank, not JSON, cut off at the end of the
 * file, or JSON that is not an object), with the warning that says which. The parser and the
 * import's summary scan read lines the same way.
 */
export function recordOfLine(
  text: string,
  lineNumber: number,
  terminated: boolean,
  warn: (code: string, message: string, line: number) => void,
): JsonObject | undefined {
  if (text.length === 0 || isBlank(text)) return undefined;
  const parsed = parseJson(text);
  if (parsed === undefined) {
    warn(
      terminated ? 'MALFORMED_LINE' : 'TRUNCATED_LINE',
      terminated
        ? `line ${lineNumber} is not valid JSON (${describeStart(text)}); skipped`
        : `line ${lineNumber} is cut off (the file ends mid-record, e.g. while Claude Code was writing it); skipped`,
      lineNumber,
    );
    return undefined;
  }
  if (!isObject(parsed.value)) {
    warn('NOT_A_RECORD', `line ${lineNumber} is JSON but not a record object; skipped`, lineNumber);
    return undefined;
  }
  return parsed.value;
}
