import type { UnsequencedEvent } from '../../src/conversation/index.js';
import {
  FORMAT_VERSION,
  StoreError,
  type AgentDescription,
  type CheckpointInput,
  type ContextDocument,
  type Feature,
  type SessionRecord,
  type SessionScope,
  type FeatureTask,
} from '../../src/store/index.js';

/** Builders of valid records for store tests; each takes overrides for the fields a test cares about. */

export function sessionRecord(sessionId: string, overrides: Partial<SessionRecord> = {}): SessionRecord {
  const scope: SessionScope = { kind: 'feature', featureId: 'feature-1' };
  return {
    formatVersion: FORMAT_VERSION,
    sessionId,
    type: 'scripted',
    agentProfileReference: 'profiles/dev.json',
    status: 'active',
    agentType: 'dev',
    scope,
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_000,
    settings: { tokenBudget: 100_000 },
    stats: { totalMessages: 0, totalTokens: 0, totalCompactions: 0 },
    ...overrides,
  };
}

export function textEvent(blockId: string, delta: string): UnsequencedEvent {
  return { type: 'text_delta', conversationId: 'main', blockId, delta };
}

export function userMessageEvent(id: string, content: string): UnsequencedEvent {
  return {
    type: 'block_complete',
    conversationId: 'main',
    at: 1_700_000_000_123,
    block: {
      type: 'user_message',
      id,
      createdAt: 1_700_000_000_000,
      content,
      metadata: { nested: { list: [1, 2, 3] } },
    },
  };
}

export function checkpointInput(throughSeq: number, overrides: Partial<CheckpointInput> = {}): CheckpointInput {
  return {
    createdAt: '2024-01-01T00:00:00.000Z',
    trigger: 'auto',
    summary: {
      completed: ['wrote the parser'],
      inProgress: ['tests'],
      pending: ['docs'],
      decisions: ['JSONL'],
      blockers: [],
    },
    pinned: ['Build the parser'],
    liveHandles: [{ id: 'worker-1', kind: 'worker', status: 'running' }],
    covers: { throughSeq, messageCount: throughSeq + 1 },
    tokens: { checkpoint: 120, lastCompactionInput: 90_000, totalSaved: 80_000 },
    ...overrides,
  };
}

export function contextDocument(sessionId: string, overrides: Partial<ContextDocument> = {}): ContextDocument {
  return {
    formatVersion: FORMAT_VERSION,
    sessionId,
    updatedAt: '2024-01-01T00:00:00.000Z',
    sections: { project: 'Parley', files: 'src/store' },
    tokens: 12,
    ...overrides,
  };
}

export function agentDescription(sessionId: string, overrides: Partial<AgentDescription> = {}): AgentDescription {
  return {
    formatVersion: FORMAT_VERSION,
    sessionId,
    agentType: 'dev',
    role: 'Developer',
    instructions: ['Write tests first'],
    allowedTools: ['Read', 'Edit'],
    createdAt: '2024-01-01T00:00:00.000Z',
    tokens: 30,
    ...overrides,
  };
}

export function feature(featureId: string, overrides: Partial<Feature> = {}): Feature {
  return {
    formatVersion: FORMAT_VERSION,
    featureId,
    name: `Feature ${featureId}`,
    createdAt: '2024-01-01T00:00:00.000Z',
    updatedAt: '2024-01-01T00:00:00.000Z',
    ...overrides,
  };
}

export function task(featureId: string, taskId: string, overrides: Partial<FeatureTask> = {}): FeatureTask {
  return {
    formatVersion: FORMAT_VERSION,
    featureId,
    taskId,
    title: `Task ${taskId}`,
    description: 'Do the thing',
    dependencies: [],
    states: { dev: { sessionIds: [`dev-task-${featureId}-${taskId}-dev`] } },
    currentState: 'dev',
    createdAt: '2024-01-01T00:00:00.000Z',
    updatedAt: '2024-01-01T00:00:00.000Z',
    ...overrides,
  };
}

export async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

/** Runs `action` and returns the StoreError it threw; fails when it threw anything else or nothing. */
export async function storeErrorOf(action: () => Promise<unknown>): Promise<StoreError> {
  try {
    await action();
  } catch (error) {
    if (error instanceof StoreError) return error;
    throw new Error(`expected a StoreError, got ${String(error)}`, { cause: error });
  }
  throw new Error('expected a StoreError, but the call succeeded');
}

/** Ids that must never become a path. */
export const BAD_IDS: readonly string[] = [
  '../x',
  'a/b',
  '..',
  '.hidden',
  '',
  'x'.repeat(300),
  'a\\b',
  'a\0b',
  '-flag',
  'a..b',
  ' space',
];
