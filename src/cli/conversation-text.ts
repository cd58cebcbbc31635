import {
  applyEvents,
  emptyConversation,
  MAIN_CONVERSATION,
  type ConversationState,
  type SessionMetrics,
  type StreamEvent,
} from '../conversation/index.js';
import type { RenderOptions } from './render.js';
import { ShowBatchMaker, type ShowBatch } from './show-records.js';
import { SpillText } from './spill-text.js';

/** A thread's rendered lines, in the reducer's order (first arrival): each line's place in the text store, each block's place by id. */
interface RenderedList {
  places: Map<string, number>;
  offsets: number[];
  lengths: number[];
  /** The subagent ids of the list's `subagent` blocks, by place (main's are expanded with their threads). */
  subagentAt: Map<number, string>;
}

/** Bytes per chunk handed to the writer. */
const OUTPUT_CHUNK_BYTES = 1024 * 1024;
const NEWLINE = 0x0a;

/**
 * `renderConversation` of the conversation the reducer would build from these events, built as
 * they arrive without keeping the blocks, nor the text in memory: each block's line is appended to
 * a `SpillText` (memory, then a temporary file) when it comes, and again when a later event
 * replaces the block (a tool call's final status), and the list keeps only where each line is. So
 * a session of any size holds its block ids and a few numbers per line. `parley show` of an
 * imported session whose blocks are not built yet renders the parser's events through it.
 *
 * With the reducer's rules: a block replaces the one with its id in place, else it is appended;
 * blocks of another conversation go to that subagent thread, created when first addressed, as is
 * the thread a `subagent` block names.
 */
export class ConversationText {
  private readonly main: RenderedList = emptyList();
  /** Subagent threads in the reducer's order: when each was first addressed. */
  private readonly threads = new Map<string, RenderedList>();
  private state: ConversationState;
  private readonly maker = new ShowBatchMaker();
  private readonly store: SpillText;

  constructor(
    sessionId: string,
    private readonly options: RenderOptions & { memoryBytes?: number } = {},
  ) {
    this.state = emptyConversation(sessionId);
    this.store = new SpillText(options.memoryBytes);
  }

  /** Takes the next events, in `seq` order. */
  add(events: readonly StreamEvent[]): void {
    for (const event of events) this.maker.add(event);
    const batch = this.maker.take();
    if (batch !== undefined) this.addBatch(batch);
  }

  private addBatch(batch: ShowBatch): void {
    const { conversations, ids, lines, subagents } = batch;
    for (let index = 0; index < ids.length; index++) {
      const conversationId = conversations[index]!;
      const list = conversationId === MAIN_CONVERSATION ? this.main : this.thread(conversationId);
      this.place(list, ids[index]!, lines[index]!, subagents[index]!);
      if (subagents[index] !== '') this.thread(subagents[index]!);
    }
    // Only metadata changes the metrics: folded as the reducer folds it, in order.
    if (batch.metadata.length > 0) this.state = applyEvents(this.state, batch.metadata);
  }

  /** The session's metrics so far, as the reducer's `ConversationState.metrics`. */
  get metrics(): SessionMetrics {
    return this.state.metrics;
  }

  /**
   * What `renderConversation(blocks, subagents)` prints for the conversation so far, as UTF-8
   * chunks of about a megabyte (each a new buffer, so a writer may keep it).
   */
  *chunks(): Generator<Buffer> {
    let out = Buffer.allocUnsafe(OUTPUT_CHUNK_BYTES);
    let used = 0;
    let first = true;
    const store = this.store;
    // Lines joined by newlines, as `Array.join('\n')`.
    function* line(offset: number, length: number): Generator<Buffer> {
      const needed = length + (first ? 0 : 1);
      if (used + needed > out.length) {
        if (used > 0) yield out.subarray(0, used);
        out = Buffer.allocUnsafe(Math.max(OUTPUT_CHUNK_BYTES, needed));
        used = 0;
      }
      if (!first) out[used++] = NEWLINE;
      first = false;
      store.copy(offset, length, out, used);
      used += length;
    }
    const text = (value: string): Generator<Buffer> => {
      const { offset, length } = store.append(value);
      return line(offset, length);
    };
    const shown = new Set<string>();
    const main = this.main;
    for (let place = 0; place < main.offsets.length; place++) {
      yield* line(main.offsets[place]!, main.lengths[place]!);
      const subagentId = main.subagentAt.get(place);
      if (subagentId === undefined) continue;
      shown.add(subagentId);
      const thread = this.threads.get(subagentId);
      if (thread !== undefined)
        for (let inner = 0; inner < thread.offsets.length; inner++)
          yield* line(thread.offsets[inner]!, thread.lengths[inner]!);
    }
    for (const [id, thread] of this.threads) {
      if (shown.has(id)) continue;
      yield* text(`[thread ${id}]`);
      for (let inner = 0; inner < thread.offsets.length; inner++)
        yield* line(thread.offsets[inner]!, thread.lengths[inner]!);
    }
    const summary = this.options.verbose === true ? this.maker.hidden.summary() : undefined;
    if (summary !== undefined) yield* text(summary);
    if (used > 0) yield out.subarray(0, used);
  }

  /** `chunks()` as one string (for a caller that wants the text whole). */
  text(): string {
    return Buffer.concat([...this.chunks()]).toString('utf8');
  }

  /** Removes the temporary file, if the lines went to one. */
  close(): void {
    this.store.close();
  }

  private place(list: RenderedList, id: string, line: string, subagentId: string): void {
    const { offset, length } = this.store.append(line);
    let place = list.places.get(id);
    if (place === undefined) {
      place = list.offsets.length;
      list.places.set(id, place);
      list.offsets.push(offset);
      list.lengths.push(length);
    } else {
      list.offsets[place] = offset;
      list.lengths[place] = length;
      // The block that was here may have named a thread; this one names its own, or none.
      list.subagentAt.delete(place);
    }
    if (subagentId !== '') list.subagentAt.set(place, subagentId);
  }

  private thread(id: string): RenderedList {
    let thread = this.threads.get(id);
    if (thread === undefined) {
      thread = emptyList();
      this.threads.set(id, thread);
    }
    return thread;
  }
}

function emptyList(): RenderedList {
  return { places: new Map(), offsets: [], lengths: [], subagentAt: new Map() };
}
