import type {
  CommandExecutionItem,
  FileChangeItem,
  McpToolCallItem,
  ThreadEvent,
  ThreadItem,
  TodoListItem,
  Usage as CodexUsage,
} from '@openai/codex-sdk';
import type { ToolUseBlock, UnsequencedEvent, Usage } from '../../conversation/index.js';
import type { TurnEvents } from '../turn-events.js';
import { diffOfChange, sectionFor } from './file-diffs.js';

/** The running token totals of a thread, as `turn.completed` reports them on a resumed thread. */
export interface CodexTotals {
  input_tokens: number;
  cached_input_tokens: number;
  output_tokens: number;
}

/**
 * Turns the Codex SDK's thread events (`codex exec --experimental-json`) into Parley's stream
 * events: `agent_message` → assistant text, `reasoning` → thinking, `command_execution` → a `shell`
 * tool call with its output and exit code, `file_change` → one file tool call per path,
 * `mcp_tool_call` → a tool call named `mcp__<server>__<tool>`, `todo_list` → an `update_plan` call
 * with the whole list (shown as the plan), `error` items → info blocks (Codex reports warnings this way; the turn goes on).
 * A failed turn or a stream error is kept as `failure` for the back end to report.
 */
export class CodexEventMapper {
  threadId: string | undefined;
  /** What `turn.completed` reported (for a resumed thread, the thread's running total). */
  reportedUsage: CodexUsage | undefined;
  failure: string | undefined;
  /** Whether the model produced anything (a cut turn may have been billed). */
  produced = false;
  private readonly openTools = new Map<string, ToolUseBlock>();
  private readonly planBlocks = new Set<string>();

  constructor(
    private readonly events: TurnEvents,
    private readonly options: {
      model?: string;
      /** A file's text now, or undefined (the mapper shows a new file whole, and builds diffs from it). */
      readFile?: (path: string) => string | undefined;
      /** The `apply_patch` inputs Codex recorded last, newest first (see `recentPatches`). */
      patches?: () => readonly string[];
      /** The folder the patches' relative paths start from. */
      cwd?: string;
    } = {},
  ) {}

  *map(event: ThreadEvent): Generator<UnsequencedEvent> {
    switch (event.type) {
      case 'thread.started':
        this.threadId = event.thread_id;
        return;
      case 'turn.started':
        return;
      case 'turn.completed':
        this.reportedUsage = event.usage;
        return;
      case 'turn.failed':
        this.failure = event.error.message;
        return;
      case 'error':
        this.failure = event.message;
        return;
      case 'item.started':
        yield* this.started(event.item);
        return;
      case 'item.updated':
        if (event.item.type === 'todo_list') yield* this.plan(event.item);
        return;
      case 'item.completed':
        yield* this.completed(event.item);
        return;
      default:
        return;
    }
  }

  /** Closes tool calls that never completed (an abort, a failed turn). */
  *finish(reason: string): Generator<UnsequencedEvent> {
    for (const block of this.openTools.values())
      yield* this.events.finishToolUse(block, { content: reason, isError: true });
    this.openTools.clear();
    yield* this.events.closeAll();
  }

  private *started(item: ThreadItem): Generator<UnsequencedEvent> {
    if (item.type === 'command_execution') yield* this.openTool(item.id, 'shell', { command: item.command });
    else if (item.type === 'mcp_tool_call')
      yield* this.openTool(item.id, `mcp__${item.server}__${item.tool}`, item.arguments ?? {});
    else if (item.type === 'todo_list') yield* this.plan(item);
  }

  private *completed(item: ThreadItem): Generator<UnsequencedEvent> {
    this.produced = true;
    switch (item.type) {
      case 'agent_message': {
        const { blockId, events } = this.events.startText(
          'assistant_text',
          this.options.model ? { model: this.options.model } : {},
        );
        yield* events;
        yield* this.events.appendText(blockId, item.text);
        yield* this.events.completeText(blockId);
        return;
      }
      case 'reasoning': {
        const { blockId, events } = this.events.startText('thinking');
        yield* events;
        yield* this.events.appendText(blockId, item.text);
        yield* this.events.completeText(blockId);
        return;
      }
      case 'command_execution':
        yield* this.command(item);
        return;
      case 'file_change':
        yield* this.fileChange(item);
        return;
      case 'mcp_tool_call':
        yield* this.mcpCall(item);
        return;
      case 'todo_list':
        yield* this.plan(item);
        return;
      case 'web_search': {
        const block = yield* this.openTool(item.id, 'web_search', { query: item.query });
        this.openTools.delete(item.id);
        yield* this.events.finishToolUse(block, { content: `Searched the web for: ${item.query}` });
        return;
      }
      case 'error':
        yield* this.events.system('info', `Codex: ${item.message}`, {
          data: { code: 'CODEX_WARNING', message: item.message },
        });
        return;
      default:
        yield* this.events.system('unknown_record', `Codex reported an item Parley does not know.`, { data: item });
    }
  }

  private *openTool(itemId: string, name: string, input: unknown): Generator<UnsequencedEvent, ToolUseBlock> {
    const existing = this.openTools.get(itemId);
    if (existing) return existing;
    const { block, events } = this.events.startToolUse({ toolUseId: itemId, name, input });
    this.openTools.set(itemId, block);
    yield* events;
    return block;
  }

