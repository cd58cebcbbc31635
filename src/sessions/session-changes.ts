import { randomUUID } from 'node:crypto';
import {
  describeIssues,
  estimateTokens,
  loadTokenizer,
  MAIN_CONVERSATION,
  NewMessageSchema,
  type ConversationBlock,
  type NewMessage,
  type UnsequencedEvent,
} from '../conversation/index.js';
import {
  SessionSettingsSchema,
  type NativeSessionRef,
  type SessionRecord,
  type SessionSettings,
} from '../store/index.js';
import { SessionError } from './errors.js';

/**
 * What SessionManager's own changes to a session write: the changes to its record (applied through
 * the session's write queue, so each sees the record as the writes before it left it) and the
 * blocks it appends itself. Input is checked here, before anything is written.
 */

export type RecordChange = (current: SessionRecord) => SessionRecord;

/** New per-session settings, merged over the current ones. */
export function settingsChange(settings: SessionSettings): RecordChange {
  const parsed = SessionSettingsSchema.safeParse(settings);
  if (!parsed.success) {
    throw new SessionError('INVALID_INPUT', `updateSettings: ${describeIssues(parsed.error.issues)}.`, {
      fault: 'user',
    });
  }
  return (current) => ({ ...current, settings: { ...current.settings, ...parsed.data } });
}

/** An imported session continued on a managed back end: writable, no longer tied to its native transcript. */
export function continuationChange(backend: string, clock: () => number): RecordChange {
  return (current) => {
    if (current.scope.kind !== 'imported') {
      throw new SessionError(
        'INVALID_INPUT',
        `Session "${current.sessionId}" was not imported; continue it as it is.`,
        { fault: 'user' },
      );
    }
    const { readOnly: _readOnly, native: _native, ...rest } = current;
    return { ...rest, type: backend, updatedAt: clock() };
  };
}

/** The session runs on `backend` from now on, natively linked to `native` or managed; an imported session becomes writable. */
export function backendChange(
  backend: string,
  native: NativeSessionRef | undefined,
  clock: () => number,
): RecordChange {
  return (current) => {
    const { readOnly: _readOnly, native: _native, ...rest } = current;
    return { ...rest, type: backend, ...(native ? { native } : {}), updatedAt: clock() };
  };
}

/** What a session is called and which role it runs as (a draft-scoped session's role too); blank names are refused. */
export function labelChange(labels: { title?: string; role?: string }, clock: () => number): RecordChange {
  for (const [field, value] of Object.entries(labels)) {
    if (typeof value !== 'string' || value.trim().length === 0)
      throw new SessionError('INVALID_INPUT', `relabelSession: ${field} must be a non-empty string.`, {
        fault: 'user',
      });
  }
  return (current) => {
    const { title, role } = labels;
    const scope = role !== undefined && current.scope.kind === 'draft' ? { ...current.scope, role } : current.scope;
    return {
      ...current,
      ...(title !== undefined ? { title } : {}),
      ...(role !== undefined ? { agentType: role } : {}),
      scope,
      updatedAt: clock(),
    };
  };
}

/** A caller's message as a block, stamped now; `countTokens` gives the count stored with it. */
export async function messageBlock(
  message: NewMessage,
  countTokens: (text: string) => number,
  clock: () => number,
): Promise<ConversationBlock> {
  const parsed = NewMessageSchema.safeParse(message);
  if (!parsed.success) {
    throw new SessionError('INVALID_INPUT', `addMessage: ${describeIssues(parsed.error.issues)}.`, { fault: 'user' });
  }
  const input = parsed.data;
  const now = clock();
  // Stored counts are exact (BPE) from the first message; characters / 4 only if the tokenizer cannot load.
  if (countTokens === estimateTokens) await loadTokenizer();
  const metadata = { ...input.metadata, tokens: countTokens(input.content) };
  return input.role === 'user'
    ? {
        id: randomUUID(),
        type: 'user_message',
        content: input.content,
        createdAt: now,
        completedAt: now,
        metadata,
        ...(input.pinned ? { pinned: true } : {}),
      }
    : { id: randomUUID(), type: 'assistant_text', content: input.content, createdAt: now, completedAt: now, metadata };
}

/** The marker `clearMessages` appends: the next request starts after it, from the checkpoint alone. */
export function clearedMarker(now: number): UnsequencedEvent {
  return {
    type: 'block_complete',
    conversationId: MAIN_CONVERSATION,
    block: {
      id: randomUUID(),
      type: 'system',
      subtype: 'cleared',
      content: 'Messages cleared: the next request starts from the checkpoint.',
      createdAt: now,
    },
    at: now,
  };
}
