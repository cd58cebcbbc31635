import type { UnsequencedEvent, TurnMetadata, Usage } from '../../../conversation/index.js';
import { maxUsage, STOP_REASONS_ENDING_A_TURN } from './records.js';

/** One record's events, held in a thread's window until they are emitted. */
export interface RecordNode {
  position: number;
  uuid: string | undefined;
  events: UnsequencedEvent[];
  bytes: number;
  emitted: boolean;
}

/** The assistant records of one API message (`message.id:requestId`): their usage is counted once. */
export interface MessageGroup {
  key: string;
  messageId: string | undefined;
  usage: Usage | undefined;
  model: string | undefined;
  stopReason: string | undefined;
  costUsd: number | undefined;
  node: RecordNode;
  at: number;
}

/** How many records (and bytes of them) a thread holds back before it emits the oldest. */
export interface WindowLimits {
  records: number;
  bytes: number;
}

/** What a rewind took out of a thread's window. */
export interface AbandonedBranch {
  /** The abandoned records' block events, in order (they are not emitted). */
  blocks: Array<Extract<UnsequencedEvent, { type: 'block_complete' }>>;
  /** The abandoned records' usage and cost: those tokens were spent, so they are still emitted. */
  metadata: UnsequencedEvent[];
  records: number;
  /** The first record of the branch that had already left the window, if any. */
  emittedFrom: string | undefined;
}

/**
 * One conversation of a transcript (the main one, or an inline sidechain) with its window of
 * records not yet emitted, which a rewind can still take back.
 */
export class Thread {
  readonly window: RecordNode[] = [];
  head = 0;
  windowBytes = 0;
  nextPosition = 0;
  lastHumanPosition = -1;
  /** Position of every chain record (also the set of uuids seen, for dropping repeated records). */
  readonly positions = new Map<string, number>();
  /** uuid by position, to name the first already-emitted record of an abandoned branch. */
  readonly uuidAt: Array<string | undefined> = [];
  group: MessageGroup | undefined;
  /** An assistant message was read since the last human prompt and no stop reason has ended its turn yet. */
  turnOpen = false;
  /** The last chain record added: almost every record's parent, checked before the map. */
  lastUuid: string | undefined;

  constructor(
    readonly conversationId: string,
    readonly detectRewinds: boolean,
    private readonly limits: WindowLimits,
  ) {}

  get size(): number {
    return this.window.length - this.head;
  }

  firstWindowPosition(): number {
    return this.window[this.head]?.position ?? this.nextPosition;
  }

  /** Holds a record's events back; emits the oldest ones once the window is over its limits. */
  add(
    uuid: string | undefined,
    events: UnsequencedEvent[],
    bytes: number,
    emit: (event: UnsequencedEvent) => void,
  ): RecordNode {
    const node: RecordNode = { position: this.nextPosition++, uuid, events, bytes, emitted: false };
    if (uuid !== undefined) {
      this.positions.set(uuid, node.position);
      this.lastUuid = uuid;
      if (this.detectRewinds) this.uuidAt[node.position] = uuid;
    }
    this.window.push(node);
    this.windowBytes += bytes;
    if (this.size > this.limits.records || this.windowBytes > this.limits.bytes) this.flush(false, emit);
    return node;
  }

  /** Emits the held records: all of them, or the oldest until the window is within its limits. */
  flush(all: boolean, emit: (event: UnsequencedEvent) => void): void {
    while (this.size > 0 && (all || this.size > this.limits.records || this.windowBytes > this.limits.bytes)) {
      const node = this.window[this.head]!;
      this.window[this.head] = undefined as unknown as RecordNode;
      this.head++;
      this.windowBytes -= node.bytes;
      node.emitted = true;
      for (const event of node.events) emit(event);
      // Drop references to the node's content (pending tools may still point at the node).
      node.events = [];
    }
    if (this.head > 1024 && this.head * 2 > this.window.length) {
      this.window.splice(0, this.head);
      this.head = 0;
    }
  }

  /**
   * An assistant record joins the API message being read (`group`, same key), or starts it: the
   * message's usage and cost are the largest its records report, its stop reason and model the last.
   */
  joinGroup(part: MessageGroup): void {
    const group = this.group;
    if (group === undefined) {
      this.group = part;
      return;
    }
    group.node = part.node;
    group.usage = maxUsage(group.usage, part.usage);
    if (part.stopReason !== undefined) group.stopReason = part.stopReason;
    if (part.model !== undefined) group.model = part.model;
    if (part.costUsd !== undefined) group.costUsd = Math.max(group.costUsd ?? 0, part.costUsd);
  }

  /** Takes every held record after `forkPosition` out of the window (the user rewound to it). */
  cutAfter(forkPosition: number): AbandonedBranch {
    const blocks: AbandonedBranch['blocks'] = [];
    const kept: RecordNode[] = [];
    const metadata: UnsequencedEvent[] = [];
    let records = 0;
    for (let index = this.head; index < this.window.length; index++) {
      const node = this.window[index]!;
      if (node.position <= forkPosition || node.uuid === undefined) {
        kept.push(node);
        continue;
      }
      records++;
      this.windowBytes -= node.bytes;
      this.positions.delete(node.uuid);
      for (const event of node.events) {
        if (event.type === 'metadata_update') metadata.push(event);
        else if (event.type === 'block_complete') blocks.push(event);
      }
    }
    let emittedFrom: string | undefined;
    for (let position = forkPosition + 1; position < this.firstWindowPosition(); position++) {
      emittedFrom = this.uuidAt[position];
      if (emittedFrom !== undefined) break;
    }
    this.window.length = 0;
    this.window.push(...kept);
    this.head = 0;
    return { blocks, metadata, records, emittedFrom };
  }
}

/** The metadata a finished API message contributes (usage, model, stop reason, cost); empty when it has none. */
export function groupMetadata(group: MessageGroup, endsTurns: boolean): TurnMetadata {
  const metadata: TurnMetadata = {};
  if (group.usage !== undefined) metadata.usage = group.usage;
  if (group.model !== undefined) metadata.model = group.model;
  if (group.stopReason !== undefined) metadata.stopReason = group.stopReason;
  if (group.costUsd !== undefined) metadata.costUsd = group.costUsd;
  if (endsTurns && group.stopReason !== undefined && STOP_REASONS_ENDING_A_TURN.has(group.stopReason))
    metadata.turnComplete = true;
  return metadata;
}