  private *command(item: CommandExecutionItem): Generator<UnsequencedEvent> {
    const block = yield* this.openTool(item.id, 'shell', { command: item.command });
    this.openTools.delete(item.id);
    const failed = item.status === 'failed' || (item.exit_code !== undefined && item.exit_code !== 0);
    yield* this.events.finishToolUse(block, {
      content: item.aggregated_output,
      isError: failed,
      output: { command: item.command, ...(item.exit_code !== undefined ? { exitCode: item.exit_code } : {}) },
    });
  }

  private *fileChange(item: FileChangeItem): Generator<UnsequencedEvent> {
    // Codex reports paths and kinds; the diff is built from the file now and the patch that made it.
    const patches = item.status === 'completed' ? (this.options.patches?.() ?? []) : [];
    for (const [index, change] of item.changes.entries()) {
      const after = change.kind === 'delete' ? undefined : this.options.readFile?.(change.path);
      // The app server reports Codex's own diff of an update; `codex exec` does not, so it is rebuilt from the patch.
      const reported = (change as { diff?: unknown }).diff;
      const section =
        typeof reported !== 'string' && patches.length > 0
          ? sectionFor(patches, change.path, this.options.cwd ?? '/')
          : undefined;
      const diff =
        typeof reported === 'string'
          ? change.kind === 'update' && reported.includes('@@')
            ? reported
            : undefined
          : section
            ? diffOfChange(change.path, section, after)
            : undefined;
      const name = change.kind === 'add' ? 'write_file' : 'edit_file';
      const input = {
        path: change.path,
        kind: change.kind,
        ...(change.kind === 'add' && after !== undefined ? { content: after } : {}),
      };
      const block = yield* this.openTool(`${item.id}:${index}`, name, input);
      this.openTools.delete(`${item.id}:${index}`);
      yield* this.events.finishToolUse(block, {
        content: item.status === 'completed' ? `${change.kind} ${change.path}` : `The patch to ${change.path} failed.`,
        isError: item.status !== 'completed',
        ...(diff !== undefined ? { output: { path: change.path, diff } } : {}),
      });
    }
  }

  private *mcpCall(item: McpToolCallItem): Generator<UnsequencedEvent> {
    const block = yield* this.openTool(item.id, `mcp__${item.server}__${item.tool}`, item.arguments ?? {});
    this.openTools.delete(item.id);
    const text = (item.result?.content ?? [])
      .flatMap((part) => (part.type === 'text' && typeof part.text === 'string' ? [part.text] : []))
      .join('\n');
    // The CLI sends `null` for an absent error or structured content, which the SDK's types leave out.
    const error = item.error ?? undefined;
    const structured = item.result?.structured_content ?? undefined;
    yield* this.events.finishToolUse(block, {
      content: error ? error.message : text,
      isError: item.status === 'failed' || error !== undefined,
      ...(structured !== undefined ? { output: structured } : {}),
    });
  }

  private *plan(item: TodoListItem): Generator<UnsequencedEvent> {
    // Each new state of the list is one `update_plan` call carrying the whole list, as Claude Code's
    // TodoWrite is: the UIs and ACP show it as the plan, replacing the one before.
    const key = `${item.id}:${JSON.stringify(item.items)}`;
    if (this.planBlocks.has(key)) return;
    this.planBlocks.add(key);
    const firstOpen = item.items.findIndex((entry) => !entry.completed);
    const todos = item.items.map((entry, index) => ({
      content: entry.text,
      status: entry.completed ? 'completed' : index === firstOpen ? 'in_progress' : 'pending',
    }));
    const { block, events } = this.events.startToolUse({
      toolUseId: `${item.id}:${this.planBlocks.size}`,
      name: 'update_plan',
      input: { todos },
    });
    yield* events;
    const lines = item.items.map((entry) => `${entry.completed ? '[x]' : '[ ]'} ${entry.text}`);
    yield* this.events.finishToolUse(block, { content: `Plan:\n${lines.join('\n')}` });
  }
}

/** Codex's usage as Parley counts it: OpenAI counts cached input inside `input_tokens`, Parley apart. */
export function toUsage(usage: CodexTotals): Usage {
  return {
    inputTokens: Math.max(0, usage.input_tokens - usage.cached_input_tokens),
    outputTokens: usage.output_tokens,
    cacheReadTokens: usage.cached_input_tokens,
    cacheWriteTokens: 0,
  };
}

/** The turn's own usage from a running total and the total before the turn (never negative). */
export function turnUsage(reported: CodexTotals, before: CodexTotals | undefined): CodexTotals {
  if (!before) return reported;
  const input = reported.input_tokens - before.input_tokens;
  const cached = reported.cached_input_tokens - before.cached_input_tokens;
  const output = reported.output_tokens - before.output_tokens;
  // A total below the one before means Codex did not report a running total this time.
  if (input < 0 || cached < 0 || output < 0) return reported;
  return { input_tokens: input, cached_input_tokens: cached, output_tokens: output };
}
