import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  applyEvents,
  emptyConversation,
  type ConversationState,
  type StreamEvent,
} from '../../../src/conversation/index.js';
import { importTranscripts, nativeSessionFolders } from '../../../src/sessions/import/index.js';
import { withImportedSessions } from '../../../src/sessions/import/imported-store.js';
import { createFileStore, createMemoryStore, type SessionStore } from '../../../src/store/index.js';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'transcripts', 'codex');
const THREAD = '0199e2f1-5c3a-7d40-9b1e-6f2a4c8d0e13';
const NAME = `rollout-2025-10-14T09-00-00-${THREAD}.jsonl`;
const ROLLOUT = join(FIXTURES, 'sessions', '2025', '10', '14', NAME);
const SESSION = `codex-${THREAD}`;

async function rebuild(store: SessionStore, sessionId: string): Promise<ConversationState> {
  const events: StreamEvent[] = [];
  for await (const event of store.readLog(sessionId)) events.push(event);
  return applyEvents(emptyConversation(sessionId), events);
}

describe('importing Codex rollouts', () => {
  let work: string;
  let codexHome: string;
  let rollout: string;
  beforeEach(async () => {
    work = await fs.mkdtemp(join(tmpdir(), 'parley-codex-import-'));
    codexHome = join(work, 'codex-home');
    const folder = join(codexHome, 'sessions', '2025', '10', '14');
    await fs.mkdir(folder, { recursive: true });
    rollout = join(folder, NAME);
    await fs.copyFile(ROLLOUT, rollout);
  });
  afterEach(async () => {
    await fs.rm(work, { recursive: true, force: true });
  });

  it('imports a CODEX_HOME sessions tree as a read-only session with title, turns, tokens, cost and a checkpoint', async () => {
    const store = createMemoryStore();
    const before = await fs.readFile(rollout);
    const result = await importTranscripts(join(codexHome, 'sessions'), { store });
    expect(result.sessions).toEqual([
      expect.objectContaining({ sessionId: SESSION, source: 'codex', status: 'imported', checkpoint: true }),
    ]);
    const record = await store.getSession(SESSION);
    expect(record).toMatchObject({
      type: 'codex-import',
      readOnly: true,
      title: 'Fix the failing greeting test',
      scope: { kind: 'imported', source: 'codex', path: rollout, nativeSessionId: THREAD },
      native: { backend: 'codex', nativeSessionId: THREAD, transcriptPath: rollout },
      stats: { totalMessages: 5, totalCompactions: 2 },
    });
    expect(record?.metrics).toMatchObject({ turns: 3, inputTokens: 6000, cacheReadTokens: 14_500, outputTokens: 310 });
    expect(record?.metrics?.costUsd).toBeGreaterThan(0);
    const checkpoint = await store.readCheckpoint(SESSION);
    expect(checkpoint?.trigger).toBe('import');
    // The raw rollout is kept with the session; the native file is untouched.
    expect(await store.readTranscript(SESSION, 'main')).toBe(before.toString('utf8'));
    expect(await fs.readFile(rollout)).toEqual(before);
    expect(result.warnings.map((warning) => warning.code)).toEqual(['UNKNOWN_RECORD']);
  });

  it('imports into the file store deferred, and the first read builds the blocks an eager import writes', async () => {
    const memory = createMemoryStore();
    await importTranscripts(rollout, { store: memory });
    const dataDir = join(work, 'data');
    const file = await createFileStore({ dataDir, onWarning: () => {} });
    try {
      const result = await importTranscripts(rollout, { store: file });
      expect(result.sessions[0]).toMatchObject({ sessionId: SESSION, deferred: true, appendedBlocks: 0 });
      // The listing is right before anything is built.
      expect((await file.getSession(SESSION))?.metrics).toMatchObject({ turns: 3, inputTokens: 6000 });
      const built = await rebuild(withImportedSessions(file), SESSION);
      const eager = await rebuild(memory, SESSION);
      expect(built.blocks).toEqual(eager.blocks);
      expect(built.metrics).toEqual(eager.metrics);
      expect(await file.readCheckpoint(SESSION)).toBeDefined();
    } finally {
      await file.close();
    }
  });

  it('imports an unchanged rollout once, and only what a resumed thread appended', async () => {
    const store = createMemoryStore();
    await importTranscripts(rollout, { store });
    expect((await importTranscripts(rollout, { store })).sessions[0]?.status).toBe('unchanged');
    const before = await rebuild(store, SESSION);
    // Codex appends a resumed thread's turn to the same rollout, its token total running on.
    const more = [
      { type: 'event_msg', payload: { type: 'task_started' } },
      {
        type: 'response_item',
        payload: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'One more' }] },
      },
      {
        type: 'response_item',
        payload: { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Done.' }] },
      },
      {
        type: 'event_msg',
        payload: {
          type: 'token_count',
          info: {
            total_token_usage: { input_tokens: 21_500, cached_input_tokens: 14_500, output_tokens: 320 },
            last_token_usage: { input_tokens: 1000, cached_input_tokens: 0, output_tokens: 10 },
          },
        },
      },
      { type: 'event_msg', payload: { type: 'task_complete' } },
    ].map((record) => JSON.stringify({ timestamp: '2025-10-15T08:00:00.000Z', ...record }));
    await fs.appendFile(rollout, `${more.join('\n')}\n`);
    const update = await importTranscripts(rollout, { store });
    expect(update.sessions[0]).toMatchObject({ status: 'updated', appendedBlocks: 2 });
    const after = await rebuild(store, SESSION);
    expect(after.blocks.length).toBe(before.blocks.length + 2);
    expect(after.metrics).toMatchObject({ turns: 4, inputTokens: 7000, outputTokens: 320 });
  });

  it('imports a rollout whose last line is torn, setting the line aside with a warning', async () => {
    const text = await fs.readFile(rollout, 'utf8');
    const lines = text.trimEnd().split('\n');
    await fs.writeFile(rollout, `${lines.slice(0, 30).join('\n')}\n${lines[30]!.slice(0, 25)}`);
    const store = createMemoryStore();
    const result = await importTranscripts(rollout, { store });
    expect(result.sessions[0]?.status).toBe('imported');
    expect(result.warnings).toContainEqual(expect.objectContaining({ code: 'TRUNCATED_LINE', line: 31, file: NAME }));
    const state = await rebuild(store, SESSION);
    expect(state.blocks.some((block) => block.type === 'assistant_text')).toBe(true);
  });

  it('takes only the project’s rollouts from the shared tree when asked for one project', async () => {
    const store = createMemoryStore();
    const elsewhere = importTranscripts(join(codexHome, 'sessions'), { store, projectRoot: join(work, 'other') });
    await expect(elsewhere).rejects.toMatchObject({ code: 'NOTHING_TO_IMPORT' });
    const here = await importTranscripts(join(codexHome, 'sessions'), { store, projectRoot: '/home/dev/src' });
    expect(here.sessions.map((session) => session.sessionId)).toEqual([SESSION]);
  });

  it('reads the first rollout format, found by its name and meta line', async () => {
    const store = createMemoryStore();
    const result = await importTranscripts(join(FIXTURES, 'legacy'), { store });
    expect(result.sessions).toEqual([
      expect.objectContaining({ sessionId: 'codex-5973b6c0-94b8-487b-a530-2aeb6098ae0e', title: 'What does ls show?' }),
    ]);
  });

  it('says what was wrong for a file that is no rollout', async () => {
    const notes = join(work, 'rollout-notes.jsonl');
    await fs.writeFile(notes, '{"hello":"world"}\n');
    await expect(importTranscripts(notes, { store: createMemoryStore() })).rejects.toThrow(
      /not a Claude Code, Gemini CLI, Codex or seed-layout session file/,
    );
  });

  it('names CODEX_HOME/sessions among the native folders, shared by every project', async () => {
    const folders = await nativeSessionFolders(work, { HOME: work, CODEX_HOME: codexHome });
    expect(folders).toContainEqual({ source: 'codex', path: join(codexHome, 'sessions'), sharedByProjects: true });
    const fallback = await nativeSessionFolders(work, { HOME: work });
    expect(fallback).toContainEqual(
      expect.objectContaining({ source: 'codex', path: join(work, '.codex', 'sessions') }),
    );
  });
});
