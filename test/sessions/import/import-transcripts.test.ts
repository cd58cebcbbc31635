import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseClaudeCodeTranscript } from '../../../src/backends/index.js';
import {
  applyEvents,
  emptyConversation,
  isParleyError,
  type ConversationState,
  type StreamEvent,
  type SubagentBlock,
} from '../../../src/conversation/index.js';
import { importTranscripts, type ImportProgress } from '../../../src/sessions/import/index.js';
import { withImportedSessions } from '../../../src/sessions/import/imported-store.js';
import { createFileStore, createMemoryStore, type SessionStore } from '../../../src/store/index.js';
import { generateClaudeCodeTranscript } from '../../fixtures/transcripts/generate.js';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'transcripts');
const CLAUDE = join(FIXTURES, 'claude-code');
const PROJECT = join(CLAUDE, '-home-dev-src-demo');
const MAIN_ID = '5f2b1c9e-3d4a-4e8b-9f10-2a6c7d8e9f01';
const OLD_ID = '9a7d4c21-0b6e-4f3a-8d52-7c1e0f9b3a64';
const AGENT_ID = 'a0f3c9d2e1b4';

async function filesUnder(folder: string): Promise<string[]> {
  const entries = await fs.readdir(folder, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
}

async function hashes(folder: string): Promise<Record<string, string>> {
  const result: Record<string, string> = {};
  for (const file of await filesUnder(folder)) {
    const stat = await fs.stat(file);
    result[relative(folder, file)] = `${createHash('sha256')
      .update(await fs.readFile(file))
      .digest('hex')} ${stat.mtimeMs}`;
  }
  return result;
}

async function log(store: SessionStore, sessionId: string): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  for await (const event of store.readLog(sessionId)) events.push(event);
  return events;
}

async function rebuild(store: SessionStore, sessionId: string): Promise<ConversationState> {
  return applyEvents(emptyConversation(sessionId), await log(store, sessionId));
}

async function sessionIds(store: SessionStore): Promise<string[]> {
  const ids: string[] = [];
  for await (const record of store.listSessions()) ids.push(record.sessionId);
  return ids.sort();
}

let work: string;
beforeEach(async () => {
  work = await fs.mkdtemp(join(tmpdir(), 'parley-import-'));
});
afterEach(async () => {
  await fs.rm(work, { recursive: true, force: true });
});

