import { describe, expect, it } from 'vitest';
import {
  createClaudeSdkBackend,
  createGeminiCliBackend,
  describeConversions,
  geminiProjectHash,
  parseClaudeCodeTranscript,
  parseGeminiTranscript,
  writeClaudeCodeTranscript,
  writeGeminiSession,
  type PortableHistory,
} from '../../../src/backends/index.js';
import type { ConversationBlock } from '../../../src/conversation/index.js';

const NATIVE_ID = '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b';
const CWD = '/home/dev/project';
let seq = 0;
const at = (n: number) => Date.UTC(2026, 10, 25, 12, 0, n);
const user = (content: string): ConversationBlock => ({
  id: `u${seq}`,
  seq: seq++,
  type: 'user_message',
  content,
  createdAt: at(seq),
  completedAt: at(seq),
});
const answer = (content: string): ConversationBlock => ({
  id: `a${seq}`,
  seq: seq++,
  type: 'assistant_text',
  content,
  createdAt: at(seq),
  completedAt: at(seq),
});
const thought = (content: string): ConversationBlock => ({
  id: `t${seq}`,
  seq: seq++,
  type: 'thinking',
  content,
  createdAt: at(seq),
  completedAt: at(seq),
});
const call = (toolUseId: string, name: string, input: unknown): ConversationBlock => ({
  id: `c${seq}`,
  seq: seq++,
  type: 'tool_use',
  toolUseId,
  name,
  input,
  status: 'success',
  createdAt: at(seq),
  completedAt: at(seq),
});
const result = (toolUseId: string, content: string, isError = false): ConversationBlock => ({
  id: `r${seq}`,
  seq: seq++,
  type: 'tool_result',
  toolUseId,
  content,
  isError,
  createdAt: at(seq),
  completedAt: at(seq),
});
const notice = (): ConversationBlock => ({
  id: `s${seq}`,
  seq: seq++,
  type: 'system',
  subtype: 'error',
  content: 'The back end failed.',
  createdAt: at(seq),
  completedAt: at(seq),
});

function history(): PortableHistory {
  seq = 0;
  return {
    source: 'claude-code',
    blocks: [
      user('List the files.'),
      thought('The user wants a listing.'),
      call('toolu_01', 'Bash', { command: 'ls' }),
      result('toolu_01', 'a.txt\nb.txt'),
      answer('There are two files.'),
      user('Read a.txt with your own tool.'),
      call('read_file__1', 'read_file', { file_path: 'a.txt' }),
      result('read_file__1', 'hello'),
      notice(),
      answer('It says hello.'),
    ],
  };
}

const texts = (blocks: readonly ConversationBlock[], type: 'user_message' | 'assistant_text') =>
  blocks.flatMap((block) => (block.type === type ? [block.content] : []));

describe('the Claude Code transcript writer', () => {
  it('writes user and assistant records on one parentUuid chain, Bash as a tool_use/tool_result pair, the rest as marked text', () => {
    const written = writeClaudeCodeTranscript(history(), { nativeSessionId: NATIVE_ID, cwd: CWD, now: at(0) });
    const records = written.main
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    let parent: unknown = null;
    for (const record of records) {
      expect(record['parentUuid']).toBe(parent);
      expect(record['sessionId']).toBe(NATIVE_ID);
      parent = record['uuid'];
    }
    const toolUse = records.find((record) => JSON.stringify(record).includes('"tool_use","id":"toolu_01"'));
    const toolResult = records.find((record) => JSON.stringify(record).includes('"tool_result"'));
    expect(toolResult?.['sourceToolAssistantUUID']).toBe(toolUse?.['uuid']);

    const parsed = parseClaudeCodeTranscript(written.main);
    expect(parsed.warnings).toEqual([]);
    expect(texts(parsed.blocks, 'user_message')).toEqual(['List the files.', 'Read a.txt with your own tool.']);
    const answers = texts(parsed.blocks, 'assistant_text');
    expect(answers[0]).toContain('[thinking from claude-code, converted to text]');
    expect(answers).toContain('There are two files.');
    expect(
      answers.some(
        (text) =>
          text.startsWith('[tool call from claude-code, converted to text: read_file {"file_path":"a.txt"}]') &&
          text.endsWith('hello'),
      ),
    ).toBe(true);
    expect(parsed.blocks.find((block) => block.type === 'tool_use')).toMatchObject({
      name: 'Bash',
      toolUseId: 'toolu_01',
      input: { command: 'ls' },
    });
    expect(parsed.blocks.find((block) => block.type === 'tool_result')).toMatchObject({
      toolUseId: 'toolu_01',
      content: 'a.txt\nb.txt',
    });
    expect(written.conversions).toEqual([
      { kind: 'thinking', count: 1 },
      { kind: 'tool_call', count: 1, names: ['read_file'] },
      { kind: 'notice', count: 1 },
    ]);
    expect(describeConversions(written.conversions)).toBe(
      "1 thinking block to marked text; 1 call to tools it does not have to marked text (read_file); 1 Parley notice (errors, interruptions) left in Parley's log only",
    );
  });

  it('closes what a checkpoint compacted with a compact_boundary and the summary the CLI sends the model', () => {
    const input = { ...history(), compacted: { summary: 'The user listed files; two were found.', coversSeq: 4 } };
    const written = writeClaudeCodeTranscript(input, { nativeSessionId: NATIVE_ID, cwd: CWD, now: at(0) });
    const records = written.main
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const boundary = records.findIndex((record) => record['subtype'] === 'compact_boundary');
    expect(boundary).toBeGreaterThan(0);
    expect(records[boundary]).toMatchObject({ parentUuid: null, logicalParentUuid: records[boundary - 1]!['uuid'] });
    expect(records[boundary + 1]).toMatchObject({ isCompactSummary: true, parentUuid: records[boundary]!['uuid'] });
    expect(JSON.stringify(records[boundary + 1])).toContain('The user listed files; two were found.');
    // The compacted turn stays in the file, before the boundary.
    expect(records.slice(0, boundary).some((record) => JSON.stringify(record).includes('List the files.'))).toBe(true);
    expect(JSON.stringify(records[boundary + 2])).toContain('Read a.txt with your own tool.');
  });

  it('an empty history writes an empty file', () => {
    expect(writeClaudeCodeTranscript({ blocks: [] }, { nativeSessionId: NATIVE_ID, cwd: CWD, now: at(0) })).toEqual({
      main: '',
      conversions: [],
    });
  });
});

