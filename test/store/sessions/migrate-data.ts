/**
 * A data folder's worth of sessions for the `parley migrate` tests: a native session (transcripts and
 * a native ref), a managed one (checkpoints, a context document, an agent description), sessions
 * imported from the Claude Code and Gemini CLI fixtures, and a feature with a task.
 */
import { join } from 'node:path';
import { expect } from 'vitest';
import type { UnsequencedEvent } from '../../../src/conversation/index.js';
import { importTranscripts } from '../../../src/sessions/index.js';
import { digestSession, type SessionStore } from '../../../src/store/index.js';
import {
  agentDescription,
  checkpointInput,
  collect,
  contextDocument,
  feature,
  sessionRecord,
  task,
  textEvent,
  userMessageEvent,
} from '../builders.js';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'transcripts');

export const NATIVE_ID = 'native-claude-1';
export const MANAGED_ID = 'dev-task-f1-t1-in_dev';

function turnDrafts(turn: number, at: number): UnsequencedEvent[] {
  const blockId = `assistant-${turn}`;
  return [
    { ...userMessageEvent(`user-${turn}`, `Request number ${turn}: käse ✓ "quoted"`), at },
    {
      type: 'block_start',
      conversationId: 'main',
      at: at + 1,
      block: { type: 'assistant_text', id: blockId, createdAt: at + 1, content: '' },
    },
    { ...textEvent(blockId, `Answer ${turn}, part one. `), at: at + 2 },
    { ...textEvent(blockId, 'Part two.'), at: at + 3 },
    {
      type: 'block_complete',
      conversationId: 'main',
      at: at + 4,
      block: { type: 'assistant_text', id: blockId, createdAt: at + 1, content: `Answer ${turn}, part one. Part two.` },
    },
    {
      type: 'metadata_update',
      conversationId: 'main',
      at: at + 5,
      metadata: { usage: { inputTokens: 100 + turn, outputTokens: 20 }, costUsd: 0.001, turnComplete: true },
    },
  ] as UnsequencedEvent[];
}

/** `turns` turns of six events each, with fixed times, so two stores given them hold equal logs. */
export function conversationDrafts(turns: number, firstAt = 1_700_000_100_000): UnsequencedEvent[] {
  return Array.from({ length: turns }, (_, turn) => turnDrafts(turn, firstAt + turn * 1_000)).flat();
}

/** Fills `store` as a data folder that has been used for a while; returns the ids of its sessions. */
export async function fillDataFolder(store: SessionStore): Promise<string[]> {
  await store.createSession(
    sessionRecord(NATIVE_ID, {
      type: 'claude-sdk',
      agentType: 'product-analyst',
      scope: { kind: 'draft', role: 'product-analyst', taskSlug: 'login-form', channelId: 'tui-1' },
      native: {
        backend: 'claude-sdk',
        nativeSessionId: 'b2d1c0a9-native',
        transcriptPath: '/home/dev/.claude/projects/demo/b2d1c0a9-native.jsonl',
      },
      updatedAt: 1_700_000_200_000,
    }),
  );
  await store.append(NATIVE_ID, conversationDrafts(3));
  // As the session layer appends: without `at`, which the store stamps (and the file store then writes after `seq`).
  await store.append(
    NATIVE_ID,
    conversationDrafts(1).map(({ at: _at, ...draft }) => draft as UnsequencedEvent),
  );
  await store.writeTranscript(
    NATIVE_ID,
    'claude-code.jsonl',
    '{"type":"user","message":"hello"}\n{"type":"assistant","message":"hi ✓"}\n',
  );
  await store.writeTranscript(NATIVE_ID, 'subagent-a1.jsonl', '{"type":"user"}\n');

  await store.createSession(
    sessionRecord(MANAGED_ID, {
      type: 'anthropic-api',
      scope: { kind: 'task', featureId: 'f1', taskId: 't1', taskState: 'in_dev' },
    }),
  );
  await store.append(MANAGED_ID, conversationDrafts(4, 1_700_000_300_000));
  await store.writeCheckpoint(MANAGED_ID, checkpointInput(11));
  await store.writeCheckpoint(
    MANAGED_ID,
    checkpointInput(17, { trigger: 'manual', summarizer: { kind: 'structural' } }),
  );
  await store.writeContext(contextDocument(MANAGED_ID));
  await store.writeAgentDescription(agentDescription(MANAGED_ID));

  await store.putFeature(feature('f1', { sessionId: 'pm-feature-f1' }));
  await store.putFeatureTask(task('f1', 't1', { states: { in_dev: { sessionIds: [MANAGED_ID] } } }));

  await importTranscripts(join(FIXTURES, 'claude-code'), { store, now: () => 1_700_000_400_000 });
  await importTranscripts(join(FIXTURES, 'gemini'), { store, now: () => 1_700_000_500_000 });
  const ids = (await collect(store.listSessions())).map((record) => record.sessionId).sort();
  expect(ids.filter((id) => id.startsWith('cc-')).length).toBeGreaterThan(0);
  expect(ids.length).toBeGreaterThan(4);
  return ids;
}

/** Asserts that `copy` holds everything of `original`, event by event, and that both hash equal. */
export async function expectSameContents(original: SessionStore, copy: SessionStore): Promise<void> {
  const records = (await collect(original.listSessions())).sort((left, right) =>
    left.sessionId.localeCompare(right.sessionId),
  );
  const copied = (await collect(copy.listSessions())).sort((left, right) =>
    left.sessionId.localeCompare(right.sessionId),
  );
  expect(copied).toEqual(records);
  for (const record of records) {
    const id = record.sessionId;
    const events = await collect(original.readLog(id));
    expect(events.length).toBeGreaterThan(0);
    expect(await collect(copy.readLog(id))).toEqual(events);
    expect(await copy.listCheckpoints(id)).toEqual(await original.listCheckpoints(id));
    expect(await copy.readContext(id)).toEqual(await original.readContext(id));
    expect(await copy.readAgentDescription(id)).toEqual(await original.readAgentDescription(id));
    const names = (await original.listTranscripts(id)).sort();
    expect((await copy.listTranscripts(id)).sort()).toEqual(names);
    for (const name of names) expect(await copy.readTranscript(id, name)).toBe(await original.readTranscript(id, name));
    expect(await digestSession(copy, id)).toEqual(await digestSession(original, id));
  }
  expect(await copy.listFeatures()).toEqual(await original.listFeatures());
  expect(await copy.listFeatureTasks()).toEqual(await original.listFeatureTasks());
}
