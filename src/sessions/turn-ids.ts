import type { ConversationBlock, ConversationState, UnsequencedEvent } from '../conversation/index.js';

/**
 * Keeps block and thread ids unique within a session. Back ends number their ids per process
 * (the scripted back end counts from 1, a CLI restarts its counters), so a later turn may reuse an
 * id an earlier turn already used; the reducer would then fold the new block into the old one.
 * A reused id is renamed for the rest of the turn, consistently in every event that names it.
 */
export class TurnIdGuard {
  private readonly taken = new Set<string>();
  private readonly renamed = new Map<string, string>();
  private readonly ownedThisTurn = new Set<string>();

  constructor(
    conversation: ConversationState,
    private readonly suffix: string,
  ) {
    for (const block of conversation.blocks) this.taken.add(block.id);
    for (const thread of conversation.subagents) {
      this.taken.add(thread.id);
      for (const block of thread.blocks) this.taken.add(block.id);
    }
  }

  apply(event: UnsequencedEvent): UnsequencedEvent {
    const conversationId = this.name(
      event.conversationId,
      event.conversationId !== 'main' && !this.ownedThisTurn.has(event.conversationId),
    );
    switch (event.type) {
      case 'block_start':
      case 'block_complete':
        return { ...event, conversationId, block: this.block(event.block) };
      case 'text_delta':
      case 'block_update':
        return { ...event, conversationId, blockId: this.renamed.get(event.blockId) ?? event.blockId };
      case 'metadata_update':
        return { ...event, conversationId };
    }
  }

  private block(block: ConversationBlock): ConversationBlock {
    const id = this.name(block.id, !this.ownedThisTurn.has(block.id));
    if (block.type === 'subagent') {
      const subagentId = this.name(block.subagentId, !this.ownedThisTurn.has(block.subagentId));
      return { ...block, id, subagentId };
    }
    return id === block.id ? block : { ...block, id };
  }

  /** The id to use: renamed when an earlier turn owns it; claims it for this turn on first sight. */
  private name(id: string, firstSight: boolean): string {
    const existing = this.renamed.get(id);
    if (existing) return existing;
    if (id === 'main') return id;
    if (firstSight && this.taken.has(id)) {
      let candidate = `${id}~${this.suffix}`;
      for (let attempt = 2; this.taken.has(candidate); attempt++) candidate = `${id}~${this.suffix}-${attempt}`;
      this.renamed.set(id, candidate);
      this.taken.add(candidate);
      this.ownedThisTurn.add(id);
      return candidate;
    }
    this.taken.add(id);
    this.ownedThisTurn.add(id);
    return id;
  }
}
