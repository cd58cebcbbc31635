import path from 'node:path';
import type {
  PlanEntry,
  ToolCall,
  ToolCallContent,
  ToolCallLocation,
  ToolCallUpdate,
  ToolKind,
} from '@agentclientprotocol/sdk';
import {
  commandOf,
  fileEditOf,
  type DiffLine,
  type FileEditView,
  type SubagentBlock,
  type ToolResultBlock,
  type ToolUseBlock,
} from '../conversation/index.js';
import type { ApprovalRequest } from '../workspace/index.js';

/**
 * How one of Parley's tool blocks reads as an ACP tool call: its kind, a title a person reads, the
 * files it touches, and its result as content (a file edit as `diff` content, through the same
 * `fileEditOf` the TUI and the web UI use, so an edit looks the same everywhere). Pure.
 */

const KIND_BY_TOOL: Record<string, ToolKind> = {
  Read: 'read',
  read_file: 'read',
  read_many_files: 'read',
  NotebookRead: 'read',
  list_directory: 'read',
  LS: 'read',
  Edit: 'edit',
  MultiEdit: 'edit',
  Write: 'edit',
  NotebookEdit: 'edit',
  replace: 'edit',
  write_file: 'edit',
  edit_file: 'edit',
  Grep: 'search',
  Glob: 'search',
  glob: 'search',
  search_file_content: 'search',
  grep: 'search',
  WebSearch: 'search',
  google_web_search: 'search',
  WebFetch: 'fetch',
  web_fetch: 'fetch',
  Bash: 'execute',
  BashOutput: 'execute',
  KillShell: 'execute',
  run_shell_command: 'execute',
  run_command: 'execute',
  shell: 'execute',
  Task: 'think',
  Agent: 'think',
  TodoWrite: 'think',
  write_todos: 'think',
  update_plan: 'think',
  ExitPlanMode: 'switch_mode',
};

export function toolKindOf(name: string): ToolKind {
  return KIND_BY_TOOL[name] ?? 'other';
}

/**
 * The `tool_call` that announces a tool use (before its result). `root`, the session's folder,
 * makes a relative path (Parley's workspace tools take those) absolute, as ACP wants.
 */
export function toolCallOf(toolUse: ToolUseBlock, root?: string): ToolCall {
  const locations = locationsOf(toolUse.input, root);
  return {
    toolCallId: toolUse.toolUseId,
    title: titleOf(toolUse),
    kind: toolKindOf(toolUse.name),
    status: toolUse.status === 'running' ? 'in_progress' : 'pending',
    rawInput: toolUse.input,
    ...(locations.length > 0 ? { locations } : {}),
  };
}

/** The `tool_call_update` that closes a tool use: completed or failed, with its result as content. */
export function toolResultUpdateOf(
  toolUse: ToolUseBlock | undefined,
  result: ToolResultBlock,
  root?: string,
): ToolCallUpdate {
  const content: ToolCallContent[] = [];
  const edit = toolUse ? fileEditOf(toolUse, result) : undefined;
  if (edit && !result.isError) content.push(...diffContentOf(edit, root));
  if (content.length === 0 && result.content !== '') {
    const command = toolUse ? commandOf(toolUse, result) : undefined;
    content.push(textContent(command ? fenced(result.content) : result.content));
  }
  return {
    toolCallId: result.toolUseId,
    status: result.isError ? 'failed' : 'completed',
    content,
    ...(result.output !== undefined ? { rawOutput: result.output } : {}),
  };
}

/**
 * What the editor's permission prompt shows for a workspace tool's approval request: an edit or a
 * write as its diff (from the request's unified diff, paths made absolute against the project
 * folder `root`), a command as the title with its text and folder beside it. It names the tool
 * use that asks; a request that does not say which gets an id of its own.
 */
export function approvalToolCallOf(request: ApprovalRequest, root: string): ToolCallUpdate {
  const absolute = request.path !== undefined ? path.join(root, request.path) : undefined;
  const edit =
    absolute !== undefined && request.diff !== undefined
      ? fileEditOf(
          { name: request.tool, input: { path: absolute } },
          { output: { path: absolute, diff: request.diff }, isError: false },
        )
      : undefined;
  const content: ToolCallContent[] = edit
    ? diffContentOf(edit)
    : request.command !== undefined
      ? [textContent(fenced(request.command))]
      : [];
  return {
    toolCallId: request.toolUseId ?? `permission-${request.requestId}`,
    title: request.title,
    kind: toolKindOf(request.tool),
    rawInput: {
      ...(absolute !== undefined ? { path: absolute } : {}),
      ...(request.command !== undefined ? { command: request.command } : {}),
      ...(request.cwd !== undefined ? { cwd: path.join(root, request.cwd) } : {}),
    },
    ...(content.length > 0 ? { content } : {}),
    ...(absolute !== undefined ? { locations: [{ path: absolute }] } : {}),
  };
}

/**
 * An edit as ACP `diff` content, one per hunk (a new file's has no old text), its path absolute
 * against `root`. Each line keeps its newline, but a file's last line that had none, so a whole
 * file written reads as the file will be.
 */