describe('importTranscripts: a Claude Code project folder', () => {
  it('imports each session as a read-only Parley session; a subagent file is a thread of its parent, never a session', async () => {
    const store = createMemoryStore();
    const result = await importTranscripts(CLAUDE, { store, now: () => 1_800_000_000_000 });
    expect(await sessionIds(store)).toEqual([`cc-${MAIN_ID}`, `cc-${OLD_ID}`]);
    expect(result.sessions.map((session) => [session.sessionId, session.status, session.subagents])).toEqual([
      [`cc-${MAIN_ID}`, 'imported', 1],
      [`cc-${OLD_ID}`, 'imported', 2],
    ]);
    expect(result.skipped).toEqual([]);

    const record = (await store.getSession(`cc-${MAIN_ID}`))!;
    expect(record).toMatchObject({
      type: 'claude-code-import',
      agentType: 'imported',
      readOnly: true,
      status: 'active',
      title: 'Add a --verbose flag to the CLI',
      scope: {
        kind: 'imported',
        source: 'claude-code',
        path: join(PROJECT, `${MAIN_ID}.jsonl`),
        nativeSessionId: MAIN_ID,
      },
      native: { backend: 'claude-code', nativeSessionId: MAIN_ID, transcriptPath: join(PROJECT, `${MAIN_ID}.jsonl`) },
      createdAt: Date.parse('2026-08-01T10:00:00.000Z'),
      lastActivity: Date.parse('2026-08-01T10:06:34.000Z'),
      updatedAt: 1_800_000_000_000,
      stats: { totalMessages: 6, totalCompactions: 1, lastCompactionAt: '2026-08-01T10:05:04.000Z' },
    });
    expect(record.metrics).toMatchObject({ turns: 3, costUsd: expect.closeTo(0.0587, 6), model: 'claude-opus-5-5' });
  });

  it('writes the blocks as block_complete events and usage as metadata_update events that rebuild the conversation', async () => {
    const store = createMemoryStore();
    await importTranscripts(CLAUDE, { store });
    const events = await log(store, `cc-${MAIN_ID}`);
    expect(new Set(events.map((event) => event.type))).toEqual(new Set(['block_complete', 'metadata_update']));
    const state = await rebuild(store, `cc-${MAIN_ID}`);
    const parsed = parseClaudeCodeTranscript(await fs.readFile(join(PROJECT, `${MAIN_ID}.jsonl`), 'utf8'));
    expect(state.blocks.map((block) => block.id)).toEqual(parsed.blocks.map((block) => block.id));
    expect(state.metrics).toEqual((await store.getSession(`cc-${MAIN_ID}`))!.metrics);

    const thread = state.subagents.find((candidate) => candidate.id === AGENT_ID)!;
    expect(thread.blocks.map((block) => block.id)).toEqual([
      `subagent-start-${AGENT_ID}`,
      'sa-0001',
      'sa-0003',
      'sa-0004',
      'sa-0005',
    ]);
    expect(thread.blocks[0]).toMatchObject({
      type: 'system',
      subtype: 'subagent_start',
      content: 'Subagent Explore (claude-haiku-4-5)',
    });
    const link = state.blocks.find((block): block is SubagentBlock => block.type === 'subagent')!;
    expect(link.subagentId).toBe(AGENT_ID);
  });

  it('links old inline sidechains and flat agent files to their Task calls', async () => {
    const store = createMemoryStore();
    await importTranscripts(CLAUDE, { store });
    const state = await rebuild(store, `cc-${OLD_ID}`);
    expect(state.subagents.map((thread) => thread.id).sort()).toEqual(['b71c2e0f', 'sidechain-o-s-0001']);
    const links = state.blocks
      .filter((block): block is SubagentBlock => block.type === 'subagent')
      .map((block) => block.subagentId);
    expect(links).toEqual(['sidechain-o-s-0001', 'b71c2e0f']);
    expect(state.subagents.find((thread) => thread.id === 'b71c2e0f')!.blocks.map((block) => block.id)).toEqual([
      'subagent-start-b71c2e0f',
      'f-0001',
      'f-0002',
    ]);
  });

  it('turns the compact summary into a checkpoint that covers the log up to it', async () => {
    const store = createMemoryStore();
    const result = await importTranscripts(CLAUDE, { store });
    expect(result.sessions[0]!.checkpoint).toBe(true);
    const checkpoint = (await store.readCheckpoint(`cc-${MAIN_ID}`))!;
    const summaryEvent = (await log(store, `cc-${MAIN_ID}`)).find(
      (event) => event.type === 'block_complete' && event.block.id === 'u-0017',
    )!;
    expect(checkpoint).toMatchObject({
      version: 1,
      trigger: 'import',
      pinned: ['Add a --verbose flag to the CLI'],
      covers: { throughSeq: summaryEvent.seq, messageCount: 3 },
      tokens: { checkpoint: 2544, lastCompactionInput: 16800, totalSaved: 14256 },
      summary: { pending: ['Add tests for --verbose output'], inProgress: ['Wiring --verbose into the logger'] },
    });
    expect(await store.readCheckpoint(`cc-${OLD_ID}`)).toBeUndefined();
  });

  it('copies small raw transcripts into the store verbatim', async () => {
    const store = createMemoryStore();
    const result = await importTranscripts(CLAUDE, { store });
    expect(result.sessions[0]!.transcript).toBe('copied');
    // Named as the session manager reads them back: `main` and each thread's id.
    expect(await store.listTranscripts(`cc-${MAIN_ID}`)).toEqual([AGENT_ID, 'import-manifest.json', 'main']);
    expect(await store.readTranscript(`cc-${MAIN_ID}`, 'main')).toBe(
      await fs.readFile(join(PROJECT, `${MAIN_ID}.jsonl`), 'utf8'),
    );
    expect(await store.readTranscript(`cc-${MAIN_ID}`, AGENT_ID)).toBe(
      await fs.readFile(join(PROJECT, MAIN_ID, 'subagents', `agent-${AGENT_ID}.jsonl`), 'utf8'),
    );
  });

  it('references large raw transcripts by path instead of copying them', async () => {
    const store = createMemoryStore();
    const result = await importTranscripts(CLAUDE, { store, copyTranscriptMaxBytes: 100 });
    expect(result.sessions.every((session) => session.transcript === 'referenced')).toBe(true);
    expect(await store.listTranscripts(`cc-${MAIN_ID}`)).toEqual(['import-manifest.json']);
    expect((await store.getSession(`cc-${MAIN_ID}`))!.native?.transcriptPath).toBe(join(PROJECT, `${MAIN_ID}.jsonl`));
  });

  it('never modifies the native files', async () => {
    const before = await hashes(FIXTURES);
    const store = createMemoryStore();
    await importTranscripts(FIXTURES, { store });
    await importTranscripts(FIXTURES, { store });
    expect(await hashes(FIXTURES)).toEqual(before);
  });
});

