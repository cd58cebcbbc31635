import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseGeminiTranscript } from '../../../src/backends/index.js';
import {
  ConversationBlockSchema,
  TurnMetadataSchema,
  type ConversationBlock,
  type SystemBlock,
  type ToolResultBlock,
  type ToolUseBlock,
} from '../../../src/conversation/index.js';

const DEMO = join(import.meta.dirname, '..', '..', 'fixtures', 'transcripts', 'gemini', 'tmp', 'demo');
const read = (path: string): string => readFileSync(join(DEMO, path), 'utf8');
const jsonl = read('chats/session-2026-11-21T04-40-598981be.jsonl');
const compressed = read('chats/session-2026-11-20T08-00-0b1c2d3e.jsonl');
const legacy = read('chats/session-2026-03-01T09-00-7c1d9e2a.json');
const checkpoint = read('checkpoint-release-plan.json');

const ids = (parsed: { blocks: ConversationBlock[] }): string[] => parsed.blocks.map((block) => block.id);
const byId = <T extends ConversationBlock>(parsed: { blocks: ConversationBlock[] }, id: string): T => {
  const found = parsed.blocks.find((block) => block.id === id);
  if (found === undefined) throw new Error(`no block ${id} in ${ids(parsed).join(', ')}`);
  return found as T;
};
const lines = (...records: unknown[]): string =>
  records.map((record) => (typeof record === 'string' ? record : JSON.stringify(record))).join('\n') + '\n';

