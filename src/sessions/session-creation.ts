import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { describeIssues } from '../conversation/index.js';
import { FORMAT_VERSION, type SessionRecord, type SessionScope, type SessionStore } from '../store/index.js';
import { SessionError } from './errors.js';
import {
  checkSessionId,
  GetOrCreateSessionOptionsSchema,
  scopedSessionId,
  type GetOrCreateSessionOptions,
} from './session-ids.js';
import { CreateSessionOptionsSchema, type CreateSessionOptions } from './session-manager-types.js';

export interface SessionCreatorOptions {
  /** The stored record of a session, if there is one. */
  read: (sessionId: string) => Promise<SessionRecord | undefined>;
  /** Stores a new session's record. */
  write: (record: SessionRecord) => Promise<SessionRecord>;
  clock: () => number;
  /** Called once per session this creator made (not for one that existed). */
  onCreated: (session: SessionRecord) => void;
}

/** Makes sessions: the record of a new one, stored once per id however many calls race for it. */
export class SessionCreator {
  private readonly creating = new Map<string, Promise<SessionRecord>>();

  constructor(private readonly options: SessionCreatorOptions) {}

  /** The session with the given id (or a random UUID), created unless it exists. */
  async create(options: CreateSessionOptions): Promise<SessionRecord> {
    const parsed = CreateSessionOptionsSchema.safeParse(options);
    if (!parsed.success) {
      throw new SessionError('INVALID_INPUT', `createSession: ${describeIssues(parsed.error.issues)}.`, {
        fault: 'user',
      });
    }
    const input = parsed.data;
    const sessionId = input.sessionId === undefined ? randomUUID() : checkSessionId(input.sessionId);
    const pending = this.creating.get(sessionId);
    if (pending) return pending;
    const creation = (async () => {
      const existing = await this.options.read(sessionId);
      if (existing) return existing;
      const created = await this.options.write(newSessionRecord(input, sessionId, this.options.clock()));
      this.options.onCreated(created);
      return created;
    })();
    this.creating.set(sessionId, creation);
    try {
      return await creation;
    } finally {
      this.creating.delete(sessionId);
    }
  }
}

/** The session of a feature or a task state: its deterministic id and how to create it. */
export function scopedSessionOptions(options: GetOrCreateSessionOptions): CreateSessionOptions & { sessionId: string } {
  const parsed = GetOrCreateSessionOptionsSchema.safeParse(options);
  if (!parsed.success) {
    throw new SessionError('INVALID_INPUT', `getOrCreateSession: ${describeIssues(parsed.error.issues)}.`, {
      fault: 'user',
    });
  }
  const scope = parsed.data;
  return {
    sessionId: scopedSessionId(scope),
    agentType: scope.agentType,
    ...(scope.backend ? { backend: scope.backend } : {}),
    scope:
      scope.type === 'feature'
        ? { kind: 'feature', featureId: scope.featureId }
        : { kind: 'task', featureId: scope.featureId, taskId: scope.taskId, taskState: scope.taskState },
  };
}

/** The record of a new session, active, with no messages yet. */
function newSessionRecord(
  input: z.output<typeof CreateSessionOptionsSchema>,
  sessionId: string,
  now: number,
): SessionRecord {
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

/** A task keeps its sessions per state and its current state; a feature its session. */
export async function linkScope(store: SessionStore, session: SessionRecord, at: number): Promise<void> {
  const scope: SessionScope = session.scope;
  const now = new Date(at).toISOString();
  if (scope.kind === 'task') {
    const task = (await store.getFeatureTask(scope.featureId, scope.taskId)) ?? {
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
    await store.putFeatureTask({
      ...task,
      states: { ...task.states, [scope.taskState]: { sessionIds: ids } },
      currentState: scope.taskState,
      updatedAt: now,
    });
  } else if (scope.kind === 'feature') {
    const feature = (await store.getFeature(scope.featureId)) ?? {
      formatVersion: FORMAT_VERSION,
      featureId: scope.featureId,
      name: scope.featureId,
      createdAt: now,
      updatedAt: now,
    };
    if (feature.sessionId === undefined)
      await store.putFeature({ ...feature, sessionId: session.sessionId, updatedAt: now });
  }
}