describe('importTranscripts: importing again', () => {
  it('skips a source that has not changed: nothing is duplicated', async () => {
    const store = createMemoryStore();
    await importTranscripts(CLAUDE, { store });
    const seq = await store.lastSeq(`cc-${MAIN_ID}`);
    const again = await importTranscripts(CLAUDE, { store });
    expect(again.sessions.map((session) => session.status)).toEqual(['unchanged', 'unchanged']);
    expect(again.sessions[0]).toMatchObject({ appendedBlocks: 0, blocks: 35, subagents: 1 });
    expect(await store.lastSeq(`cc-${MAIN_ID}`)).toBe(seq);
    expect(await store.listCheckpoints(`cc-${MAIN_ID}`)).toHaveLength(1);
  });

  it('appends only the new blocks when the native session went on after the last import', async () => {
    const project = join(work, 'project');
    await fs.cp(PROJECT, project, { recursive: true });
    const file = join(project, `${MAIN_ID}.jsonl`);
    const store = createMemoryStore();
    await importTranscripts(project, { store });
    const before = await log(store, `cc-${MAIN_ID}`);

    const more = [
      {
        type: 'user',
        uuid: 'u-0100',
        parentUuid: 's-0029',
        sessionId: MAIN_ID,
        timestamp: '2026-08-01T11:00:00.000Z',
        message: { role: 'user', content: 'One more thing: update the changelog' },
      },
      {
        type: 'assistant',
        uuid: 'a-0101',
        parentUuid: 'u-0100',
        sessionId: MAIN_ID,
        timestamp: '2026-08-01T11:00:05.000Z',
        requestId: 'req_more',
        message: {
          id: 'msg_more',
          role: 'assistant',
          model: 'claude-opus-5-5',
          content: [{ type: 'text', text: 'Changelog updated.' }],
          stop_reason: 'end_turn',
          usage: { input_tokens: 4, output_tokens: 9 },
        },
      },
    ];
    await fs.appendFile(file, more.map((record) => `${JSON.stringify(record)}\n`).join(''));
    const again = await importTranscripts(project, { store });
    expect(again.sessions.find((session) => session.sessionId === `cc-${MAIN_ID}`)).toMatchObject({
      status: 'updated',
      appendedBlocks: 2,
    });
    expect(again.sessions.find((session) => session.sessionId === `cc-${OLD_ID}`)).toMatchObject({
      status: 'unchanged',
    });

    const after = await log(store, `cc-${MAIN_ID}`);
    expect(after.slice(0, before.length)).toEqual(before);
    const added = after.slice(before.length);
    expect(
      added
        .filter((event) => event.type === 'block_complete')
        .map((event) => event.type === 'block_complete' && event.block.id),
    ).toEqual(['u-0100', 'a-0101']);
    expect(
      added
        .filter((event) => event.type === 'metadata_update')
        .map((event) => event.type === 'metadata_update' && event.metadata.usage?.outputTokens),
    ).toContain(9);
    const state = await rebuild(store, `cc-${MAIN_ID}`);
    const ids = state.blocks.map((block) => block.id);
    expect(new Set(ids).size).toBe(ids.length);
    // 2 turns before, the fixture's last one (it ends on a tool call) once the new prompt starts, and the new one.
    expect((await store.getSession(`cc-${MAIN_ID}`))!.metrics).toMatchObject({
      turns: 4,
      outputTokens: state.metrics.outputTokens,
    });
    expect(await store.readTranscript(`cc-${MAIN_ID}`, 'main')).toBe(await fs.readFile(file, 'utf8'));
    expect(await store.listCheckpoints(`cc-${MAIN_ID}`)).toHaveLength(1);
  });

  it('finishes an aborted import on the next run without duplicating what was written', async () => {
    const project = join(work, 'big');
    await fs.mkdir(project);
    const generated = await generateClaudeCodeTranscript(join(project, '0f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b.jsonl'), {
      targetBytes: 6_000_000,
      seed: 3,
    });
    const store = createMemoryStore();
    const controller = new AbortController();
    let chunks = 0;
    const aborted = importTranscripts(project, {
      store,
      signal: controller.signal,
      onProgress: (progress) => {
        if (progress.phase === 'reading' && ++chunks === 5) controller.abort();
      },
    });
    await expect(aborted).rejects.toMatchObject({ code: 'IMPORT_ABORTED' });
    const sessionId = 'cc-0f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b';
    const partial = await store.lastSeq(sessionId);
    expect(partial).toBeGreaterThan(0);
    expect(await store.listTranscripts(sessionId)).toEqual([]);

    const finished = await importTranscripts(project, { store });
    expect(finished.sessions[0]).toMatchObject({ status: 'updated' });
    const clean = createMemoryStore();
    await importTranscripts(project, { store: clean });
    const resumed = await rebuild(store, sessionId);
    const whole = await rebuild(clean, sessionId);
    expect(resumed.blocks.map((block) => block.id)).toEqual(whole.blocks.map((block) => block.id));
    expect(resumed.metrics).toEqual(whole.metrics);
    expect(generated.prompts).toBeGreaterThan(10);
  });
});

