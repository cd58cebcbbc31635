import {
  MAIN_CONVERSATION,
  type ConversationBlock,
  type TurnMetadata,
  type UnsequencedEvent,
  type Usage,
} from '../../conversation/index.js';
import { computeCost, lookupModel } from '../pricing.js';
import { timeOf, type JsonObject } from '../transcripts/json.js';
import { systemBlock } from '../transcripts/system-block.js';
import { emptyInfo, transcriptWarning, type TranscriptInfo, type TranscriptWarning } from '../transcripts/types.js';
import type { FileEdit } from './codex-patch.js';
import {
  blockEvent,
  totalsOf,
  type CodexRolloutParserOptions,
  type CommandEnd,
  type OpenCall,
  type QueueEntry,
  type Totals,
} from './rollout-format.js';

/**
 * The reader's state and its output, under its record families (rollout-tool-calls.ts,
 * rollout-reader.ts): blocks go out in order, held behind a call that waits for its output;
 * usage is the growth of Codex's running total; a turn ends with its metadata.
 */
export abstract class RolloutOutput {
  readonly warnings: TranscriptWarning[] = [];
  readonly info: TranscriptInfo = emptyInfo();

  protected readonly queue: QueueEntry[] = [];
  protected readonly calls = new Map<string, OpenCall>();
  protected readonly commandEnds = new Map<string, CommandEnd>();
  protected readonly patches = new Map<string, { edits: FileEdit[]; failed?: boolean; output?: string }>();
  protected lastAt = 0;
  protected model: string | undefined;
  protected contextWindow: number | undefined;
  protected totals: Totals | undefined;
  protected turnOpen = false;
  /** The open turn has had its prompt. */
  protected prompted = false;
  /** The file marks turn starts (`task_started`): a prompt inside a turn (a steer) does not end it. */
  protected marksTurns = false;
  /** Calls already answered: a late end event of theirs changes nothing. */
  protected readonly answered = new Set<string>();
  protected unknownCount = 0;
  protected ended = false;
  protected usageSeen = false;
  protected costUnknown = false;
  protected legacy = false;

  constructor(protected readonly options: CodexRolloutParserOptions) {}

  // ---------------------------------------------------------------------------------------------
  // Usage and turns

  /** A running total's growth is a request's usage; `last` serves when the total went back (another thread's). */
  protected usage(total: JsonObject | undefined, last: JsonObject | undefined, at: number): void {
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

  protected closeTurn(at: number, metadata: TurnMetadata): void {
    this.releaseAll();
    if (!this.turnOpen) return;
    this.turnOpen = false;
    this.prompted = false;
    this.pushMetadata(
      { ...metadata, turnComplete: true, ...(this.model !== undefined ? { model: this.model } : {}) },
      at,
    );
  }

  protected noteModel(model: string): void {
    this.model = model;
    this.info.model = model;
  }

  // ---------------------------------------------------------------------------------------------
  // Output, in order

  protected push(block: ConversationBlock): void {
    if (this.queue.length === 0) this.emit(blockEvent(block));
    else this.queue.push({ event: blockEvent(block), waiting: false });
  }

  /**
   * Metadata is not held behind a call waiting for its output: it goes out after the blocks already
   * out, a place that stays the same while the file grows, so a re-import of a live file (which
   * finds usage by its place in the log) never counts it twice. Turn ends come after the turn's
   * blocks, released first.
   */
  protected pushMetadata(metadata: TurnMetadata, at: number): void {
    this.emit({ type: 'metadata_update', conversationId: MAIN_CONVERSATION, at, metadata });
  }

  /** Emits the queue's head up to the first call still waiting for its output. */
  protected release(): void {
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
  protected releaseAll(): void {
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

  protected emit(event: UnsequencedEvent): void {
    if (event.type === 'block_complete') {
      const block = event.block;
      this.info.blockCount++;
      if (block.type === 'user_message' || block.type === 'assistant_text') this.info.messageCount++;
    }
    this.options.emit(event);
  }

  protected unknown(record: JsonObject, line: number, at: number, content: string): void {
    this.unknownCount++;
    this.push(systemBlock(`L${line}`, 'unknown_record', content, at, { source: 'codex', record }));
  }

  protected time(value: unknown): number {
    const at = timeOf(value);
    if (at === undefined) return this.lastAt;
    this.info.startedAt ??= at;
    this.info.endedAt = at;
    this.lastAt = at;
    return at;
  }

  protected warn(code: string, message: string, line?: number): void {
    this.warnings.push(transcriptWarning(code, message, this.options.file, line));
  }
}
