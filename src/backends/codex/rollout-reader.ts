import type { UnsequencedEvent, Usage } from '../../conversation/index.js';
import { isObject, numberOf, objectOf, parseJson, stringOf, timeOf, type JsonObject } from '../transcripts/json.js';
import type { TranscriptInput } from '../transcripts/lines.js';
import { systemBlock } from '../transcripts/system-block.js';
import {
  parseCollected,
  type ParsedNativeTranscript,
  type TranscriptInfo,
  type TranscriptParser,
  type TranscriptWarning,
} from '../transcripts/types.js';
import { editsOfChanges } from './codex-patch.js';
import {
  type CommandEnd,
  commandText,
  DETAIL_EVENTS,
  durationOf,
  HEAD_BYTES,
  isInjected,
  joinOutput,
  mergeEdits,
  messageText,
  reviewText,
  ROLE_PATTERN,
  SILENT_RECORDS,
  SKIMMED_ITEMS,
  SKIPPED_EVENTS,
  SKIPPED_ITEMS,
  textsOf,
  toolResult,
  TYPE_PATTERN,
  RESPONSE_ITEM_TYPES,
  type CodexRolloutParserOptions,
} from './rollout-format.js';
import { RolloutToolCalls } from './rollout-tool-calls.js';

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

export type { CodexRolloutParserOptions } from './rollout-format.js';

export class CodexRolloutParser extends RolloutToolCalls implements TranscriptParser {
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
