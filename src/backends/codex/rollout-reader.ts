import {
  MAIN_CONVERSATION,
  type ConversationBlock,
  type SystemBlock,
  type SystemBlockSubtype,
  type ToolResultBlock,
  type ToolUseBlock,
  type TurnMetadata,
  type UnsequencedEvent,
  type Usage,
} from '../../conversation/index.js';
import { computeCost, lookupModel } from '../pricing.js';
import { isObject, numberOf, objectOf, parseJson, stringOf, timeOf, type JsonObject } from '../transcripts/json.js';
import type { TranscriptInput } from '../transcripts/lines.js';
import { systemBlock } from '../transcripts/system-block.js';
import {
  emptyInfo,
  parseCollected,
  transcriptWarning,
  type EventSink,
  type ParsedNativeTranscript,
  type TranscriptInfo,
  type TranscriptParser,
  type TranscriptWarning,
} from '../transcripts/types.js';
import { deletionDiff, editsOfChanges, editsOfPatch, patchOfCommand, type FileEdit } from './codex-patch.js';

/**
 * Codex rollouts (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`) → Parley
 * blocks. Each line is `{timestamp, type, payload}`:
 *
 * - `response_item` is what the model saw and said, and the source of the blocks: `message` (a
 *   user prompt, an answer, or context Codex injected: instructions, `<environment_context>`),
 *   `reasoning` (its summary; encrypted-only reasoning is a withheld thinking block),
 *   `function_call` / `custom_tool_call` / `local_shell_call` and their `*_output` joined on
 *   `call_id`, `web_search_call`, and a server-side `compaction`;
 * - `event_msg` is what the UI was told. Most of it repeats the response items (`user_message`,
 *   `agent_message`, `agent_reasoning`, `item_completed` of a message): those lines are recognised by
 *   their first bytes and never parsed. What it adds is kept: `token_count` (usage), a command's exit
 *   code (`exec_command_end`, a `CommandExecution` item), what a patch changed (`patch_apply_*`, a
 *   `FileChange` item), turn ends (`task_complete`, `turn_aborted`), errors, rollbacks, reviews;
 * - `compacted` (a local compaction's summary) becomes a compaction block; `session_meta` and
 *   `turn_context` give the thread id, folder, CLI version and model.
 *
 * Usage: `token_count` carries the thread's running total (`total_token_usage`), which a resumed
 * thread carries on, and Codex repeats it; a request's usage is the growth of that total, so
 * nothing is counted twice. OpenAI counts cached input inside `input_tokens`; Parley apart. Cost is
 * Parley's estimate from its price table (Codex records none).
 *
 * Unknown record and event types become `unknown_record` system blocks with the record; a line that
 * is not JSON is skipped with a warning (`TRUNCATED_LINE` when it is the file's unfinished last
 * line). The first rollouts (mid-2025) had no envelope: a meta line `{id, timestamp, instructions}`
 * then bare response items; they are read too.
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
const SKIPPED_EVENTS = new Set([
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
const SKIPPED_ITEMS = new Set([
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
const DETAIL_EVENTS = new Set(['item_completed', 'exec_command_end', 'patch_apply_begin', 'patch_apply_end']);
/** Top-level records read for nothing but their presence. */
const SILENT_RECORDS = new Set(['world_state']);
const SHELL_TOOLS = new Set(['shell', 'container.exec', 'shell_command', 'exec_command', 'local_shell']);
/** Text Codex puts in a `user` message that the user did not type. */
const CONTEXT_PREFIXES = [
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
const HEAD_BYTES = 320;
const ROLE_PATTERN = /"role":"([a-z]+)"/;
/** Response items a listing only counts (`summary`). */
const SKIMMED_ITEMS = new Set([
  'reasoning',
  'function_call',
  'function_call_output',
  'custom_tool_call',
  'custom_tool_call_output',
  'local_shell_call',
  'web_search_call',
  'ghost_snapshot',
]);
const TYPE_PATTERN = /"type":"([A-Za-z_]+)"/g;

/** A command's end as Codex reported it (`exec_command_end`, a `CommandExecution` item). */
interface CommandEnd {
  exitCode?: number;
  output?: string;
  durationMs?: number;
  command?: string;
  failed?: boolean;
}

/** A call waiting for its output, held with the blocks after it so the log keeps the call before its result. */
interface OpenCall {
  block: ToolUseBlock;
  entry: QueueEntry;
  shell?: { command: string; cwd?: string };
  patch?: string;
}

interface QueueEntry {
  event: UnsequencedEvent | undefined;
  waiting: boolean;
  /** Replaced at release by the blocks a call becomes (a patch's files). */
  events?: UnsequencedEvent[];
}

interface Totals {
  input: number;
  cached: number;
  output: number;
}

export class CodexRolloutParser implements TranscriptParser {
  readonly warnings: TranscriptWarning[] = [];
  readonly info: TranscriptInfo = emptyInfo();

  private readonly queue: QueueEntry[] = [];
  private readonly calls = new Map<string, OpenCall>();
  private readonly commandEnds = new Map<string, CommandEnd>();
  private readonly patches = new Map<string, { edits: FileEdit[]; failed?: boolean; output?: string }>();
  private lastAt = 0;
  private model: string | undefined;
  private contextWindow: number | undefined;
  private totals: Totals | undefined;
  private turnOpen = false;
  /** The open turn has had its prompt. */
  private prompted = false;
  /** The file marks turn starts (`task_started`): a prompt inside a turn (a steer) does not end it. */
  private marksTurns = false;
  /** Calls already answered: a late end event of theirs changes nothing. */
  private readonly answered = new Set<string>();
  private unknownCount = 0;
  private ended = false;
  private usageSeen = false;
  private costUnknown = false;
  private legacy = false;

  constructor(private readonly options: CodexRolloutParserOptions) {}

  lineBytes(buffer: Buffer, start: number, end: number, lineNumber: number, terminated: boolean): void {
    if (end <= start) return;
    // The envelope's first keys say what a line is: the repeated ones are never decoded or parsed.
    const head = buffer.toString('latin1', start, Math.min(end, start + HEAD_BYTES));
    TYPE_PATTERN.lastIndex = 0;
    const first = TYPE_PATTERN.exec(head)?.[1];
    if (this.options.summary === true && first === 'response_item' && terminated && this.skimmed(head)) return;
    if ((first === 'event_msg' || first === 'world_state') && terminated) {
      if (first === 'world_state') return;
      const second = TYPE_PATTERN.exec(head)?.[1];
      if (second !== undefined && SKIPPED_EVENTS.has(second)) return;
      // A listing needs no exit code or diff.
      if (this.options.summary === true && second !== undefined && DETAIL_EVENTS.has(second)) return;
      if (second === 'item_completed') {
        const item = TYPE_PATTERN.exec(head)?.[1];
        if (item !== undefined && SKIPPED_ITEMS.has(item)) return;
      }
    }
    this.line(buffer.toString('utf8', start, end), lineNumber, terminated);
  }

  /** A response item the listing needs nothing of but its count (the regex has read the envelope's type). */
  private skimmed(head: string): boolean {
    const item = TYPE_PATTERN.exec(head)?.[1];
    if (item === 'message') {
      const role = ROLE_PATTERN.exec(head)?.[1];
      if (role !== 'assistant') return false;
      this.info.messageCount++;
    } else if (item === undefined || !SKIMMED_ITEMS.has(item)) {
      return false;
    }
    this.info.blockCount++;
    return true;
  }

  line(text: string, lineNumber: number, terminated = true): void {
    if (text.length === 0 || text.trim().length === 0) return;
    const parsed = parseJson(text);
    if (parsed === undefined) {
      // A live file's unfinished last line is the record being written, read whole on the next pass.
      if (!terminated && this.options.live === true) return;
      this.warn(
        terminated ? 'MALFORMED_LINE' : 'TRUNCATED_LINE',
        terminated
          ? `line ${lineNumber} is not valid JSON; skipped`
          : `line ${lineNumber} is cut off (the file ends mid-record, as when Codex is killed while writing); skipped`,
        lineNumber,
      );
      return;
    }
    if (!isObject(parsed.value)) {
      this.warn('NOT_A_RECORD', `line ${lineNumber} is JSON but not a record object; skipped`, lineNumber);
      return;
    }
    this.record(parsed.value, lineNumber);
  }

  end(): TranscriptInfo {
    if (this.ended) return this.info;
    this.ended = true;
    // A live file's call still waiting for its output is kept back with what follows it: each block
    // reaches the log once, in its final form and place, so a later pass finds every block and every
    // usage where this one left it.
    if (this.options.live !== true) this.closeTurn(this.lastAt, {});
    else this.release();
    if (this.usageSeen && this.costUnknown) {
      this.info.costUnknown = true;
    }
    if (this.unknownCount > 0)
      this.warn(
        'UNKNOWN_RECORD',
        `${this.unknownCount} record(s) of an unknown kind were kept as unknown_record blocks`,
      );
    return this.info;
  }

  // ---------------------------------------------------------------------------------------------
  // Records

  private record(record: JsonObject, line: number): void {
    const type = stringOf(record['type']);
    const payload = objectOf(record['payload']);
    const at = this.time(record['timestamp'] ?? payload?.['timestamp']);
    if (payload === undefined) {
      this.legacyRecord(record, type, line, at);
      return;
    }
    switch (type) {
      case 'session_meta':
        this.sessionMeta(payload);
        return;
      case 'response_item':
        this.responseItem(payload, line, at);
        return;
      case 'event_msg':
        this.event(payload, line, at);
        return;
      case 'turn_context': {
        const model = stringOf(payload['model']);
        if (model !== undefined) this.noteModel(model);
        this.info.cwd ??= stringOf(payload['cwd']);
        return;
      }
      case 'compacted':
        this.compacted(payload, line, at);
        return;
      case 'token_usage_record':
        this.usage(objectOf(payload['thread_token_usage']), objectOf(payload['usage']), at);
        return;
      default:
        if (type !== undefined && SILENT_RECORDS.has(type)) return;
        this.unknown(record, line, at, `Codex record of type "${type ?? 'untyped'}" (not shown)`);
    }
  }

  /** The first rollouts: a meta line without a type, then bare response items and `{record_type: "state"}` lines. */
  private legacyRecord(record: JsonObject, type: string | undefined, line: number, at: number): void {
    if (type === undefined && typeof record['id'] === 'string' && line <= 2) {
      this.legacy = true;
      this.sessionMeta(record);
      return;
    }
    if (record['record_type'] === 'state') return;
    if (type !== undefined && (this.legacy || RESPONSE_ITEM_TYPES.has(type))) {
      this.responseItem(record, line, at);
      return;
    }
    this.unknown(record, line, at, `Codex record of type "${type ?? 'untyped'}" (not shown)`);
  }

  private sessionMeta(payload: JsonObject): void {
    const id = stringOf(payload['id']) ?? stringOf(payload['session_id']);
    if (id !== undefined) this.info.nativeSessionId ??= id;
    this.info.cwd ??= stringOf(payload['cwd']);
    this.info.version ??= stringOf(payload['cli_version']);
    const started = timeOf(payload['timestamp']);
    if (started !== undefined && (this.info.startedAt === undefined || started < this.info.startedAt))
      this.info.startedAt = started;
    const provenance = objectOf(objectOf(payload['base_instructions'])?.['provenance']);
    const model = stringOf(provenance?.['model']);
    if (model !== undefined && this.model === undefined) this.noteModel(model);
  }

  private responseItem(item: JsonObject, line: number, at: number): void {
    const type = stringOf(item['type']);
    const id = `L${line}`;
    switch (type) {
      case 'message':
        this.message(item, id, at);
        return;
      case 'reasoning': {
        const summary = textsOf(item['summary']);
        const content = summary.length > 0 ? summary : textsOf(item['content']);
        const redacted = content.length === 0 && typeof item['encrypted_content'] === 'string';
        this.push({
          type: 'thinking',
          id,
          createdAt: at,
          completedAt: at,
          content: content.join('\n\n'),
          ...(redacted ? { redacted: true } : {}),
        });
        return;
      }
      case 'function_call': {
        const name = stringOf(item['name']) ?? 'unknown';
        const raw = item['arguments'];
        const input = typeof raw === 'string' ? (parseJson(raw)?.value ?? { arguments: raw }) : (raw ?? {});
        this.openCall(stringOf(item['call_id']) ?? id, name, input, id, at);
        return;
      }
      case 'custom_tool_call': {
        const name = stringOf(item['name']) ?? 'unknown';
        const input = stringOf(item['input']) ?? '';
        this.openCall(stringOf(item['call_id']) ?? id, name, { input }, id, at);
        return;
      }
      case 'local_shell_call': {
        const action = objectOf(item['action']) ?? {};
        this.openCall(stringOf(item['call_id']) ?? stringOf(item['id']) ?? id, 'local_shell', action, id, at);
        return;
      }
      case 'function_call_output':
      case 'custom_tool_call_output':
      case 'tool_search_output':
        this.callOutput(stringOf(item['call_id']) ?? '', item['output'] ?? item['tools'], id, at);
        return;
      case 'tool_search_call':
        this.openCall(stringOf(item['call_id']) ?? id, 'tool_search', item['arguments'] ?? {}, id, at);
        return;
      case 'web_search_call': {
        const action = objectOf(item['action']) ?? {};
        const query = stringOf(action['query']) ?? stringOf(action['url']) ?? '';
        const block = this.toolUse(id, stringOf(item['id']) ?? id, 'web_search', action, at);
        block.status = item['status'] === 'failed' ? 'error' : 'success';
        this.push(block);
        this.push(toolResult(`${id}:result`, block.toolUseId, `Searched the web for: ${query}`, at, false));
        return;
      }
      case 'compaction':
      case 'compaction_summary': {
        const block = systemBlock(
          id,
          'compaction',
          'Codex compacted the conversation (the summary is encrypted).',
          at,
          {
            kind: 'codex_remote_compaction',
          },
        );
        this.info.compactions.push({ blockId: id, at, trigger: 'remote', messagesBefore: this.info.messageCount });
        this.push(block);
        return;
      }
      case 'ghost_snapshot':
        // A git snapshot for Codex's undo: nothing the conversation shows.
        return;
      default:
        this.unknown(item, line, at, `Codex response item of type "${type ?? 'untyped'}" (not shown)`);
    }
  }

  private message(item: JsonObject, id: string, at: number): void {
    const role = stringOf(item['role']);
    const text = messageText(item['content']);
    if (role === 'assistant') {
      this.push({
        type: 'assistant_text',
        id,
        createdAt: at,
        completedAt: at,
        content: text,
        ...(this.model !== undefined ? { model: this.model } : {}),
      });
      return;
    }
    if (role === 'user' && !isInjected(item, text)) {
      // A prompt begins a turn; in a file that marks no turn starts, the turn before it ends here.
      if (this.turnOpen && this.prompted && !this.marksTurns) this.closeTurn(this.lastAt, {});
      this.turnOpen = true;
      this.prompted = true;
      this.info.firstUserMessage ??= text;
      this.push({ type: 'user_message', id, createdAt: at, completedAt: at, content: text });
      return;
    }
    this.push(systemBlock(id, 'info', text, at, { kind: 'codex_context', role: role ?? 'unknown' }));
  }

  private event(payload: JsonObject, line: number, at: number): void {
    const type = stringOf(payload['type']);
    const id = `L${line}`;
    if (type !== undefined && SKIPPED_EVENTS.has(type)) return;
    switch (type) {
      case 'token_count': {
        const info = objectOf(payload['info']);
        if (info === undefined) return;
        const window = numberOf(info['model_context_window']);
        if (window !== undefined && window > 0) this.contextWindow = Math.round(window);
        this.usage(objectOf(info['total_token_usage']), objectOf(info['last_token_usage']), at);
        return;
      }
      case 'task_started':
      case 'turn_started': {
        const window = numberOf(payload['model_context_window']);
        if (window !== undefined && window > 0) this.contextWindow = Math.round(window);
        // A turn that never ended (Codex was killed) ends where the next begins.
        if (this.turnOpen && this.prompted) this.closeTurn(this.lastAt, {});
        this.marksTurns = true;
        this.turnOpen = true;
        this.prompted = false;
        return;
      }
      case 'task_complete':
      case 'turn_complete': {
        const duration = numberOf(payload['duration_ms']);
        this.closeTurn(at, { stopReason: 'end_turn', ...(duration !== undefined ? { durationMs: duration } : {}) });
        return;
      }
      case 'turn_aborted': {
        const reason = stringOf(payload['reason']) ?? 'interrupted';
        this.push(systemBlock(id, 'aborted', `The turn was cut short in Codex (${reason}).`, at, { reason }));
        this.closeTurn(at, { stopReason: 'aborted' });
        return;
      }
      case 'exec_command_end': {
        const callId = stringOf(payload['call_id']);
        const end: CommandEnd = {
          output: stringOf(payload['aggregated_output']) ?? joinOutput(payload['stdout'], payload['stderr']),
          command: commandText(payload['command']),
        };
        const exit = numberOf(payload['exit_code']);
        if (exit !== undefined) end.exitCode = exit;
        const duration = durationOf(payload['duration']);
        if (duration !== undefined) end.durationMs = duration;
        this.commandEnd(callId, end, id, at);
        return;
      }
      case 'patch_apply_begin':
      case 'patch_apply_end': {
        const callId = stringOf(payload['call_id']);
        if (callId === undefined) return;
        const known = this.patches.get(callId) ?? { edits: [] };
        const edits = editsOfChanges(payload['changes']);
        if (edits.length > 0) known.edits = mergeEdits(known.edits, edits);
        if (type === 'patch_apply_end') {
          known.failed = payload['success'] === false;
          const output = joinOutput(payload['stdout'], payload['stderr']);
          if (output.length > 0) known.output = output;
        }
        this.patches.set(callId, known);
        return;
      }
      case 'item_completed':
        this.itemCompleted(objectOf(payload['item']) ?? {}, id, at);
        return;
      case 'error':
      case 'stream_error':
        this.push(
          systemBlock(id, type === 'error' ? 'error' : 'info', `Codex: ${stringOf(payload['message']) ?? type}`, at, {
            kind: type,
          }),
        );
        return;
      case 'warning':
        this.push(systemBlock(id, 'info', `Codex: ${stringOf(payload['message']) ?? 'warning'}`, at, { kind: type }));
        return;
      case 'thread_rolled_back': {
        const turns = numberOf(payload['num_turns']) ?? 0;
        this.push(
          systemBlock(
            id,
            'info',
            `The last ${turns} turn(s) were rolled back in Codex; Codex no longer sends them to the model.`,
            at,
            { kind: type, numTurns: turns },
          ),
        );
        return;
      }
      case 'entered_review_mode':
      case 'exited_review_mode':
      case 'undo_completed':
      case 'undo_started':
        this.push(systemBlock(id, 'info', reviewText(type, payload), at, { kind: type, event: payload }));
        return;
      case 'thread_name_updated': {
        const name = stringOf(payload['thread_name']) ?? stringOf(payload['name']);
        if (name !== undefined) this.info.customTitle = name;
        return;
      }
      default:
        this.unknown(payload, line, at, `Codex event of type "${type ?? 'untyped'}" (not shown)`);
    }
  }

  private itemCompleted(item: JsonObject, id: string, at: number): void {
    const type = stringOf(item['type']);
    const callId = stringOf(item['id']);
    if (type === 'CommandExecution') {
      const end: CommandEnd = {
        failed: item['status'] === 'failed' || item['status'] === 'declined',
        command: commandText(item['command']),
      };
      const output = stringOf(item['aggregated_output']);
      if (output !== undefined) end.output = output;
      const exit = numberOf(item['exit_code']);
      if (exit !== undefined) end.exitCode = exit;
      const duration = durationOf(item['duration']);
      if (duration !== undefined) end.durationMs = duration;
      this.commandEnd(callId, end, id, at);
    } else if (type === 'FileChange' && callId !== undefined) {
      const known = this.patches.get(callId) ?? { edits: [] };
      known.edits = mergeEdits(known.edits, editsOfChanges(item['changes']));
      known.failed = item['status'] === 'failed' || item['status'] === 'declined';
      const output = joinOutput(item['stdout'], item['stderr']);
      if (output.length > 0) known.output = output;
      this.patches.set(callId, known);
    }
  }

  private compacted(payload: JsonObject, line: number, at: number): void {
    const id = `L${line}`;
    const summary = stringOf(payload['message']) ?? '';
    const history = Array.isArray(payload['replacement_history']) ? payload['replacement_history'].length : undefined;
    this.push(
      systemBlock(id, 'compaction', summary, at, {
        kind: 'codex_compaction',
        summary: true,
        ...(history !== undefined ? { replacementHistoryItems: history } : {}),
      }),
    );
    this.info.compactions.push({
      blockId: id,
      summary,
      at,
      trigger: 'compact',
      messagesBefore: this.info.messageCount,
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Tool calls

  private openCall(callId: string, name: string, input: unknown, id: string, at: number): void {
    const fields = objectOf(input) ?? {};
    const call: Omit<OpenCall, 'entry'> = { block: this.toolUse(id, callId, name, input, at) };
    if (SHELL_TOOLS.has(name)) {
      const command =
        commandText(fields['cmd']) ?? commandText(fields['command']) ?? commandText(fields['script']) ?? '';
      const cwd = stringOf(fields['workdir']) ?? stringOf(fields['working_directory']);
      const patch = patchOfCommand(command);
      if (patch !== undefined) call.patch = patch;
      else call.shell = { command, ...(cwd !== undefined ? { cwd } : {}) };
    } else if (name === 'apply_patch') {
      call.patch = stringOf(fields['input']) ?? stringOf(fields['patch']) ?? '';
    }
    const entry: QueueEntry = { event: undefined, waiting: true };
    this.queue.push(entry);
    this.calls.set(callId, { ...call, entry });
  }

  private toolUse(id: string, toolUseId: string, name: string, input: unknown, at: number): ToolUseBlock {
    return { type: 'tool_use', id, createdAt: at, completedAt: at, toolUseId, name, input, status: 'running' };
  }

  private callOutput(callId: string, output: unknown, id: string, at: number): void {
    const call = this.calls.get(callId);
    const { text, failed } = outputText(output);
    if (call === undefined) {
      // An output whose call this file does not hold (a fork's copied tail): shown on its own.
      const block = this.toolUse(`${id}:call`, callId || id, 'unknown', {}, at);
      block.status = failed ? 'error' : 'success';
      this.push(block);
      this.push(toolResult(id, block.toolUseId, text, at, failed, output));
      return;
    }
    this.calls.delete(callId);
    this.answered.add(callId);
    const events = call.patch !== undefined ? this.patchEvents(call, callId, text, failed, id, at) : undefined;
    if (events !== undefined) {
      call.entry.events = events;
      call.entry.waiting = false;
      this.release();
      return;
    }
    const block = call.block;
    const end = this.commandEnds.get(callId);
    this.commandEnds.delete(callId);
    if (call.shell !== undefined) {
      const exitCode = end?.exitCode ?? exitCodeOf(text);
      const isError = failed || end?.failed === true || (exitCode !== undefined && exitCode !== 0);
      block.name = 'shell';
      block.input = {
        ...(call.shell.cwd !== undefined ? { cwd: call.shell.cwd } : {}),
        command: call.shell.command,
        arguments: block.input,
      };
      block.status = isError ? 'error' : 'success';
      if (isError) block.error = exitCode !== undefined ? `exit code ${exitCode}` : text.slice(0, 500);
      block.completedAt = at;
      call.entry.event = blockEvent(block);
      call.entry.waiting = false;
      this.push(
        toolResult(id, callId, legacyShellOutput(text) ?? text, at, isError, {
          command: call.shell.command,
          ...(exitCode !== undefined ? { exitCode } : {}),
          ...(end?.durationMs !== undefined ? { durationMs: end.durationMs } : {}),
        }),
      );
      this.release();
      return;
    }
    block.status = failed ? 'error' : 'success';
    if (failed) block.error = text.slice(0, 500);
    block.completedAt = at;
    call.entry.event = blockEvent(block);
    call.entry.waiting = false;
    this.push(toolResult(id, callId, text, at, failed, output));
    this.release();
  }

  /** A command Codex reports the end of: its call's exit code, or a command of its own (a `!` command typed in the TUI). */
  private commandEnd(callId: string | undefined, end: CommandEnd, id: string, at: number): void {
    if (callId !== undefined && this.calls.has(callId)) {
      this.commandEnds.set(callId, end);
      return;
    }
    if (callId !== undefined && this.answered.has(callId)) return;
    const command = end.command ?? '';
    const isError = end.failed === true || (end.exitCode !== undefined && end.exitCode !== 0);
    const block = this.toolUse(`${id}:call`, callId ?? id, 'shell', { command }, at);
    block.status = isError ? 'error' : 'success';
    this.push(block);
    this.push(
      toolResult(id, block.toolUseId, end.output ?? '', at, isError, {
        command,
        ...(end.exitCode !== undefined ? { exitCode: end.exitCode } : {}),
      }),
    );
  }

  /** A patch as one tool call per file it touched: `write_file` for a new file, `edit_file` with the diff otherwise. */
  private patchEvents(
    call: OpenCall,
    callId: string,
    text: string,
    outputFailed: boolean,
    id: string,
    at: number,
  ): UnsequencedEvent[] {
    const reported = this.patches.get(callId);
    this.patches.delete(callId);
    this.commandEnds.delete(callId);
    const parsed = editsOfPatch(call.patch ?? '');
    const edits = reported !== undefined && reported.edits.length > 0 ? mergeEdits(parsed, reported.edits) : parsed;
    const failed = reported?.failed ?? (outputFailed || /^(?:Exit code: [1-9]|Failed|error:)/im.test(text));
    const content = reported?.output ?? text;
    if (edits.length === 0) {
      const block = { ...call.block, name: 'apply_patch', input: { patch: call.patch }, completedAt: at };
      block.status = failed ? 'error' : 'success';
      return [blockEvent(block), blockEvent(toolResult(id, callId, content, at, failed))];
    }
    const events: UnsequencedEvent[] = [];
    edits.forEach((edit, index) => {
      const toolUseId = edits.length === 1 ? callId : `${callId}:${index}`;
      const write = edit.kind === 'add' && edit.content !== undefined;
      const input = write
        ? { path: edit.path, content: edit.content }
        : { path: edit.path, kind: edit.kind, ...(edit.movePath !== undefined ? { movePath: edit.movePath } : {}) };
      const block: ToolUseBlock = {
        ...call.block,
        id: edits.length === 1 ? call.block.id : `${call.block.id}:${index}`,
        toolUseId,
        name: write ? 'write_file' : 'edit_file',
        input,
        status: failed ? 'error' : 'success',
        completedAt: at,
      };
      const diff = edit.kind === 'delete' ? deletionDiff(edit.content ?? '') : edit.diff;
      events.push(blockEvent(block));
      events.push(
        blockEvent(
          toolResult(
            edits.length === 1 ? id : `${id}:${index}`,
            toolUseId,
            index === 0 ? content : `${edit.kind} ${edit.path}`,
            at,
            failed,
            diff !== undefined && !write ? { path: edit.movePath ?? edit.path, diff } : undefined,
          ),
        ),
      );
    });
    return events;
  }

  // ---------------------------------------------------------------------------------------------
  // Usage and turns

  /** A running total's growth is a request's usage; `last` serves when the total went back (another thread's). */
  private usage(total: JsonObject | undefined, last: JsonObject | undefined, at: number): void {
    const now = totalsOf(total);
    let delta: Totals | undefined;
    if (now !== undefined) {
      const before = this.totals;
      if (before === undefined) delta = now;
      else if (now.input >= before.input && now.cached >= before.cached && now.output >= before.output)
        delta = {
          input: now.input - before.input,
          cached: now.cached - before.cached,
          output: now.output - before.output,
        };
      else delta = totalsOf(last) ?? now;
      this.totals = now;
    } else {
      delta = totalsOf(last);
    }
    if (delta === undefined || (delta.input === 0 && delta.cached === 0 && delta.output === 0)) return;
    const usage: Usage = {
      inputTokens: Math.max(0, delta.input - delta.cached),
      outputTokens: Math.max(0, delta.output),
      cacheReadTokens: Math.max(0, delta.cached),
      cacheWriteTokens: 0,
    };
    const info = lookupModel(this.model);
    const cost = computeCost(info?.pricing, usage);
    if ('costUnknown' in cost) this.costUnknown = true;
    this.usageSeen = true;
    const window = this.contextWindow ?? info?.contextWindow;
    this.pushMetadata(
      {
        usage,
        ...cost,
        ...('costUsd' in cost ? { costEstimated: true } : {}),
        ...(this.model !== undefined ? { model: this.model } : {}),
        ...(window !== undefined ? { contextWindow: window } : {}),
      },
      at,
    );
  }

  private closeTurn(at: number, metadata: TurnMetadata): void {
    this.releaseAll();
    if (!this.turnOpen) return;
    this.turnOpen = false;
    this.prompted = false;
    this.pushMetadata(
      { ...metadata, turnComplete: true, ...(this.model !== undefined ? { model: this.model } : {}) },
      at,
    );
  }

  private noteModel(model: string): void {
    this.model = model;
    this.info.model = model;
  }

  // ---------------------------------------------------------------------------------------------
  // Output, in order

  private push(block: ConversationBlock): void {
    if (this.queue.length === 0) this.emit(blockEvent(block));
    else this.queue.push({ event: blockEvent(block), waiting: false });
  }

  /**
   * Metadata is not held behind a call waiting for its output: it goes out after the blocks already
   * out, a place that stays the same while the file grows, so a re-import of a live file (which
   * finds usage by its place in the log) never counts it twice. Turn ends come after the turn's
   * blocks, released first.
   */
  private pushMetadata(metadata: TurnMetadata, at: number): void {
    this.emit({ type: 'metadata_update', conversationId: MAIN_CONVERSATION, at, metadata });
  }

  /** Emits the queue's head up to the first call still waiting for its output. */
  private release(): void {
    let index = 0;
    while (index < this.queue.length && !this.queue[index]!.waiting) {
      const entry = this.queue[index]!;
      if (entry.events !== undefined) for (const event of entry.events) this.emit(event);
      else if (entry.event !== undefined) this.emit(entry.event);
      index++;
    }
    if (index > 0) this.queue.splice(0, index);
  }

  /** The turn is over (or the file is): calls still waiting never got their output. */
  private releaseAll(): void {
    for (const [callId, call] of this.calls) {
      const block = call.block;
      block.status = 'error';
      block.error = 'interrupted: no output for this call in the rollout';
      if (call.shell !== undefined) block.input = { command: call.shell.command, arguments: block.input };
      if (call.shell !== undefined) block.name = 'shell';
      call.entry.event = blockEvent(block);
      call.entry.waiting = false;
      this.calls.delete(callId);
    }
    this.release();
  }

  private emit(event: UnsequencedEvent): void {
    if (event.type === 'block_complete') {
      const block = event.block;
      this.info.blockCount++;
      if (block.type === 'user_message' || block.type === 'assistant_text') this.info.messageCount++;
    }
    this.options.emit(event);
  }

  private unknown(record: JsonObject, line: number, at: number, content: string): void {
    this.unknownCount++;
    this.push(systemBlock(`L${line}`, 'unknown_record', content, at, { source: 'codex', record }));
  }

  private time(value: unknown): number {
    const at = timeOf(value);
    if (at === undefined) return this.lastAt;
    this.info.startedAt ??= at;
    this.info.endedAt = at;
    this.lastAt = at;
    return at;
  }

  private warn(code: string, message: string, line?: number): void {
    this.warnings.push(transcriptWarning(code, message, this.options.file, line));
  }
}

const RESPONSE_ITEM_TYPES = new Set([
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

function blockEvent(block: ConversationBlock): UnsequencedEvent {
  return { type: 'block_complete', conversationId: MAIN_CONVERSATION, at: block.createdAt, block };
}

function toolResult(
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
function textsOf(parts: unknown): string[] {
  if (!Array.isArray(parts)) return [];
  const texts: string[] = [];
  for (const part of parts) {
    const text = isObject(part) ? stringOf(part['text']) : undefined;
    if (text !== undefined && text.length > 0) texts.push(text);
  }
  return texts;
}

/** A message's content parts as text; an image is a placeholder (its data URL is in the raw rollout). */
function messageText(content: unknown): string {
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
function isInjected(item: JsonObject, text: string): boolean {
  const kinds = objectOf(item['internal_chat_message_metadata_passthrough'])?.['content_item_kinds'];
  if (Array.isArray(kinds) && kinds.length > 0)
    return !kinds.some((kind) => typeof kind === 'string' && kind.startsWith('user.'));
  const opening = text.trimStart();
  return CONTEXT_PREFIXES.some((prefix) => opening.startsWith(prefix));
}

/** A shell command as one line: `["bash", "-lc", script]` is its script; other argument lists are joined. */
function commandText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (!Array.isArray(value) || !value.every((part) => typeof part === 'string')) return undefined;
  const parts = value as string[];
  if (parts.length === 3 && /(?:^|\/)(?:ba|z|da)?sh$/.test(parts[0]!) && /^-l?c$/.test(parts[1]!)) return parts[2];
  return parts.map((part) => (/^[\w@%+=:,./-]+$/.test(part) ? part : `'${part.replace(/'/g, `'\\''`)}'`)).join(' ');
}

/** A tool's output: a string, content items, or the older `{content, success}`. */
function outputText(output: unknown): { text: string; failed: boolean } {
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
function exitCodeOf(text: string): number | undefined {
  if (text.startsWith('{')) {
    const metadata = objectOf(objectOf(parseJson(text)?.value)?.['metadata']);
    const code = numberOf(metadata?.['exit_code']);
    if (code !== undefined) return code;
  }
  const match = /^(?:Process exited with code|Exit code:) (-?\d+)$/m.exec(text);
  return match !== null ? Number(match[1]) : undefined;
}

function legacyShellOutput(text: string): string | undefined {
  if (!text.startsWith('{"output"')) return undefined;
  return stringOf(objectOf(parseJson(text)?.value)?.['output']);
}

function joinOutput(stdout: unknown, stderr: unknown): string {
  return [stringOf(stdout), stringOf(stderr)].filter((text) => text !== undefined && text.length > 0).join('\n');
}

/** Rust's `Duration` as serde writes it (`{secs, nanos}`), or milliseconds. */
function durationOf(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  const duration = objectOf(value);
  const secs = numberOf(duration?.['secs']);
  if (secs === undefined) return undefined;
  return Math.round(secs * 1000 + (numberOf(duration?.['nanos']) ?? 0) / 1e6);
}

function totalsOf(usage: JsonObject | undefined): Totals | undefined {
  if (usage === undefined) return undefined;
  const input = numberOf(usage['input_tokens']);
  const output = numberOf(usage['output_tokens']);
  if (input === undefined && output === undefined) return undefined;
  return { input: input ?? 0, cached: numberOf(usage['cached_input_tokens']) ?? 0, output: output ?? 0 };
}

/** The patch's own reading of each file, completed by what Codex reported (its diff and contents win). */
function mergeEdits(base: FileEdit[], reported: FileEdit[]): FileEdit[] {
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

function reviewText(type: string, payload: JsonObject): string {
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

/**
 * What a listing shows of a rollout, read fast (`summary` mode): the title, counts, and the
 * metadata events (usage, cost, turns) in order, which fold into the session's metrics exactly as
 * the built log's will. The deferred import runs it while the kernel copies the file.
 */
export class CodexRolloutScan implements TranscriptParser {
  readonly metadata: UnsequencedEvent[] = [];
  private readonly parser: CodexRolloutParser;

  constructor(options: { file?: string } = {}) {
    this.parser = new CodexRolloutParser({
      ...options,
      summary: true,
      emit: (event) => {
        if (event.type === 'metadata_update') this.metadata.push(event);
      },
    });
  }

  get warnings(): readonly TranscriptWarning[] {
    return this.parser.warnings;
  }

  line(text: string, lineNumber: number, terminated: boolean): void {
    this.parser.line(text, lineNumber, terminated);
  }

  lineBytes(buffer: Buffer, start: number, end: number, lineNumber: number, terminated: boolean): void {
    this.parser.lineBytes(buffer, start, end, lineNumber, terminated);
  }

  end(): TranscriptInfo {
    return this.parser.end();
  }
}

/** Parses a whole rollout held in memory. */
export function parseCodexRollout(
  input: TranscriptInput,
  options: Omit<CodexRolloutParserOptions, 'emit'> = {},
): ParsedNativeTranscript {
  return parseCollected(input, (emit) => new CodexRolloutParser({ ...options, emit }));
}
