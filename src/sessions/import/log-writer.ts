import { createHash } from 'node:crypto';
import {
  applyEvents,
  emptyConversation,
  type ConversationBlock,
  type ConversationState,
  type SessionMetrics,
  type StreamEvent,
  type UnsequencedEvent,
  type TurnMetadata,
} from '../../conversation/index.js';
import type { SessionStore } from '../../store/index.js';

/** Events per append and the input bytes after which a batch is written even if smaller. */
const BATCH_EVENTS = 2048;
const BATCH_INPUT_BYTES = 1024 * 1024;

/**
 * Appends an import's events to a session's log in large batches (one durable write each), at
 * most one batch in flight, and folds the metadata into the session's metrics as it goes — without
 * keeping the blocks, so importing a transcript of any size needs memory for one batch.
 *
 * On a re-import (`known` given) a block already in the log unchanged is not appended again, and
 * neither is metadata the log holds at the same place (after the same block, see `MetadataPlaces`):
 * only new or changed blocks, and usage not yet counted, reach the log.
 */
export class LogWriter {
  /** Blocks appended (new or changed) and left out (already in the log). */
  appendedBlocks = 0;
  unchangedBlocks = 0;
  appendedEvents = 0;
  /** `seq` of appended blocks whose id is watched (compaction summaries, for their checkpoint). */
  readonly watchedSeqs = new Map<string, number>();

  private batch: UnsequencedEvent[] = [];
  private inputBytesAtLastFlush = 0;
  private inFlight: Promise<void> | undefined;
  private failure: unknown;
  private metricsState: ConversationState;
  private readonly places = new MetadataPlaces();
  /** Turn ends the log holds at places the new parse passed without one (a turn the file's end closed). */
  private readonly turnEndsLeftBehind = new Map<string, number>();
  /** The estimated cost the log holds at a place the new parse passed (the old end of a file that grew). */
  private estimateLeftBehind = 0;

  constructor(
    private readonly store: SessionStore,
    private readonly sessionId: string,
    private readonly options: {
      /** Block key → hash of the blocks already in the log, and the places of its metadata (a re-import). */
      known?: Map<string, string>;
      /** Metrics of what is already in the log (a re-import). */
      metrics?: SessionMetrics;
      /** Block ids whose `seq` the caller needs. */
      watch?: (block: ConversationBlock) => boolean;
      /** Larger batches than the import's (fewer fsyncs, more memory): a build that holds the whole session anyway. */
      batch?: { events: number; inputBytes: number };
      /** Receives each batch once it is durable. */
      onWritten?: (events: readonly StreamEvent[]) => void;
    } = {},
  ) {
    const state = emptyConversation(sessionId);
    this.metricsState = options.metrics !== undefined ? { ...state, metrics: { ...options.metrics } } : state;
  }

  get metrics(): SessionMetrics {
    return this.metricsState.metrics;
  }

  /** Takes one event from a parser; nothing is written until `maybeFlush` or `close`. */
  readonly add = (parsed: UnsequencedEvent): void => {
    let event = parsed;
    const known = this.options.known;
    if (known !== undefined) {
      if (event.type === 'block_complete') {
        const key = blockKey(event.conversationId, event.block.id);
        this.noteLeftBehind(event.conversationId, known);
        this.places.afterBlock(event.conversationId, event.block.id);
        const hash = blockHash(event.block);
        if (known.get(key) === hash) {
          this.unchangedBlocks++;
          return;
        }
        known.set(key, hash);
      } else if (event.type === 'metadata_update') {
        // Usage is counted once: metadata the log already holds at this place (after the same block) is not appended again.
        const key = this.places.nextMetadataKey(event.conversationId);
        if (known.has(key)) return;
        known.set(key, metadataValue(event.metadata));
        if (
          event.metadata.costEstimated === true &&
          event.metadata.costUsd !== undefined &&
          this.estimateLeftBehind > 0
        ) {
          // The log holds the estimate of the file as it was: only what the grown file adds is appended.
          const costUsd = Math.max(0, event.metadata.costUsd - this.estimateLeftBehind);
          this.estimateLeftBehind = 0;
          event = { ...event, metadata: { ...event.metadata, costUsd } };
        }
        const credit = this.turnEndsLeftBehind.get(event.conversationId) ?? 0;
        if (event.metadata.turnComplete === true && credit > 0) {
          // The log counted this turn where the file ended; the grown file ends it at its next prompt.
          this.turnEndsLeftBehind.set(event.conversationId, credit - 1);
          const { turnComplete: _turnComplete, ...rest } = event.metadata;
          if (Object.keys(rest).length === 0) return;
          event = { ...event, metadata: rest };
        }
      }
    }
    if (event.type === 'block_complete') this.appendedBlocks++;
    this.batch.push(event);
  };

  /** The log's metadata after the current block that the new parse did not produce: its turn ends are owed. */
  private noteLeftBehind(conversationId: string, known: Map<string, string>): void {
    for (let key = this.places.peekMetadataKey(conversationId); known.has(key);) {
      const value = known.get(key);
      if (value === TURN_END) {
        this.turnEndsLeftBehind.set(conversationId, (this.turnEndsLeftBehind.get(conversationId) ?? 0) + 1);
      } else if (value?.startsWith(ESTIMATE) === true) {
        this.estimateLeftBehind += Number(value.slice(ESTIMATE.length));
      }
      this.places.nextMetadataKey(conversationId);
      key = this.places.peekMetadataKey(conversationId);
    }
  }

