import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { applyEvents, emptyConversation, type StreamEvent } from '../../../src/conversation/index.js';
import { importTranscripts } from '../../../src/sessions/import/index.js';
import { createMemoryStore, type SessionStore } from '../../../src/store/index.js';
import { SESSION, assistantRecord as assistant, systemRecord, userRecord } from '../../fixtures/transcripts/shapes.js';

/**
 * Shapes seen in real transcripts (Claude Code 1.0.x to 2.1.x, Gemini CLI) that the frozen
 * fixtures do not have, each built here from the record shapes of the reference schemas.
 */

async function rebuilt(store: SessionStore, sessionId: string) {
  const events: StreamEvent[] = [];
  for await (const event of store.readLog(sessionId)) events.push(event);
  return applyEvents(emptyConversation(sessionId), events);
}

let work: string;
beforeEach(async () => {
  work = await fs.mkdtemp(join(tmpdir(), 'parley-shapes-'));
});
afterEach(async () => {
  await fs.rm(work, { recursive: true, force: true });
});

describe('importTranscripts: which files are sessions', () => {
  it('recognises a Claude Code transcript whose first line is longer than 64 KiB (a pasted screenshot)', async () => {
    const screenshot = Buffer.alloc(300 * 1024, 7).toString('base64');
    const first = userRecord('u-1', null, [
      { type: 'text', text: 'What is wrong in this screenshot?' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: screenshot } },
    ]);
    const file = join(work, `${SESSION}.jsonl`);
    await fs.writeFile(file, `${first}\n${assistant('a-1', 'u-1', 'The button is cut off.')}\n`);
    const result = await importTranscripts(file, { store: createMemoryStore() });
    expect(result.sessions.map((session) => session.sessionId)).toEqual([`cc-${SESSION}`]);
    const folder = await importTranscripts(work, { store: createMemoryStore() });
    expect(folder.sessions).toHaveLength(1);
    expect(folder.skipped).toEqual([]);
  });

  it("lists another tool's cache files named like the seed layout as skipped, with the reason, and makes no session of them", async () => {
    const cache = join(work, 'cache');
    await fs.mkdir(cache);
    await fs.writeFile(join(cache, 'session_b.json'), JSON.stringify({ etag: 'W/"1f"', entries: [1, 2] }));
    await fs.writeFile(join(cache, 'chat_c.json'), JSON.stringify({ hits: 3 }));
    const file = join(work, `${SESSION}.jsonl`);
    await fs.writeFile(file, `${userRecord('u-1', null, 'hello')}\n${assistant('a-1', 'u-1', 'Hi.')}\n`);
    const store = createMemoryStore();
    const result = await importTranscripts(work, { store });
    expect(result.sessions.map((session) => session.sessionId)).toEqual([`cc-${SESSION}`]);
    expect(result.skipped).toEqual([
      { path: join(cache, 'chat_c.json'), reason: expect.stringContaining('holds no messages') },
      { path: join(cache, 'session_b.json'), reason: expect.stringContaining('holds no messages') },
    ]);
    expect(result.skipped[0]!.reason).toContain("chat_c.json does not have the seed layout's shape");
    const ids: string[] = [];
    for await (const record of store.listSessions()) ids.push(record.sessionId);
    expect(ids).toEqual([`cc-${SESSION}`]);
  });

  it('skips a Gemini CLI session file that holds no messages', async () => {
    const chats = join(work, 'chats');
    await fs.mkdir(chats);
    const header = {
      sessionId: '7e8f9a0b-1c2d-4e3f-8a9b-0c1d2e3f4a5b',
      projectHash: 'ab12',
      startTime: '2026-09-01T10:00:00Z',
    };
    await fs.writeFile(join(chats, 'session-2026-09-01T10-00-7e8f9a0b.jsonl'), `${JSON.stringify(header)}\n`);
    const result = await importTranscripts(work, { store: createMemoryStore() });
    expect(result.sessions).toEqual([]);
    expect(result.skipped).toEqual([
      { path: join(chats, 'session-2026-09-01T10-00-7e8f9a0b.jsonl'), reason: expect.stringContaining('no messages') },
    ]);
  });

  it('names the parent of a subagent file, and says it is empty, when the parent transcript has 0 bytes', async () => {
    const agents = join(work, SESSION, 'subagents');
    await fs.mkdir(agents, { recursive: true });
    await fs.writeFile(join(work, `${SESSION}.jsonl`), '');
    const agentFile = join(agents, 'agent-a1b2c3.jsonl');
    await fs.writeFile(
      agentFile,
      `${userRecord('s-1', null, 'Find the bug', { extra: { isSidechain: true, agentId: 'a1b2c3' } })}\n${assistant('s-2', 's-1', 'Found it.')}\n`,
    );
    const error = await importTranscripts(agentFile, { store: createMemoryStore() }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'NOTHING_TO_IMPORT' });
    expect((error as Error).message).toContain(
      `parent session's transcript ${join(work, `${SESSION}.jsonl`)} is empty`,
    );
    const folder = await importTranscripts(work, { store: createMemoryStore() }).catch((caught: unknown) => caught);
    expect(folder).toMatchObject({
      code: 'NOTHING_TO_IMPORT',
      data: {
        skipped: expect.arrayContaining([
          { path: join(work, `${SESSION}.jsonl`), reason: 'an empty file (0 bytes)' },
          { path: agentFile, reason: expect.stringContaining(`${SESSION}.jsonl is empty`) },
        ]),
      },
    });
  });
});

