import { createReadStream, promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClaudeCodeParser, LineSplitter } from '../../src/backends/index.js';
import { ConversationText } from '../../src/cli/conversation-text.js';
import { renderConversation } from '../../src/cli/render.js';
import { applyEvents, emptyConversation, type StreamEvent } from '../../src/conversation/index.js';
import { generateClaudeCodeTranscript } from '../fixtures/transcripts/generate.js';

const PROJECT = join(import.meta.dirname, '..', 'fixtures', 'transcripts', 'claude-code', '-home-dev-src-demo');
const SESSION = 'cc-test';

/** A transcript's events, numbered as the log numbers them. */
async function parsedEvents(path: string): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  const parser = new ClaudeCodeParser({
    emit: (draft) =>
      events.push({ ...draft, sessionId: SESSION, seq: events.length, at: draft.at ?? 0 } as StreamEvent),
  });
  const splitter = new LineSplitter((line, number, terminated) => parser.line(line, number, terminated));
  for await (const chunk of createReadStream(path)) splitter.push(chunk as Buffer);
  splitter.end();
  parser.end();
  return events;
}

describe('ConversationText: the rendered conversation, built as events arrive', () => {
  let work: string;
  const transcripts: string[] = [];
  beforeAll(async () => {
    work = await fs.mkdtemp(join(tmpdir(), 'parley-conversation-text-'));
    const generated = join(work, 'generated.jsonl');
    await generateClaudeCodeTranscript(generated, { targetBytes: 600_000, seed: 3 });
    transcripts.push(
      generated,
      join(PROJECT, '5f2b1c9e-3d4a-4e8b-9f10-2a6c7d8e9f01.jsonl'),
      join(PROJECT, '9a7d4c21-0b6e-4f3a-8d52-7c1e0f9b3a64.jsonl'),
      join(PROJECT, '5f2b1c9e-3d4a-4e8b-9f10-2a6c7d8e9f01', 'subagents', 'agent-a0f3c9d2e1b4.jsonl'),
    );
  });
  afterAll(async () => {
    await fs.rm(work, { recursive: true, force: true });
  });

  it.each([1, 7, 1000])(
    'prints what renderConversation prints for the folded conversation, and the same metrics (batches of %i events)',
    async (size) => {
      for (const path of transcripts) {
        const events = await parsedEvents(path);
        const folded = applyEvents(emptyConversation(SESSION), events);
        const text = new ConversationText(SESSION);
        for (let start = 0; start < events.length; start += size) text.add(events.slice(start, start + size));
        expect(text.text()).toBe(renderConversation(folded.blocks, folded.subagents));
        expect(text.metrics).toEqual(folded.metrics);
      }
    },
  );

  it('prints the same text when its lines go to a temporary file (past its memory), and removes the file on close', async () => {
    const events = await parsedEvents(transcripts[0]!);
    const folded = applyEvents(emptyConversation(SESSION), events);
    const before = new Set(await fs.readdir(tmpdir()));
    const text = new ConversationText(SESSION, { memoryBytes: 4096 });
    for (let start = 0; start < events.length; start += 50) text.add(events.slice(start, start + 50));
    const made = (await fs.readdir(tmpdir())).filter((name) => name.startsWith('parley-show-') && !before.has(name));
    expect(made).toHaveLength(1);
    const chunks = [...text.chunks()];
    expect(Buffer.concat(chunks).toString('utf8')).toBe(renderConversation(folded.blocks, folded.subagents));
    expect(text.text()).toBe(renderConversation(folded.blocks, folded.subagents));
    text.close();
    expect((await fs.readdir(tmpdir())).filter((name) => made.includes(name))).toEqual([]);
  });

  it('replaces a block in place when it comes again, and lists threads no subagent block names at the end', () => {
    const at = 1_800_000_000_000;
    const events: StreamEvent[] = [
      {
        type: 'block_complete',
        sessionId: SESSION,
        seq: 0,
        at,
        conversationId: 'main',
        block: { type: 'user_message', id: 'u', createdAt: at, content: 'go' },
      },
      {
        type: 'block_complete',
        sessionId: SESSION,
        seq: 1,
        at,
        conversationId: 'main',
        block: {
          type: 'tool_use',
          id: 't',
          createdAt: at,
          toolUseId: 't',
          name: 'Task',
          input: { prompt: 'look' },
          status: 'running',
        },
      },
      {
        type: 'block_complete',
        sessionId: SESSION,
        seq: 2,
        at,
        conversationId: 'worker',
        block: { type: 'assistant_text', id: 'w', createdAt: at, content: 'working' },
      },
      {
        type: 'block_complete',
        sessionId: SESSION,
        seq: 3,
        at,
        conversationId: 'main',
        block: {
          type: 'subagent',
          id: 's',
          createdAt: at,
          subagentId: 'helper',
          name: 'Task',
          input: 'look',
          status: 'success',
        },
      },
      {
        type: 'block_complete',
        sessionId: SESSION,
        seq: 4,
        at,
        conversationId: 'helper',
        block: { type: 'assistant_text', id: 'h', createdAt: at, content: 'found it' },
      },
      {
        type: 'block_complete',
        sessionId: SESSION,
        seq: 5,
        at,
        conversationId: 'main',
        block: {
          type: 'tool_use',
          id: 't',
          createdAt: at,
          toolUseId: 't',
          name: 'Task',
          input: { prompt: 'look' },
          status: 'error',
          error: 'boom',
        },
      },
    ];
    const text = new ConversationText(SESSION);
    text.add(events);
    const folded = applyEvents(emptyConversation(SESSION), events);
    expect(text.text()).toBe(renderConversation(folded.blocks, folded.subagents));
    expect(text.text().split('\n')).toEqual([
      '> go',
      '[tool Task error] {"prompt":"look"} — boom',
      '[agent Task (helper) success] look',
      '    │ found it',
      '[thread worker]',
      '    │ working',
    ]);
  });

  it('refuses an event that changes part of a block it does not keep, saying what to do instead', () => {
    const text = new ConversationText(SESSION);
    expect(() =>
      text.add([
        {
          type: 'text_delta',
          sessionId: SESSION,
          seq: 0,
          at: 1,
          conversationId: 'main',
          blockId: 'b',
          delta: 'x',
        } as StreamEvent,
      ]),
    ).toThrow(/a text_delta event \(seq 0\).*renderConversation/);
  });
});