describe('importTranscripts: Gemini CLI and the seed layout', () => {
  it('imports a Gemini CLI project: JSONL, legacy JSON and checkpoint sessions; a subagent recording is a thread of its parent', async () => {
    const store = createMemoryStore();
    const result = await importTranscripts(join(FIXTURES, 'gemini'), { store });
    expect(await sessionIds(store)).toEqual([
      'gem-0b1c2d3e-4f50-4a61-8b72-9c83d4e5f607',
      'gem-598981be-4ecc-4614-b2ce-6a2348af4241',
      'gem-7c1d9e2a-5b3f-4e8d-a1c2-3b4d5e6f7a8b',
      'gem-demo-release-plan',
    ]);
    const main = (await store.getSession('gem-598981be-4ecc-4614-b2ce-6a2348af4241'))!;
    expect(main).toMatchObject({
      type: 'gemini-cli-import',
      readOnly: true,
      title: 'run shell',
      scope: { source: 'gemini-cli' },
    });
    expect(main.metrics).toMatchObject({ costUnknown: true, model: 'gemini-2.5-flash' });
    const state = await rebuild(store, main.sessionId);
    const subagentId = '3f0c9b7e-51d2-4a8e-9c3b-0d7e6f5a4b21';
    expect(state.subagents.map((thread) => thread.id)).toEqual([subagentId]);
    expect(state.subagents[0]!.blocks.map((block) => block.type)).toEqual(['system', 'user_message', 'assistant_text']);
    expect(state.blocks.at(-1)).toMatchObject({
      type: 'subagent',
      subagentId,
      input: 'Investigate the directory layout.',
    });
    expect(
      result.sessions.find((session) => session.sessionId === 'gem-0b1c2d3e-4f50-4a61-8b72-9c83d4e5f607'),
    ).toMatchObject({ checkpoint: true });
    const checkpoint = (await store.readCheckpoint('gem-0b1c2d3e-4f50-4a61-8b72-9c83d4e5f607'))!;
    expect(checkpoint.summary).toMatchObject({
      completed: expect.arrayContaining(['Port the tokenizer.']),
      inProgress: ['Port the evaluator.'],
      pending: ['Delete the Python version.'],
    });
  });

  it('skips a legacy Gemini .json that was converted to the .jsonl beside it', async () => {
    const chats = join(work, 'chats');
    await fs.mkdir(chats);
    await fs.copyFile(
      join(FIXTURES, 'gemini', 'tmp', 'demo', 'chats', 'session-2026-03-01T09-00-7c1d9e2a.json'),
      join(chats, 'session-2026-03-01T09-00-7c1d9e2a.json'),
    );
    await fs.writeFile(
      join(chats, 'session-2026-03-01T09-00-7c1d9e2a.jsonl'),
      `${JSON.stringify({ sessionId: '7c1d9e2a-5b3f-4e8d-a1c2-3b4d5e6f7a8b', projectHash: 'h', startTime: '2026-03-01T09:00:00.000Z', lastUpdated: '2026-03-01T09:00:00.000Z' })}\n${JSON.stringify({ id: 'm-1', timestamp: '2026-03-01T09:00:01.000Z', type: 'user', content: [{ text: 'hello' }] })}\n`,
    );
    const result = await importTranscripts(chats, { store: createMemoryStore() });
    expect(result.sessions).toHaveLength(1);
    expect(result.skipped).toEqual([
      { path: join(chats, 'session-2026-03-01T09-00-7c1d9e2a.json'), reason: expect.stringContaining('converted') },
    ]);
  });

  it('imports seed-layout sessions with their checkpoint, context and agent description', async () => {
    const store = createMemoryStore();
    const result = await importTranscripts(join(FIXTURES, 'seed-layout'), {
      store,
      now: () => Date.parse('2026-02-01T00:00:00.000Z'),
    });
    expect(await sessionIds(store)).toEqual([
      'seed-chat-auth',
      'seed-dev-task-auth-task-123-in_dev',
      'seed-pm-feature-auth',
    ]);
    expect(result.warnings).toEqual([expect.objectContaining({ code: 'INVALID_MESSAGE' })]);

    const pm = (await store.getSession('seed-pm-feature-auth'))!;
    expect(pm).toMatchObject({
      type: 'seed-layout',
      agentType: 'pm',
      readOnly: true,
      title: 'Create a task for auth',
      createdAt: Date.parse('2026-01-17T12:25:00.000Z'),
    });
    expect(await store.readCheckpoint('seed-pm-feature-auth')).toMatchObject({
      trigger: 'import',
      covers: { throughSeq: -1, messageCount: 40 },
      summary: { inProgress: ['Designing authentication flow'] },
    });
    expect(await store.readContext('seed-pm-feature-auth')).toMatchObject({
      sections: { featureName: 'User Authentication' },
      tokens: expect.any(Number),
    });
    expect((await store.readContext('seed-pm-feature-auth'))!.tokens).toBeGreaterThan(0);
    expect(await store.readAgentDescription('seed-pm-feature-auth')).toMatchObject({
      agentType: 'pm',
      role: 'You are a Project Manager agent...',
    });

    const dev = (await store.getSession('seed-dev-task-auth-task-123-in_dev'))!;
    expect(dev.agentType).toBe('dev');
    expect(await store.readCheckpoint(dev.sessionId)).toMatchObject({
      ralphLoop: { currentIteration: 2 },
      tokens: { checkpoint: 85, lastCompactionInput: 42000, totalSaved: 41000 },
    });
    expect(await store.readAgentDescription(dev.sessionId)).toMatchObject({
      allowedTools: ['Read', 'Edit', 'Bash'],
      tokens: 40,
    });
    expect(await store.readContext(dev.sessionId)).toMatchObject({ tokens: 640 });

    const old = await rebuild(store, 'seed-chat-auth');
    expect(old.blocks.map((block) => block.type)).toEqual(['user_message', 'assistant_text']);

    const again = await importTranscripts(join(FIXTURES, 'seed-layout'), { store });
    expect(again.sessions.map((session) => session.status)).toEqual(['unchanged', 'unchanged', 'unchanged']);
    expect(await store.listCheckpoints('seed-pm-feature-auth')).toHaveLength(1);
  });
});