describe('the Gemini CLI session writer', () => {
  it('writes a header for the project and messages the parser reads back; read_file stays a call, Bash becomes marked text, thinking stays thoughts', () => {
    const written = writeGeminiSession(history(), { nativeSessionId: NATIVE_ID, cwd: CWD, now: at(0) });
    const [header] = written.main.split('\n');
    expect(JSON.parse(header!)).toMatchObject({
      sessionId: NATIVE_ID,
      projectHash: geminiProjectHash(CWD),
      kind: 'main',
    });
    const parsed = parseGeminiTranscript(written.main);
    expect(parsed.warnings).toEqual([]);
    expect(texts(parsed.blocks, 'user_message')).toEqual(['List the files.', 'Read a.txt with your own tool.']);
    const answers = texts(parsed.blocks, 'assistant_text').join('\n');
    expect(answers).toContain('[tool call from claude-code, converted to text: Bash {"command":"ls"}]');
    expect(answers).toContain('There are two files.');
    expect(answers).toContain('It says hello.');
    expect(parsed.blocks.find((block) => block.type === 'thinking')).toMatchObject({
      content: expect.stringContaining('The user wants a listing.'),
    });
    expect(parsed.blocks.find((block) => block.type === 'tool_use')).toMatchObject({
      name: 'read_file',
      input: { file_path: 'a.txt' },
    });
    expect(parsed.blocks.find((block) => block.type === 'tool_result')).toMatchObject({
      content: expect.stringContaining('hello'),
    });
    expect(written.conversions).toEqual([
      { kind: 'tool_call', count: 1, names: ['Bash'] },
      { kind: 'notice', count: 1 },
    ]);
  });

  it('replaces what a checkpoint compacted with a state snapshot, as /compress does, and marks a user message that reads as a command', () => {
    seq = 0;
    const input: PortableHistory = {
      blocks: [
        user('First request.'),
        answer('Done.'),
        user('/compact please'),
        answer('Compacting is not mine to do.'),
      ],
      compacted: { summary: 'The first request was done.', coversSeq: 1 },
    };
    const written = writeGeminiSession(input, { nativeSessionId: NATIVE_ID, cwd: CWD, now: at(0) });
    const lines = written.main
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const replacement = lines.at(-1)!['$set'] as { messages: Array<{ type: string; content: unknown }> };
    expect(replacement.messages.map((message) => message.type)).toEqual(['user', 'gemini', 'user', 'gemini']);
    expect(JSON.stringify(replacement.messages[0])).toContain('<state_snapshot>');
    expect(JSON.stringify(replacement.messages[2])).toContain('[user message] /compact please');
    expect(JSON.stringify(lines.slice(1, -1))).toContain('First request.');
    expect(written.conversions).toEqual([{ kind: 'user_command', count: 1 }]);
    const parsed = parseGeminiTranscript(written.main);
    expect(texts(parsed.blocks, 'user_message').join('\n')).not.toContain('First request.');
  });
});

describe('each native back end reads back what it writes', () => {
  it.each([
    ['claude-sdk', createClaudeSdkBackend()],
    ['gemini-cli', createGeminiCliBackend()],
  ])(
    '%s: writeSessionTranscripts, then its own parseTranscripts, gives the same user messages and answers',
    (_name, backend) => {
      const written = backend.writeSessionTranscripts!(history(), { nativeSessionId: NATIVE_ID, cwd: CWD, now: at(0) });
      const parsed = backend.parseTranscripts!({ main: written.main });
      expect(parsed.warnings).toEqual([]);
      expect(texts(parsed.blocks, 'user_message')).toEqual(['List the files.', 'Read a.txt with your own tool.']);
      expect(texts(parsed.blocks, 'assistant_text').join('\n')).toContain('It says hello.');
    },
  );
});
