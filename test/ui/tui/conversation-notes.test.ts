import { describe, expect, it } from 'vitest';
import type { ConversationBlock } from '../../../src/conversation/index.js';
import type { ProtocolClient } from '../../../src/protocol/index.js';
import { sayInConversation } from '../../../src/ui/tui/conversation-notes.js';

const thread = (subagentId: string, role: string, status: 'running' | 'success' = 'running'): ConversationBlock => ({
  id: `conversation-${subagentId}`,
  type: 'subagent',
  subagentId,
  name: `conversation with ${role}`,
  input: 'topic',
  status,
  createdAt: 1,
});

function recordingClient(fail?: Error): { client: ProtocolClient; sent: unknown[] } {
  const sent: unknown[] = [];
  const client = {
    request: (method: string, params: unknown) => {
      sent.push({ method, params });
      return fail ? Promise.reject(fail) : Promise.resolve({ conversationId: 'x', delivered: 'next_message' });
    },
  } as unknown as ProtocolClient;
  return { client, sent };
}

describe('/say', () => {
  const blocks = [thread('4f1c2a9e-1111', 'dev'), thread('77aa0000-2222', 'qa', 'success')];

  it('names a conversation by its open thread’s role, or by the start of its id, and sends the note', async () => {
    const { client, sent } = recordingClient();
    expect(await sayInConversation(client, blocks, 'dev keep it simple')).toEqual([
      { text: 'Noted in the conversation with dev: both agents read it with the next message.' },
    ]);
    await sayInConversation(client, blocks, '77aa stop here');
    expect(sent).toEqual([
      { method: 'say_in_conversation', params: { conversationId: '4f1c2a9e-1111', message: 'keep it simple' } },
      { method: 'say_in_conversation', params: { conversationId: '77aa0000-2222', message: 'stop here' } },
    ]);
  });

  it('says what is wrong, and sends nothing, for a missing message or an unknown conversation; shows the server’s refusal', async () => {
    const { client, sent } = recordingClient();
    expect((await sayInConversation(client, blocks, 'dev'))[0]).toMatchObject({
      tone: 'error',
      text: expect.stringContaining('Usage: /say'),
    });
    expect((await sayInConversation(client, blocks, 'qa hello'))[0]).toMatchObject({
      tone: 'error',
      text: expect.stringContaining('Open: 4f1c2a9e (dev)'),
    });
    expect(sent).toEqual([]);
    const refused = recordingClient(new Error('Conversation 4f1c2a9e-1111 is closed.'));
    expect((await sayInConversation(refused.client, blocks, 'dev hi'))[0]).toEqual({
      text: 'Conversation 4f1c2a9e-1111 is closed.',
      tone: 'error',
    });
  });
});
