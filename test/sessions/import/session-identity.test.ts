import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { applyEvents, emptyConversation, type StreamEvent } from '../../../src/conversation/index.js';
import { importTranscripts } from '../../../src/sessions/import/index.js';
import { withImportedSessions } from '../../../src/sessions/import/imported-store.js';
import { createFileStore, createMemoryStore, type SessionStore } from '../../../src/store/index.js';

/**
 * Two transcripts that share a file name (the native session id) are two conversations: each gets
 * its own session, whichever way they are imported, and a re-import of either updates its own.
 */

const NATIVE_ID = '7c3e2a10-5b4d-4f6e-8a9b-0c1d2e3f4a5b';

/** A uuid made from a text: the same exchange has the same record ids in every file that holds it. */
function uuidOf(text: string): string {
  const hex = createHash('sha256').update(text).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * A Claude Code 2.x transcript: one prompt and its answer per entry, on one `parentUuid` chain. A
 * longer list is the same file grown.
 */
function transcript(exchanges: Array<[prompt: string, answer: string]>): string {
  const lines: string[] = [];
  let parent: string | null = null;
  exchanges.forEach(([prompt, answer], index) => {
    const userUuid = uuidOf(prompt);
    const time = Date.UTC(2026, 0, 1, 10, index);
    lines.push(
      JSON.stringify({
        type: 'user',
        uuid: userUuid,
        parentUuid: parent,
        sessionId: NATIVE_ID,
        timestamp: new Date(time).toISOString(),
        message: { role: 'user', content: prompt },
      }),
    );
    const answerUuid = `${userUuid}-answer`;
    lines.push(
      JSON.stringify({
        type: 'assistant',
        uuid: answerUuid,
        parentUuid: userUuid,
        sessionId: NATIVE_ID,
        timestamp: new Date(time + 1_000).toISOString(),
        message: {
          id: `msg_${userUuid}`,
          role: 'assistant',
          model: 'claude-sonnet-4-5',
          content: [{ type: 'text', text: answer }],
          stop_reason: 'end_turn',
          usage: { input_tokens: 10, output_tokens: 5 },
        },
      }),
    );
    parent = answerUuid;
  });
  return `${lines.join('\n')}\n`;
}

async function texts(store: SessionStore, sessionId: string): Promise<string[]> {
  const events: StreamEvent[] = [];
  for await (const event of withImportedSessions(store).readLog(sessionId)) events.push(event);
  const state = applyEvents(emptyConversation(sessionId), events);
  return state.blocks.flatMap((block) =>
    block.type === 'user_message' || block.type === 'assistant_text' ? [block.content] : [],
  );
}

async function sessionsOf(store: SessionStore): Promise<Map<string, string>> {
  const paths = new Map<string, string>();
  for await (const record of store.listSessions())
    if (record.scope.kind === 'imported') paths.set(record.scope.path, record.sessionId);
  return paths;
}

let work: string;
let first: string;
let second: string;
beforeEach(async () => {
  work = await fs.mkdtemp(join(tmpdir(), 'parley-identity-'));
  first = join(work, 'projects', 'alpha', `${NATIVE_ID}.jsonl`);
  second = join(work, 'projects', 'beta', `${NATIVE_ID}.jsonl`);
  await fs.mkdir(join(work, 'projects', 'alpha'), { recursive: true });
  await fs.mkdir(join(work, 'projects', 'beta'), { recursive: true });
  await fs.writeFile(first, transcript([['alpha question', 'alpha answer']]));
  await fs.writeFile(second, transcript([['beta question', 'beta answer']]));
});
afterEach(async () => {
  await fs.rm(work, { recursive: true, force: true });
});

const stores: Array<[string, () => Promise<SessionStore>]> = [
  ['the memory store (events written at import)', () => Promise.resolve(createMemoryStore())],
  ['the file store (events built on first read)', () => createFileStore({ dataDir: join(work, 'data') })],
];

describe.each(stores)('two transcripts of the same name, in %s', (_name, open) => {
  let store: SessionStore;
  beforeEach(async () => {
    store = await open();
  });
  afterEach(async () => {
    await store.close();
  });

  it('imported one after the other, they become two sessions, each with its own conversation', async () => {
    const one = await importTranscripts(first, { store });
    const two = await importTranscripts(second, { store });
    expect(one.sessions.map((session) => session.status)).toEqual(['imported']);
    expect(two.sessions.map((session) => session.status)).toEqual(['imported']);
    const [a, b] = [one.sessions[0]!.sessionId, two.sessions[0]!.sessionId];
    expect(a).toBe(`cc-${NATIVE_ID}`);
    expect(b).not.toBe(a);
    expect(b.startsWith(`cc-${NATIVE_ID}-`)).toBe(true);
    expect(await texts(store, a)).toEqual(['alpha question', 'alpha answer']);
    expect(await texts(store, b)).toEqual(['beta question', 'beta answer']);
    // Both keep the native id they resume under.
    expect((await store.getSession(b))?.native?.nativeSessionId).toBe(NATIVE_ID);
  });

  it('imported as one folder, both are imported: neither is dropped', async () => {
    const result = await importTranscripts(join(work, 'projects'), { store });
    expect(result.sessions.map((session) => [session.path, session.status])).toEqual([
      [first, 'imported'],
      [second, 'imported'],
    ]);
    const ids = await sessionsOf(store);
    expect(ids.size).toBe(2);
    expect(await texts(store, ids.get(first)!)).toEqual(['alpha question', 'alpha answer']);
    expect(await texts(store, ids.get(second)!)).toEqual(['beta question', 'beta answer']);
  });

  it('a re-import of each file updates its own session and leaves the other alone', async () => {
    await importTranscripts(join(work, 'projects'), { store });
    const ids = await sessionsOf(store);
    await fs.writeFile(
      second,
      transcript([
        ['beta question', 'beta answer'],
        ['beta again', 'beta second answer'],
      ]),
    );
    const again = await importTranscripts(join(work, 'projects'), { store });
    expect(again.sessions.map((session) => [session.sessionId, session.status])).toEqual([
      [ids.get(first), 'unchanged'],
      [ids.get(second), 'updated'],
    ]);
    expect(await texts(store, ids.get(first)!)).toEqual(['alpha question', 'alpha answer']);
    expect(await texts(store, ids.get(second)!)).toContain('beta second answer');
    expect(await texts(store, ids.get(first)!)).not.toContain('beta second answer');
    expect((await sessionsOf(store)).size).toBe(2);
  });

  it('each subagent file joins the session of its own folder', async () => {
    for (const [file, label] of [
      [first, 'alpha'],
      [second, 'beta'],
    ] as const) {
      const folder = join(file.slice(0, -'.jsonl'.length), 'subagents');
      await fs.mkdir(folder, { recursive: true });
      const agent = transcript([[`${label} worker task`, `${label} worker result`]])
        .split('\n')
        .filter((line) => line.length > 0)
        .map((line) => JSON.stringify({ ...(JSON.parse(line) as object), isSidechain: true, agentId: 'w1' }))
        .join('\n');
      await fs.writeFile(join(folder, 'agent-w1.jsonl'), `${agent}\n`);
    }
    const result = await importTranscripts(join(work, 'projects'), { store });
    expect(result.skipped).toEqual([]);
    expect(result.sessions.map((session) => session.subagents)).toEqual([1, 1]);
    const ids = await sessionsOf(store);
    for (const [file, label] of [
      [first, 'alpha'],
      [second, 'beta'],
    ] as const) {
      const sessionId = ids.get(file)!;
      const events: StreamEvent[] = [];
      for await (const event of withImportedSessions(store).readLog(sessionId)) events.push(event);
      const thread = applyEvents(emptyConversation(sessionId), events).subagents.find((entry) => entry.id === 'w1');
      const words = (thread?.blocks ?? []).flatMap((block) => (block.type === 'user_message' ? [block.content] : []));
      expect(words).toEqual([`${label} worker task`]);
    }
  });

  it('a file moved to another folder finds its session again; a copy beside the original is a session of its own', async () => {
    const [imported] = (await importTranscripts(first, { store })).sessions;
    const moved = join(work, 'elsewhere', `${NATIVE_ID}.jsonl`);
    await fs.mkdir(join(work, 'elsewhere'));
    await fs.rename(first, moved);
    const [found] = (await importTranscripts(moved, { store })).sessions;
    expect(found?.sessionId).toBe(imported?.sessionId);
    expect(found?.status).toBe('updated');
    expect(found?.appendedBlocks).toBe(0);
    expect((await store.getSession(found!.sessionId))?.native?.transcriptPath).toBe(moved);

    const copy = join(work, 'copy', `${NATIVE_ID}.jsonl`);
    await fs.mkdir(join(work, 'copy'));
    await fs.copyFile(moved, copy);
    const [copied] = (await importTranscripts(copy, { store })).sessions;
    expect(copied?.status).toBe('imported');
    expect(copied?.sessionId).not.toBe(imported?.sessionId);
  });
});