describe('importTranscripts: the estimated cost of a session that grew', () => {
  it('counts each message once when the file is imported again after it went on', async () => {
    const usage = {
      input_tokens: 1_000_000,
      output_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
    };
    const file = join(work, `${SESSION}.jsonl`);
    await fs.writeFile(file, `${userRecord('u-1', null, 'one')}\n${assistant('a-1', 'u-1', 'One.', { usage })}\n`);
    const store = createMemoryStore();
    await importTranscripts(file, { store });
    const first = await store.getSession(`cc-${SESSION}`);
    expect(first?.metrics).toMatchObject({ costUsd: expect.closeTo(3, 6), costEstimated: true, turns: 1 });
    await fs.appendFile(file, `${userRecord('u-2', 'a-1', 'two')}\n${assistant('a-2', 'u-2', 'Two.', { usage })}\n`);
    const result = await importTranscripts(file, { store });
    expect(result.sessions[0]!.status).toBe('updated');
    const second = await store.getSession(`cc-${SESSION}`);
    expect(second?.metrics).toMatchObject({ costUsd: expect.closeTo(6, 6), costEstimated: true, turns: 2 });
  });
});

describe('importTranscripts: agents no Task call launched', () => {
  it('places the compaction agent where the compaction happened, names it, and finds its parents in the main transcript', async () => {
    const agents = join(work, SESSION, 'subagents');
    await fs.mkdir(agents, { recursive: true });
    const at = (second: number) => ({ timestamp: `2026-09-01T10:00:${String(second).padStart(2, '0')}.000Z` });
    await fs.writeFile(
      join(work, `${SESSION}.jsonl`),
      [
        userRecord('u-1', null, 'Long work', at(1)),
        assistant('a-1', 'u-1', 'Done a lot.', { ...at(2), stopReason: 'end_turn' }),
        systemRecord(
          'c-1',
          'a-1',
          {
            subtype: 'compact_boundary',
            content: 'Conversation compacted',
            compactMetadata: { trigger: 'auto', preTokens: 160000 },
          },
          at(20),
        ),
        userRecord('u-2', 'c-1', 'Go on', at(21)),
        assistant('a-2', 'u-2', 'Going on.', { ...at(22), stopReason: 'end_turn' }),
      ].join('\n') + '\n',
    );
    const agentExtra = { isSidechain: true, agentId: 'acompact-1f2e3d' };
    await fs.writeFile(
      join(agents, 'agent-acompact-1f2e3d.jsonl'),
      [
        userRecord('k-1', 'a-1', 'Summarise the conversation so far', { ...at(5), extra: agentExtra }),
        assistant('k-2', 'k-1', '<summary>Work so far</summary>', {
          ...at(15),
          stopReason: 'end_turn',
          extra: agentExtra,
        }),
      ].join('\n') + '\n',
    );
    const store = createMemoryStore();
    const result = await importTranscripts(work, { store });
    expect(result.warnings.filter((warning) => warning.code === 'MISSING_PARENT')).toEqual([]);
    const state = await rebuilt(store, `cc-${SESSION}`);
    expect(
      state.blocks.map((block) => (block.type === 'subagent' ? `${block.type}:${block.name}` : block.type)),
    ).toEqual(['user_message', 'assistant_text', 'subagent:compaction', 'system', 'user_message', 'assistant_text']);
  });

  it('names a 2.0.x Warmup agent file for what it is', async () => {
    await fs.writeFile(
      join(work, `${SESSION}.jsonl`),
      `${userRecord('u-1', null, 'hello')}\n${assistant('a-1', 'u-1', 'Hi.', { stopReason: 'end_turn' })}\n`,
    );
    const extra = { isSidechain: true, agentId: '5e6f7a8b' };
    await fs.writeFile(
      join(work, 'agent-5e6f7a8b.jsonl'),
      `${userRecord('w-1', null, 'Warmup', { version: '2.0.30', extra })}\n${assistant('w-2', 'w-1', 'Ready.', { version: '2.0.30', extra })}\n`,
    );
    const store = createMemoryStore();
    await importTranscripts(work, { store });
    const state = await rebuilt(store, `cc-${SESSION}`);
    expect(state.blocks.filter((block) => block.type === 'subagent').map((block) => block.name)).toEqual(['warmup']);
  });
});
