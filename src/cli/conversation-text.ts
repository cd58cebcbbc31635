import {
  applyEvents,
  emptyConversation,
  MAIN_CONVERSATION,
  ParleyError,
  type ConversationBlock,
  type ConversationState,
  type SessionMetrics,
  type StreamEvent,
} from '../conversation/index.js';
import { HiddenRecords, renderBlock, type RenderOptions } from './render.js';

/** A thread's blocks as rendered lines, in the reducer's order (first arrival), with each block's place by id. */
interface RenderedList {
  lines: string[];
  places: Map<string, number>;
  /** The subagent ids of the list's `subagent` blocks, by place (main's are expanded with their threads). */
  subagentAt: Map<number, string>;
}

const THREAD_INDENT = '    │ ';

/**
 * `renderConversation` of the conversation the reducer would build from these events, built as they
 * arrive without keeping the blocks: each block is rendered when it comes, and again when a later
 * event replaces it (a tool call's final status), so only the text is held — a tool result's
 * megabytes are not. `parley show` of an imported session whose blocks are not built yet renders
 * the parser's events through it.
 *
 * It takes the whole-block events a transcript parser emits (`block_complete`, `metadata_update`),
 * with the reducer's rules: a block replaces the one with its id in place, else it is appended;
 * blocks of another conversation go to that subagent thread, created when first addressed, as is the
 * thread a `subagent` block names. A partial event (`block_start`, `block_update`, `text_delta`)
 * changes a block this does not keep, so it is refused: read such a session's conversation whole.
 */
export class ConversationText {
  private readonly main: RenderedList = emptyList();
  /** Subagent threads in the reducer's order: when each was first addressed. */
  private readonly threads = new Map<string, RenderedList>();
  private state: ConversationState;
  private readonly metadata: StreamEvent[] = [];
  private readonly hidden = new HiddenRecords();

  constructor(
    sessionId: string,
    private readonly options: RenderOptions = {},
  ) {
    this.state = emptyConversation(sessionId);
  }

  /** Takes the next events, in `seq` order. */
  add(events: readonly StreamEvent[]): void {
    for (const event of events) {
      if (event.type === 'metadata_update') {
        this.metadata.push(event);
        continue;
      }
      if (event.type !== 'block_complete') {
        throw new ParleyError(
          'INTERNAL',
          `ConversationText takes whole blocks; a ${event.type} event (seq ${event.seq}) changes a block it does not keep. Render this session from its folded conversation (renderConversation).`,
        );
      }
      const block = event.block;
      const conversationId = event.conversationId;
      if (this.hidden.takes(block)) continue;
      if (conversationId === MAIN_CONVERSATION) this.place(this.main, block, '');
      else this.place(this.thread(conversationId), block, THREAD_INDENT);
      if (block.type === 'subagent') this.thread(block.subagentId);
    }
    // Only metadata changes the metrics: folded as the reducer folds it, in order.
    if (this.metadata.length > 0) {
      this.state = applyEvents(this.state, this.metadata);
      this.metadata.length = 0;
    }
  }

  /** The session's metrics so far, as the reducer's `ConversationState.metrics`. */
  get metrics(): SessionMetrics {
    return this.state.metrics;
  }

  /** What `renderConversation(blocks, subagents)` prints for the conversation so far. */
  text(): string {
    const out: string[] = [];
    const shown = new Set<string>();
    this.main.lines.forEach((line, place) => {
      out.push(line);
      const subagentId = this.main.subagentAt.get(place);
      if (subagentId === undefined) return;
      shown.add(subagentId);
      for (const inner of this.threads.get(subagentId)?.lines ?? []) out.push(inner);
    });
    for (const [id, thread] of this.threads) {
      if (shown.has(id)) continue;
      out.push(`[thread ${id}]`);
      for (const inner of thread.lines) out.push(inner);
    }
    const summary = this.options.verbose === true ? this.hidden.summary() : undefined;
    if (summary !== undefined) out.push(summary);
    return out.join('\n');
  }

  private place(list: RenderedList, block: ConversationBlock, indent: string): void {
    const line = renderBlock(block, indent);
    let place = list.places.get(block.id);
    if (place === undefined) {
      place = list.lines.length;
      list.places.set(block.id, place);
      list.lines.push(line);
    } else {
      list.lines[place] = line;
      // The block that was here may have named a thread; this one names its own, or none.
      list.subagentAt.delete(place);
    }
    if (block.type === 'subagent') list.subagentAt.set(place, block.subagentId);
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
  return { lines: [], places: new Map(), subagentAt: new Map() };
}