describe('importTranscripts: single files and failures', () => {
  it('imports one session file together with its subagent files', async () => {
    const store = createMemoryStore();
    const result = await importTranscripts(join(PROJECT, `${MAIN_ID}.jsonl`), { store });
    expect(result.sessions.map((session) => session.sessionId)).toEqual([`cc-${MAIN_ID}`]);
    expect((await rebuild(store, `cc-${MAIN_ID}`)).subagents.map((thread) => thread.id)).toEqual([AGENT_ID]);
  });

  it('imports the parent session when given a subagent file', async () => {
    const store = createMemoryStore();
    const result = await importTranscripts(join(PROJECT, MAIN_ID, 'subagents', `agent-${AGENT_ID}.jsonl`), { store });
    expect(result.sessions.map((session) => session.sessionId)).toEqual([`cc-${MAIN_ID}`]);
    const flat = await importTranscripts(join(PROJECT, 'agent-b71c2e0f.jsonl'), { store: createMemoryStore() });
    expect(flat.sessions.map((session) => session.sessionId)).toEqual([`cc-${OLD_ID}`]);
  });

  it('refuses a subagent file whose parent session is not beside it, and writes nothing', async () => {
    const lonely = join(work, 'agent-lonely.jsonl');
    await fs.copyFile(join(PROJECT, 'agent-b71c2e0f.jsonl'), lonely);
    const store = createMemoryStore();
    await expect(importTranscripts(lonely, { store })).rejects.toMatchObject({
      code: 'NOTHING_TO_IMPORT',
      message: expect.stringContaining('subagent transcript'),
    });
    expect(await sessionIds(store)).toEqual([]);
  });

  it('reports a subagent file without its parent in a folder as skipped', async () => {
    await fs.cp(PROJECT, join(work, 'project'), { recursive: true });
    await fs.rm(join(work, 'project', `${OLD_ID}.jsonl`));
    const result = await importTranscripts(join(work, 'project'), { store: createMemoryStore() });
    expect(result.sessions.map((session) => session.sessionId)).toEqual([`cc-${MAIN_ID}`]);
    expect(result.skipped).toEqual([
      { path: join(work, 'project', 'agent-b71c2e0f.jsonl'), reason: expect.stringContaining(OLD_ID) },
    ]);
  });

  it('fails with IMPORT_PATH_NOT_FOUND for a path that does not exist', async () => {
    const error = await importTranscripts(join(work, 'nope'), { store: createMemoryStore() }).catch(
      (caught: unknown) => caught,
    );
    expect(isParleyError(error, 'IMPORT_PATH_NOT_FOUND')).toBe(true);
    expect((error as Error).message).toContain(join(work, 'nope'));
  });

  it('fails with NOTHING_TO_IMPORT for a folder without sessions or a file that is not one', async () => {
    await expect(importTranscripts(work, { store: createMemoryStore() })).rejects.toMatchObject({
      code: 'NOTHING_TO_IMPORT',
      fault: 'user',
    });
    const notes = join(work, 'notes.jsonl');
    await fs.writeFile(notes, '{"todo":"buy milk"}\n');
    await expect(importTranscripts(notes, { store: createMemoryStore() })).rejects.toMatchObject({
      code: 'NOTHING_TO_IMPORT',
    });
    const folder = await importTranscripts(FIXTURES, { store: createMemoryStore() });
    expect(folder.skipped).toEqual([]);
  });

  it('imports a transcript with malformed and truncated lines, reporting them as warnings', async () => {
    const project = join(work, 'broken');
    await fs.mkdir(project);
    const text = await fs.readFile(join(PROJECT, `${MAIN_ID}.jsonl`), 'utf8');
    const lines = text.split('\n');
    lines.splice(5, 0, '{"type":"assistant","uuid":');
    await fs.writeFile(join(project, `${MAIN_ID}.jsonl`), `${lines.join('\n')}{"type":"user","uuid":"cut`);
    const result = await importTranscripts(project, { store: createMemoryStore() });
    expect(result.sessions[0]!.warnings).toBe(2);
    expect(result.warnings.map((warning) => [warning.code, warning.line])).toEqual([
      ['MALFORMED_LINE', 6],
      ['TRUNCATED_LINE', lines.length],
    ]);
  });

  it('reports progress: discovery, chunks read, each session done', async () => {
    const progress: ImportProgress[] = [];
    await importTranscripts(CLAUDE, { store: createMemoryStore(), onProgress: (entry) => progress.push(entry) });
    expect(progress[0]).toEqual({ phase: 'discovered', sessionsTotal: 2, sessionsDone: 0 });
    expect(progress.filter((entry) => entry.phase === 'reading').length).toBeGreaterThanOrEqual(2);
    expect(progress.filter((entry) => entry.phase === 'session_done').map((entry) => entry.sessionId)).toEqual([
      `cc-${MAIN_ID}`,
      `cc-${OLD_ID}`,
    ]);
  });
});

