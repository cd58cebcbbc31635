import { MAIN_CONVERSATION, type StreamEvent, type UnsequencedEvent, type SystemBlock } from '../conversation/index.js';
import type { SessionManager } from '../sessions/index.js';
import { AgentTurnError } from './errors.js';
import type { InjectedMessage } from './events.js';

/**
 * What one agent turn produced, read from its stream as the events pass: the text the workflow
 * gets back and how the turn ended. This is the turn's result as the workflow sees it, apart from
 * the live back end that produced it.
 */
export class TurnOutput {
  private readonly texts: string[] = [];
  /** The first error block of the main conversation. */
  failure: SystemBlock | undefined;
  /** The back end reported the turn as aborted. */
  abortedBlock = false;
  /** The back end said the turn completed (other than by an abort). */
  endedNormally = false;
  /** The stream itself threw. */
  streamError: { error: unknown } | undefined;

  observe(event: StreamEvent): void {
    // Sub-agents' conversations are shown, not returned.
    if (event.conversationId !== MAIN_CONVERSATION) return;
    if (event.type === 'block_complete') {
      const block = event.block;
      if (block.type === 'assistant_text') this.texts.push(block.content);
      else if (block.type === 'system' && block.subtype === 'error') this.failure ??= block;
      else if (block.type === 'system' && block.subtype === 'aborted') this.abortedBlock = true;
    } else if (event.type === 'metadata_update' && event.metadata.turnComplete) {
      this.endedNormally = event.metadata.stopReason !== 'aborted';
    }
  }

  get text(): string {
    return this.texts.join('\n\n');
  }

  /** How the turn ended: cut by an abort, failed, or complete. */
  verdict(signal: AbortSignal): 'aborted' | 'error' | 'complete' {
    if (this.abortedBlock || (signal.aborted && !this.endedNormally && !this.failure)) return 'aborted';
    if (this.streamError || this.failure) return 'error';
    return 'complete';
  }

  /** The error a failed turn throws: the stream's own, or the back end's error block. */
  error(agent: string): unknown {
    if (this.streamError) return this.streamError.error;
    const failure = this.failure;
    const data =
      typeof failure?.data === 'object' && failure.data !== null ? (failure.data as Record<string, unknown>) : {};
    return new AgentTurnError(agent, failure?.content ?? 'The turn failed.', data);
  }
}

/**
 * A back end that stopped without saying so still gets its `system` block: the session shows the
 * turn was aborted. Returns the stored events (none when the manager is already closed).
 */
export async function noteAbortedTurn(
  manager: SessionManager,
  sessionId: string,
  agent: string,
  turn: number,
  reason: string | undefined,
): Promise<StreamEvent[]> {
  const now = Date.now();
  try {
    return await manager.appendEvents(sessionId, [
      {
        type: 'block_complete',
        conversationId: MAIN_CONVERSATION,
        block: {
          id: `${agent}-turn-${turn}-aborted`,
          type: 'system',
          subtype: 'aborted',
          content: reason ? `The turn was aborted: ${reason}` : 'The turn was aborted.',
          createdAt: now,
          completedAt: now,
        },
        at: now,
      },
    ]);
  } catch {
    // The manager may be closed while shutting down; the abort itself is already reported.
    return [];
  }
}

/** A stored event as the back end produced it, without the numbering the store gave it (a recording replays these). */
export function toUnsequenced(event: StreamEvent): UnsequencedEvent {
  const { sessionId: _sessionId, seq: _seq, ...unsequenced } = event;
  return unsequenced as UnsequencedEvent;
}

/** Messages that waited for this turn come first, marked as the user's, then the prompt. */
export function composePrompt(messages: readonly InjectedMessage[], prompt: string): string {
  if (messages.length === 0) return prompt;
  const lines = messages.map((message) => `- ${message.content}`);
  return `Messages from the user while you were working:\n${lines.join('\n')}\n\n${prompt}`;
}

export function repairPrompt(issues: string, jsonSchema: Record<string, unknown> | undefined): string {
  return [
    `Your previous answer did not match the required output format: ${issues}.`,
    'Reply again with only a JSON value that matches this JSON Schema, and nothing else:',
    JSON.stringify(jsonSchema ?? {}, null, 2),
  ].join('\n');
}