describe('parseGeminiTranscript: the JSONL event log (Gemini CLI 0.61)', () => {
  const parsed = parseGeminiTranscript(jsonl);
  const SHELL = 'run_shell_command__run_shell_command_1795236052237_0';

  it('produces only blocks and metadata that match the conversation schemas', () => {
    for (const event of parsed.events) {
      if (event.type === 'block_complete')
        expect(ConversationBlockSchema.safeParse(event.block).success, event.block.id).toBe(true);
      else if (event.type === 'metadata_update')
        expect(TurnMetadataSchema.safeParse(event.metadata).success).toBe(true);
    }
  });

  it('replays the log: a message appended twice keeps its first position and its last content', () => {
    const gemini = 'e18ed6fb-8bf3-45dc-b94e-36cf4cfddd48';
    expect(ids(parsed).slice(0, 7)).toEqual([
      'd04923d38bb0f6017037e74183378ef4',
      'ae6a5ab7-f09f-4c14-aae5-efeae1355fc5',
      `${gemini}:thought:0`,
      `${gemini}:text`,
      `${gemini}:call:${SHELL}`,
      `${gemini}:result:${SHELL}`,
      'b66bc23e-b587-4fd5-90d0-b35327264779:text',
    ]);
  });

  it('takes tool results from inside the gemini message and does not repeat the functionResponse user message', () => {
    expect(byId<ToolUseBlock>(parsed, `e18ed6fb-8bf3-45dc-b94e-36cf4cfddd48:call:${SHELL}`)).toMatchObject({
      name: 'run_shell_command',
      input: { command: 'echo hi-from-shell && ls', description: 'test' },
      status: 'success',
    });
    const result = byId<ToolResultBlock>(parsed, `e18ed6fb-8bf3-45dc-b94e-36cf4cfddd48:result:${SHELL}`);
    expect(result.content).toContain('Output: hi-from-shell');
    expect(result.isError).toBe(false);
    expect(parsed.blocks.filter((block) => block.type === 'tool_result')).toHaveLength(2);
    expect(ids(parsed)).not.toContain('f8444693-ba5e-471a-872c-b32aaa0763ad');
  });

  it('marks a failed tool call and its error result', () => {
    const call = byId<ToolUseBlock>(parsed, 'c1a2b3c4-0002-4000-8000-000000000002:call:read_file-1795236070000-0');
    expect(call).toMatchObject({ status: 'error', error: 'File not found: /home/dev/src/demo/missing.txt' });
    expect(
      byId<ToolResultBlock>(parsed, 'c1a2b3c4-0002-4000-8000-000000000002:result:read_file-1795236070000-0'),
    ).toMatchObject({ isError: true });
  });

  it('turns thoughts into thinking blocks, subject first', () => {
    expect(byId(parsed, 'e18ed6fb-8bf3-45dc-b94e-36cf4cfddd48:thought:0')).toMatchObject({
      type: 'thinking',
      content: '**Planning**\nI will run the shell command the user asked for.',
    });
  });

  it('keeps the injected session context as a system block and the displayed text of a prompt as metadata', () => {
    expect(byId<SystemBlock>(parsed, 'd04923d38bb0f6017037e74183378ef4')).toMatchObject({
      subtype: 'info',
      data: { kind: 'session_context' },
    });
    expect(byId(parsed, 'c1a2b3c4-0001-4000-8000-000000000001')).toMatchObject({
      type: 'user_message',
      content: 'read the missing file',
      metadata: { displayContent: 'read @missing.txt' },
    });
  });

  it('keeps info, warning and error messages as system blocks', () => {
    expect(byId<SystemBlock>(parsed, 'c1a2b3c4-0003-4000-8000-000000000003')).toMatchObject({
      subtype: 'info',
      content: 'Request cancelled.',
      data: { kind: 'info' },
    });
    expect(byId<SystemBlock>(parsed, 'c1a2b3c4-0004-4000-8000-000000000004')).toMatchObject({
      subtype: 'info',
      data: { kind: 'warning' },
    });
    expect(byId<SystemBlock>(parsed, 'c1a2b3c4-0005-4000-8000-000000000005')).toMatchObject({
      subtype: 'error',
      content: '[API Error: quota exceeded]',
    });
  });

  it('applies $rewindTo: the rewound message and everything after it are gone', () => {
    expect(ids(parsed)).not.toContain('c1a2b3c4-0006-4000-8000-000000000006');
  });

  it('keeps a line of an unknown kind as unknown_record and says so', () => {
    const unknown = parsed.blocks.filter(
      (block): block is SystemBlock => block.type === 'system' && block.subtype === 'unknown_record',
    );
    expect(unknown).toHaveLength(1);
    expect(unknown[0]!.data).toEqual({
      source: 'gemini-cli',
      record: { $audit: { event: 'policy-check', decision: 'allow' } },
    });
    expect(parsed.warnings).toEqual([expect.objectContaining({ code: 'UNKNOWN_RECORD' })]);
  });

  it('reads usage from tokens: cached input is cache reads, thoughts are output, cost is unknown', () => {
    const usage = parsed.usage
      .filter((entry) => entry.metadata.usage !== undefined)
      .map((entry) => entry.metadata.usage);
    expect(usage).toEqual([
      { inputTokens: 10, outputTokens: 8, cacheReadTokens: 0, cacheWriteTokens: 0 },
      { inputTokens: 12, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 },
      { inputTokens: 30, outputTokens: 18, cacheReadTokens: 10, cacheWriteTokens: 0 },
    ]);
    expect(parsed.usage.at(-1)!.metadata).toEqual({ costUnknown: true });
    expect(parsed.info.costUnknown).toBe(true);
  });

  it('reports the session id, the summary as a generated title and the first prompt', () => {
    expect(parsed.info).toMatchObject({
      nativeSessionId: '598981be-4ecc-4614-b2ce-6a2348af4241',
      generatedTitle: 'Run a shell command and read a file',
      firstUserMessage: 'run shell',
      model: 'gemini-2.5-flash',
      startedAt: Date.parse('2026-11-21T04:40:52.192Z'),
    });
  });
});

describe('parseGeminiTranscript: compression', () => {
  const parsed = parseGeminiTranscript(compressed);

  it('replaces the history with the $set messages checkpoint and keeps the <state_snapshot> as a compaction block', () => {
    expect(ids(parsed)).toEqual([
      'm-snap',
      'm-gotit:text',
      'm-tail-1',
      'm-tail-2:text',
      'm-tail-2:part-call:1',
      'm-tail-3:result:0',
      'm-new-1:text',
    ]);
    expect(byId<SystemBlock>(parsed, 'm-snap')).toMatchObject({
      subtype: 'compaction',
      data: { kind: 'state_snapshot', summary: true },
    });
    expect(parsed.info.compactions).toEqual([
      expect.objectContaining({ blockId: 'm-snap', trigger: 'compress', messagesBefore: 0 }),
    ]);
  });

  it('pairs a functionCall part with the functionResponse that answers it', () => {
    expect(byId<ToolUseBlock>(parsed, 'm-tail-2:part-call:1')).toMatchObject({
      toolUseId: 'read-eval',
      name: 'read_file',
      status: 'success',
    });
    expect(byId<ToolResultBlock>(parsed, 'm-tail-3:result:0')).toMatchObject({
      toolUseId: 'read-eval',
      content: 'def evaluate(node): ...',
    });
  });
});

