import type { z } from 'zod';
import { FORMAT_VERSION, type SessionRecord, type SessionScope, type SessionStore } from '../store/index.js';
import { SessionError } from './errors.js';
import type { CreateSessionOptionsSchema } from './session-manager-types.js';

// A session record: made for a new session, linked to its task or feature, checked before a write.

/** The record of a new session, active, with no messages yet. */
export function newSessionRecord(input: z.output<typeof CreateSessionOptionsSchema>, sessionId: string, now: number): SessionRecord {
  return {
    formatVersion: FORMAT_VERSION,
    sessionId,
    type: input.backend ?? 'scripted',
    agentProfileReference: input.agentProfileReference ?? input.agentType,
    agentType: input.agentType,
    status: 'active',
    scope: input.scope,
    createdAt: now,
    updatedAt: now,
    lastActivity: now,
    settings: input.settings ?? {},
    stats: { totalMessages: 0, totalTokens: 0, totalCompactions: 0 },
    ...(input.title !== undefined ? { title: input.title } : {}),
    ...(input.readOnly ? { readOnly: true } : {}),
    ...(input.native ? { native: input.native } : {}),
  };
}

/** Seed 002: a task keeps its sessions per state and its current state; a feature its session. */
export async function linkScope(store: SessionStore, session: SessionRecord, at: number): Promise<void> {
  const scope: SessionScope = session.scope;
  const now = new Date(at).toISOString();
  if (scope.kind === 'task') {
    const task = (await store.getTask(scope.featureId, scope.taskId)) ?? {
      formatVersion: FORMAT_VERSION,
      featureId: scope.featureId,
      taskId: scope.taskId,
      title: scope.taskId,
      description: '',
      dependencies: [],
      states: {},
      createdAt: now,
      updatedAt: now,
    };
    const ids = task.states[scope.taskState]?.sessionIds ?? [];
    if (!ids.includes(session.sessionId)) ids.push(session.sessionId);
    await store.putTask({ ...task, states: { ...task.states, [scope.taskState]: { sessionIds: ids } }, currentState: scope.taskState, updatedAt: now });
  } else if (scope.kind === 'feature') {
    const feature = (await store.getFeature(scope.featureId)) ?? {
      formatVersion: FORMAT_VERSION,
      featureId: scope.featureId,
      name: scope.featureId,
      createdAt: now,
      updatedAt: now,
    };
    if (feature.sessionId === undefined) await store.putFeature({ ...feature, sessionId: session.sessionId, updatedAt: now });
  }
}

export function notFound(sessionId: string): SessionError {
  return new SessionError('SESSION_NOT_FOUND', `No session "${sessionId}". List sessions with \`parley sessions\`.`, {
    fault: 'user',
    data: { sessionId },
  });
}

export function assertWritable(record: SessionRecord): void {
  if (record.readOnly) {
    throw new SessionError(
      'READ_ONLY_SESSION',
      `Session "${record.sessionId}" is read only (imported); continue it with \`parley chat --session ${record.sessionId}\`, which starts a managed copy.`,
      { fault: 'user', data: { sessionId: record.sessionId } },
    );
  }
  if (record.status === 'archived') {
    throw new SessionError('SESSION_ARCHIVED', `Session "${record.sessionId}" is archived and takes no new messages.`, {
      fault: 'user',
      data: { sessionId: record.sessionId },
    });
  }
}
