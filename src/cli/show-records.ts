import { MAIN_CONVERSATION, ParleyError, type StreamEvent } from '../conversation/index.js';
import { HiddenRecords, renderBlock } from './render.js';

/**
 * What `parley show` needs of a batch of a session's events, rendered: per shown block its
 * conversation, id, line and the subagent thread it names, and the metadata events (which fold
 * into the heading's metrics). A batch holds only the lines, not the blocks (a tool result's
 * megabytes, of which the line keeps 160 characters).
 */
export interface ShowBatch {
  conversations: string[];
  ids: string[];
  lines: string[];
  /** The subagent id a `subagent` block names, else ''. */
  subagents: string[];
  metadata: StreamEvent[];
}

const THREAD_INDENT = '    │ ';

/**
 * Turns events into `ShowBatch`es as `renderConversation` would render their blocks: native
 * records Parley keeps but does not show are counted (`hidden`), not rendered. It takes the
 * whole-block events a transcript parser emits (`block_complete`, `metadata_update`); a partial
 * event (`block_start`, `block_update`, `text_delta`) changes a block a show does not keep, so it
 * is refused: read such a session's conversation whole.
 */
export class ShowBatchMaker {
  readonly hidden = new HiddenRecords();
  private batch: ShowBatch = emptyBatch();

  add(event: StreamEvent): void {
    if (event.type === 'metadata_update') {
      this.batch.metadata.push(event);
      return;
    }
    if (event.type !== 'block_complete') {
      throw new ParleyError(
        'INTERNAL',
        `ConversationText takes whole blocks; a ${event.type} event (seq ${event.seq}) changes a block it does not keep. Render this session from its folded conversation (renderConversation).`,
      );
    }
    const block = event.block;
    if (this.hidden.takes(block)) return;
    const batch = this.batch;
    batch.conversations.push(event.conversationId);
    batch.ids.push(block.id);
    batch.lines.push(renderBlock(block, event.conversationId === MAIN_CONVERSATION ? '' : THREAD_INDENT));
    batch.subagents.push(block.type === 'subagent' ? block.subagentId : '');
  }

  /** The batch so far, and a new one begun; undefined when nothing came since the last. */
  take(): ShowBatch | undefined {
    const batch = this.batch;
    if (batch.ids.length === 0 && batch.metadata.length === 0) return undefined;
    this.batch = emptyBatch();
    return batch;
  }
}

function emptyBatch(): ShowBatch {
  return { conversations: [], ids: [], lines: [], subagents: [], metadata: [] };
}
