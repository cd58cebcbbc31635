import { randomUUID } from 'node:crypto';
import type { UnsequencedEvent } from '../conversation/index.js';
import type { NativeToolHooks } from './agent-backend.js';

/**
 * `PreToolUse` and `PostToolUse` for a back end that runs its own tools before Parley hears of
 * them (the Gemini CLI, Codex): each call's hooks run once, as its `tool_use` completes and as its
 * `tool_result` arrives, in the stream's order. Such a call cannot be refused; a hook that asks to
 * is told so in a system block. Without hooks the stream passes through untouched.
 */
export async function* observeNativeTools(
  events: AsyncIterable<UnsequencedEvent>,
  hooks: NativeToolHooks | undefined,
  signal?: AbortSignal,
): AsyncGenerator<UnsequencedEvent> {
  if (!hooks) {
    yield* events;
    return;
  }
  const calls = new Map<string, { toolName: string; toolInput: unknown }>();
  const after = new Set<string>();
  for await (const event of events) {
    yield event;
    if (event.type !== 'block_complete') continue;
    const block = event.block;
    if (block.type === 'tool_use' && !calls.has(block.toolUseId)) {
      calls.set(block.toolUseId, { toolName: block.name, toolInput: block.input });
      const decision = await hooks.beforeTool(
        { toolName: block.name, toolInput: block.input, toolUseId: block.toolUseId },
        signal,
      );
      if (decision.block !== undefined)
        yield notice(
          event.conversationId,
          `A PreToolUse hook asked to refuse ${block.name} (${decision.block}), but this back end runs its own tools before Parley hears of them, so the call was not stopped.`,
        );
    } else if (block.type === 'tool_result' && !after.has(block.toolUseId)) {
      const call = calls.get(block.toolUseId);
      if (!call) continue;
      after.add(block.toolUseId);
      await hooks.afterTool(
        { ...call, toolUseId: block.toolUseId, response: { content: block.content, isError: block.isError } },
        signal,
      );
    }
  }
}

function notice(conversationId: string, content: string): UnsequencedEvent {
  const now = Date.now();
  return {
    type: 'block_complete',
    conversationId,
    at: now,
    block: { id: randomUUID(), type: 'system', subtype: 'info', content, createdAt: now, completedAt: now },
  };
}