  /** Writes the batch when it is large enough. `inputBytes`: bytes of native transcript read so far. */
  async maybeFlush(inputBytes: number): Promise<void> {
    const limits = this.options.batch ?? { events: BATCH_EVENTS, inputBytes: BATCH_INPUT_BYTES };
    if (
      this.batch.length >= limits.events ||
      (this.batch.length > 0 && inputBytes - this.inputBytesAtLastFlush >= limits.inputBytes)
    ) {
      this.inputBytesAtLastFlush = inputBytes;
      await this.flush();
    }
  }

  /** Starts writing the current batch; waits for the previous one first, so at most one is in flight. */
  async flush(): Promise<void> {
    if (this.inFlight !== undefined) await this.inFlight;
    this.throwIfFailed();
    if (this.batch.length === 0) return;
    const batch = this.batch;
    this.batch = [];
    this.inFlight = this.store.append(this.sessionId, batch).then(
      (events) => this.written(events),
      (error: unknown) => {
        this.failure = error;
      },
    );
  }

  /** Writes what is left and waits until every batch is durable. */
  async close(): Promise<void> {
    await this.flush();
    if (this.inFlight !== undefined) await this.inFlight;
    this.inFlight = undefined;
    this.throwIfFailed();
  }

  private written(events: StreamEvent[]): void {
    this.appendedEvents += events.length;
    this.options.onWritten?.(events);
    const metadata: StreamEvent[] = [];
    for (const event of events) {
      if (event.type === 'metadata_update') metadata.push(event);
      else if (event.type === 'block_complete' && this.options.watch?.(event.block))
        this.watchedSeqs.set(event.block.id, event.seq);
    }
    // Only metadata is folded: the metrics, never the blocks, stay in memory.
    if (metadata.length > 0) this.metricsState = applyEvents(this.metricsState, metadata);
  }

  private throwIfFailed(): void {
    if (this.failure !== undefined) {
      const failure = this.failure;
      this.failure = undefined;
      throw failure;
    }
  }
}

/**
 * Where a metadata event sits: after which block of its conversation, and how many metadata events
 * came between that block and it. A re-import parses the same records into the same order, so this
 * names the same metadata in the log and in the new parse.
 */
class MetadataPlaces {
  private readonly places = new Map<string, { blockId: string; index: number }>();

  afterBlock(conversationId: string, blockId: string): void {
    this.places.set(conversationId, { blockId, index: 0 });
  }

  peekMetadataKey(conversationId: string): string {
    const place = this.places.get(conversationId) ?? { blockId: '', index: 0 };
    return `${blockKey(conversationId, place.blockId)}\u0000#${place.index}`;
  }

  nextMetadataKey(conversationId: string): string {
    let place = this.places.get(conversationId);
    if (place === undefined) {
      place = { blockId: '', index: 0 };
      this.places.set(conversationId, place);
    }
    return `${blockKey(conversationId, place.blockId)}\u0000#${place.index++}`;
  }
}

/** What `known` holds for a metadata event: whether it ended a turn or estimated a cost (a re-import owes these when they moved). */
const TURN_END = 'turn';

const ESTIMATE = 'estimate:';

function metadataValue(metadata: TurnMetadata): string {
  if (metadata.costEstimated === true && metadata.costUsd !== undefined) return `${ESTIMATE}${metadata.costUsd}`;
  return metadata.turnComplete === true ? TURN_END : '';
}

export function blockKey(conversationId: string, blockId: string): string {
  return `${conversationId}\u0000${blockId}`;
}

export function blockHash(block: ConversationBlock): string {
  const { seq: _seq, ...rest } = block;
  return createHash('sha1').update(JSON.stringify(rest)).digest('base64');
}

/** What a session's log already holds: its blocks' hashes, its metrics, and where its compaction blocks are (for a re-import). */
export async function indexLog(
  store: SessionStore,
  sessionId: string,
): Promise<{ known: Map<string, string>; metrics: SessionMetrics; compactionSeqs: Map<string, number> }> {
  const known = new Map<string, string>();
  const compactionSeqs = new Map<string, number>();
  const metadata: StreamEvent[] = [];
  const places = new MetadataPlaces();
  for await (const event of store.readLog(sessionId)) {
    if (event.type === 'block_complete') {
      places.afterBlock(event.conversationId, event.block.id);
      known.set(blockKey(event.conversationId, event.block.id), blockHash(event.block));
      if (event.block.type === 'system' && event.block.subtype === 'compaction')
        compactionSeqs.set(event.block.id, event.seq);
    } else if (event.type === 'metadata_update') {
      known.set(places.nextMetadataKey(event.conversationId), metadataValue(event.metadata));
      metadata.push(event);
    }
  }
  const state = applyEvents(emptyConversation(sessionId), metadata);
  return { known, metrics: state.metrics, compactionSeqs };
}