describe('importTranscripts into the file store', () => {
  it('copies a large transcript beside the session and builds its log on first read; the session is there after the store is reopened', async () => {
    const project = join(work, 'project');
    await fs.mkdir(project);
    const generated = await generateClaudeCodeTranscript(join(project, '0f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b.jsonl'), {
      targetBytes: 12_000_000,
      seed: 7,
    });
    const dataDir = join(work, 'data');
    const store = await createFileStore({ dataDir, onWarning: () => {} });
    const result = await importTranscripts(project, { store, copyTranscriptMaxBytes: 1_000_000 });
    await store.close();
    const session = result.sessions[0]!;
    // The file store copies the file (in the kernel) and defers the blocks: see deferred-import.test.ts.
    expect(session).toMatchObject({ status: 'imported', transcript: 'copied', deferred: true });

    const reopened = await createFileStore({ dataDir, onWarning: () => {} });
    try {
      const record = (await reopened.getSession(session.sessionId))!;
      expect(record.readOnly).toBe(true);
      const state = await rebuild(withImportedSessions(reopened), session.sessionId);
      expect(state.blocks.length).toBe(session.blocks);
      const prompts = state.blocks.filter((block) => block.type === 'user_message').length;
      expect(prompts).toBe(generated.prompts);
      expect(record.stats.totalCompactions).toBe(Math.floor(generated.prompts / 150));
      expect(await reopened.listCheckpoints(session.sessionId)).toHaveLength(record.stats.totalCompactions > 0 ? 1 : 0);
      expect(state.metrics).toEqual(record.metrics);
    } finally {
      await reopened.close();
    }
  });
});
