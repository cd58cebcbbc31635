import type { ConversationBlock, SubagentBlock } from '../../conversation/index.js';
import type { ProtocolClient } from '../../protocol/index.js';
import type { NoteLine } from './view-state.js';

/**
 * `/say <conversation> <message>`: the user steps into a conversation between agents.
 * The conversation is named by its thread's id (or the start of it), or by the other agent's role
 * when one open conversation has it (`/say dev keep it simple`). The note shows in the thread at
 * once and reaches both agents with the next message.
 */
export async function sayInConversation(
  client: ProtocolClient,
  blocks: readonly ConversationBlock[],
  args: string,
): Promise<NoteLine[]> {
  const match = /^(\S+)\s+([\s\S]+)$/.exec(args.trim());
  if (!match)
    return [
      {
        text: 'Usage: /say <conversation or role> <message>. Conversations show as threads named "conversation with <role>".',
        tone: 'error',
      },
    ];
  const [, target, message] = match as unknown as [string, string, string];
  const conversations = blocks.filter(
    (block): block is SubagentBlock => block.type === 'subagent' && block.name.startsWith('conversation with '),
  );
  const open = conversations.filter((block) => block.status === 'running' || block.status === 'pending');
  const chosen =
    conversations.filter((block) => block.subagentId === target).at(0) ??
    single(conversations.filter((block) => block.subagentId.startsWith(target))) ??
    single(open.filter((block) => block.name === `conversation with ${target}`));
  if (!chosen) {
    const known = open
      .map((block) => `${block.subagentId.slice(0, 8)} (${block.name.replace('conversation with ', '')})`)
      .join(', ');
    return [
      {
        text: `No single conversation matches "${target}". ${known ? `Open: ${known}.` : 'No conversation between agents is open in this draft.'}`,
        tone: 'error',
      },
    ];
  }
  try {
    await client.request('say_in_conversation', { conversationId: chosen.subagentId, message });
    return [{ text: `Noted in the ${chosen.name}: both agents read it with the next message.` }];
  } catch (error) {
    return [{ text: error instanceof Error ? error.message : String(error), tone: 'error' }];
  }
}

function single<T>(found: T[]): T | undefined {
  return found.length === 1 ? found[0] : undefined;
}
