import type { ConversationBlock, StreamEvent, TurnMetadata } from '../../../src/conversation/index.js';
import type { SessionInfo } from '../../../src/protocol/index.js';

/** Builds a session's event log the way the server numbers it: one `seq` per event, in order. */
export class LogBuilder {
  readonly events: StreamEvent[] = [];
  private seq = 0;

  constructor(
    readonly sessionId = 'session-1',
    private at = 1_700_000_000_000,
  ) {}

  private envelope(conversationId: string, at?: number) {
    this.at = at ?? this.at + 1_000;
    return { sessionId: this.sessionId, conversationId, seq: this.seq++, at: this.at };
  }

  start(block: ConversationBlock, conversationId = 'main'): this {
    this.events.push({ ...this.envelope(conversationId), type: 'block_start', block });
    return this;
  }

  delta(blockId: string, delta: string, conversationId = 'main'): this {
    this.events.push({ ...this.envelope(conversationId), type: 'text_delta', blockId, delta });
    return this;
  }

  update(blockId: string, updates: Record<string, unknown>, conversationId = 'main'): this {
    this.events.push({ ...this.envelope(conversationId), type: 'block_update', blockId, updates });
    return this;
  }

  complete(block: ConversationBlock, conversationId = 'main'): this {
    this.events.push({ ...this.envelope(conversationId), type: 'block_complete', block });
    return this;
  }

  metadata(metadata: TurnMetadata, options: { conversationId?: string; at?: number } = {}): this {
    this.events.push({
      ...this.envelope(options.conversationId ?? 'main', options.at),
      type: 'metadata_update',
      metadata,
    });
    return this;
  }

  /** A whole user→agent turn: the message, a streamed answer, its cost. */
  turn(prompt: string, answer: string, costUsd: number): this {
    const n = this.seq;
    this.complete({ type: 'user_message', id: `user-${n}`, content: prompt, createdAt: this.at });
    const id = `text-${n}`;
    this.start({ type: 'assistant_text', id, content: '', createdAt: this.at });
    for (const word of answer.split(/(?<= )/)) this.delta(id, word);
    this.complete({ type: 'assistant_text', id, content: answer, createdAt: this.at });
    return this.metadata({
      costUsd,
      turnComplete: true,
      usage: { inputTokens: 1_000, outputTokens: 100, cacheReadTokens: 0, cacheWriteTokens: 0 },
      contextWindow: 200_000,
    });
  }
}

/** A session record as `list_sessions` returns it. */
export function sessionInfo(overrides: Partial<SessionInfo> & Pick<SessionInfo, 'sessionId' | 'scope'>): SessionInfo {
  return {
    type: 'scripted',
    agentProfileReference: 'dev',
    agentType: 'dev',
    status: 'active',
    createdAt: 1_000,
    updatedAt: 2_000,
    settings: {},
    stats: { totalMessages: 0, totalTokens: 0, totalCompactions: 0 },
    ...overrides,
  };
}