describe('parseGeminiTranscript: older formats', () => {
  it('reads the legacy single JSON document (before 2026-04)', () => {
    const parsed = parseGeminiTranscript(legacy);
    expect(parsed.warnings).toEqual([]);
    expect(ids(parsed)).toEqual(['m1', 'm2:thought:0', 'm2:call:read_file-1', 'm2:result:read_file-1', 'm3:text']);
    expect(parsed.info).toMatchObject({
      nativeSessionId: '7c1d9e2a-5b3f-4e8d-a1c2-3b4d5e6f7a8b',
      generatedTitle: 'Diagnose failing build',
    });
  });

  it('reads the legacy document given as lines too', () => {
    expect(ids(parseGeminiTranscript(legacy.split('\n')))).toEqual(ids(parseGeminiTranscript(legacy)));
  });

  it('reads a /resume save checkpoint of raw API contents, pairing calls and responses by name', () => {
    const parsed = parseGeminiTranscript(checkpoint, { fallbackTime: 1_000 });
    expect(parsed.blocks.map((block) => block.type)).toEqual([
      'user_message',
      'thinking',
      'tool_use',
      'tool_result',
      'assistant_text',
    ]);
    const call = parsed.blocks[2] as ToolUseBlock;
    expect(call.status).toBe('success');
    expect((parsed.blocks[3] as ToolResultBlock).toolUseId).toBe(call.toolUseId);
    expect(parsed.blocks[0]!.createdAt).toBe(1_000);
  });
});

describe('parseGeminiTranscript: failure paths', () => {
  const header = {
    sessionId: 'g1',
    projectHash: 'h',
    startTime: '2026-06-01T09:00:00.000Z',
    lastUpdated: '2026-06-01T09:00:00.000Z',
    kind: 'main',
  };
  const user = (id: string, text: string) => ({
    id,
    timestamp: '2026-06-01T09:00:05.000Z',
    type: 'user',
    content: [{ text }],
  });

  it('reports a malformed line with its number and skips it', () => {
    const parsed = parseGeminiTranscript(lines(header, user('m1', 'hi'), '{"id":"m2",', user('m3', 'again')));
    expect(ids(parsed)).toEqual(['m1', 'm3']);
    expect(parsed.warnings).toEqual([expect.objectContaining({ code: 'MALFORMED_LINE', line: 3 })]);
  });

  it('reports a truncated last line', () => {
    const parsed = parseGeminiTranscript(`${lines(header, user('m1', 'hi'))}{"id":"m2","type":"gem`);
    expect(ids(parsed)).toEqual(['m1']);
    expect(parsed.warnings).toEqual([expect.objectContaining({ code: 'TRUNCATED_LINE', line: 3 })]);
  });

  it('clears everything on a $rewindTo of an unknown id, as Gemini CLI does', () => {
    expect(parseGeminiTranscript(lines(header, user('m1', 'hi'), { $rewindTo: 'nope' })).blocks).toEqual([]);
  });

  it('keeps a message of an unknown type as unknown_record', () => {
    const parsed = parseGeminiTranscript(
      lines(header, { id: 'm1', timestamp: '2026-06-01T09:00:05.000Z', type: 'hologram', content: 'x' }),
    );
    expect(parsed.blocks).toEqual([expect.objectContaining({ id: 'm1', subtype: 'unknown_record' })]);
  });

  it('marks a tool call left executing as interrupted', () => {
    const parsed = parseGeminiTranscript(
      lines(header, {
        id: 'm1',
        timestamp: '2026-06-01T09:00:05.000Z',
        type: 'gemini',
        content: '',
        toolCalls: [{ id: 'c1', name: 'run', args: {}, status: 'executing', timestamp: '2026-06-01T09:00:06.000Z' }],
      }),
    );
    expect(parsed.blocks).toEqual([
      expect.objectContaining({ type: 'tool_use', status: 'error', error: expect.stringContaining('interrupted') }),
    ]);
  });

  it('says so when a file is neither JSONL nor one JSON document', () => {
    const parsed = parseGeminiTranscript('{\n  "not": "closed"\n');
    expect(parsed.blocks).toEqual([]);
    expect(parsed.warnings.map((warning) => warning.code)).toContain('INVALID_FILE');
  });
});