function diffContentOf(edit: FileEditView, root?: string): ToolCallContent[] {
  const shown = absoluteIn(root, edit.path);
  const textOf = (lines: DiffLine[]): string =>
    lines.map((line) => (line.noNewline ? line.text : `${line.text}\n`)).join('');
  return edit.hunks.map((hunk) => {
    const oldText = textOf(hunk.lines.filter((line) => line.kind !== '+'));
    const newText = textOf(hunk.lines.filter((line) => line.kind !== '-'));
    return {
      type: 'diff',
      path: shown,
      oldText: edit.kind === 'write' && hunk.oldLines === 0 ? null : oldText,
      newText,
    };
  });
}

/** A tool use that ended without a result (cut short, refused by the back end). */
export function toolFailureUpdateOf(toolUse: ToolUseBlock): ToolCallUpdate {
  return {
    toolCallId: toolUse.toolUseId,
    status: 'failed',
    content: toolUse.error ? [textContent(toolUse.error)] : [],
  };
}

/** A worker agent (or a back end's subagent) as a tool call: its prompt is the input, its answer the content. */
export function subagentCallOf(block: SubagentBlock): ToolCall {
  return {
    toolCallId: block.id,
    title: `Worker ${block.name}`,
    kind: 'think',
    status: block.status === 'running' ? 'in_progress' : 'pending',
    rawInput: { role: block.name, prompt: block.input },
  };
}

export function subagentEndOf(block: SubagentBlock, answer: string): ToolCallUpdate {
  const text = block.output ?? answer;
  return {
    toolCallId: block.id,
    status: block.status === 'error' ? 'failed' : 'completed',
    content: text === '' ? [] : [textContent(text)],
    ...(block.costUsd !== undefined || block.usage !== undefined
      ? {
          rawOutput: {
            ...(block.usage ? { usage: block.usage } : {}),
            ...(block.costUsd !== undefined ? { costUsd: block.costUsd } : {}),
          },
        }
      : {}),
  };
}

const PLAN_TOOLS = new Set(['TodoWrite', 'write_todos', 'update_plan']);

/**
 * The plan a to-do tool sets (Claude Code's `TodoWrite`, the Gemini CLI's `write_todos`, Codex's `update_plan`: the whole
 * list each time, as ACP's plan is), or undefined for any other tool or an input without a list.
 * A cancelled item is done with, so it reads as completed; ACP has no word for it.
 */
export function planOf(toolUse: Pick<ToolUseBlock, 'name' | 'input'>): PlanEntry[] | undefined {
  if (!PLAN_TOOLS.has(toolUse.name)) return undefined;
  const todos = asRecord(toolUse.input)['todos'];
  if (!Array.isArray(todos)) return undefined;
  return todos.flatMap((todo): PlanEntry[] => {
    const item = asRecord(todo);
    const content = [item['content'], item['description']].find((value) => typeof value === 'string');
    if (typeof content !== 'string' || content === '') return [];
    const status = item['status'] === 'in_progress' || item['status'] === 'completed' ? item['status'] : undefined;
    return [
      {
        content,
        priority: item['priority'] === 'high' || item['priority'] === 'low' ? item['priority'] : 'medium',
        status: status ?? (item['status'] === 'cancelled' ? 'completed' : 'pending'),
      },
    ];
  });
}

export function textContent(text: string): ToolCallContent {
  return { type: 'content', content: { type: 'text', text } };
}

function titleOf(toolUse: ToolUseBlock): string {
  const edit = fileEditOf(toolUse);
  if (edit) return `${edit.kind === 'write' ? 'Write' : 'Edit'} ${edit.path}`;
  const command = commandOf(toolUse);
  if (command) return `Run \`${oneLine(command.command)}\``;
  const input = asRecord(toolUse.input);
  const path = pathOf(input);
  if (path !== undefined && toolKindOf(toolUse.name) === 'read') return `Read ${path}`;
  const pattern =
    typeof input['pattern'] === 'string'
      ? input['pattern']
      : typeof input['query'] === 'string'
        ? input['query']
        : undefined;
  if (pattern !== undefined && toolKindOf(toolUse.name) === 'search') return `${toolUse.name} ${oneLine(pattern)}`;
  return toolUse.name;
}

function locationsOf(input: unknown, root: string | undefined): ToolCallLocation[] {
  const given = pathOf(asRecord(input));
  if (given === undefined) return [];
  const shown = absoluteIn(root, given);
  return path.isAbsolute(shown) ? [{ path: shown }] : [];
}

function absoluteIn(root: string | undefined, given: string): string {
  return root === undefined || path.isAbsolute(given) ? given : path.join(root, given);
}

function pathOf(input: Record<string, unknown>): string | undefined {
  for (const key of ['file_path', 'absolute_path', 'path', 'notebook_path']) {
    const value = input[key];
    if (typeof value === 'string' && value !== '') return value;
  }
  return undefined;
}

function fenced(text: string): string {
  return `\`\`\`\n${text.replace(/\n$/, '')}\n\`\`\``;
}

function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 80 ? `${line.slice(0, 77)}...` : line;
}

function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}
