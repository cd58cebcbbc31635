import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';

/**
 * The seeds' chat persistence (seed 002, `addMessage` → `loadChatSession` / `saveChatSession`),
 * kept as the benchmark baseline: every message reads the whole `chat_{sessionId}.json`, parses it,
 * pushes one message and writes the whole file back. The seed's `fs.writeFile` has no fsync; one is
 * added here so that it is as durable as the stores it is compared with.
 */

export interface ChatMessage {
  id: string;
  timestamp: string;
  role: 'user' | 'assistant';
  content: string;
  tokens?: number;
}

export interface ChatSession {
  sessionId: string;
  messages: ChatMessage[];
  metadata: { createdAt: string; updatedAt: string; messageCount: number; tokenCount: number };
}

export function emptyChat(sessionId: string): ChatSession {
  const now = new Date().toISOString();
  return { sessionId, messages: [], metadata: { createdAt: now, updatedAt: now, messageCount: 0, tokenCount: 0 } };
}

export function chatMessage(role: ChatMessage['role'], content: string): ChatMessage {
  return {
    id: randomUUID(),
    timestamp: new Date().toISOString(),
    role,
    content,
    tokens: Math.ceil(content.length / 4),
  };
}

export async function saveChatSession(path: string, chat: ChatSession): Promise<void> {
  const handle = await fs.open(path, 'w');
  try {
    await handle.writeFile(JSON.stringify(chat, null, 2));
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Seed 002's `addMessage` without the compaction check. */
export async function addMessage(path: string, message: ChatMessage): Promise<void> {
  const chat = JSON.parse(await fs.readFile(path, 'utf-8')) as ChatSession;
  chat.messages.push(message);
  chat.metadata.messageCount += 1;
  chat.metadata.tokenCount += message.tokens ?? 0;
  chat.metadata.updatedAt = new Date().toISOString();
  await saveChatSession(path, chat);
}
