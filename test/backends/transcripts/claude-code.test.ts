import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ClaudeCodeParser,
  LineSplitter,
  parseClaudeCodeTranscript,
  type ParsedNativeTranscript,
} from '../../../src/backends/index.js';
import {
  ConversationBlockSchema,
  TurnMetadataSchema,
  applyEvents,
  emptyConversation,
  type ConversationBlock,
  type StreamEvent,
  type UnsequencedEvent,
  type SubagentBlock,
  type SystemBlock,
  type ThinkingBlock,
  type ToolResultBlock,
  type ToolUseBlock,
} from '../../../src/conversation/index.js';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'transcripts', 'claude-code', '-home-dev-src-demo');
const MAIN_ID = '5f2b1c9e-3d4a-4e8b-9f10-2a6c7d8e9f01';
const OLD_ID = '9a7d4c21-0b6e-4f3a-8d52-7c1e0f9b3a64';
const AGENT_ID = 'a0f3c9d2e1b4';

const mainText = readFileSync(join(FIXTURES, `${MAIN_ID}.jsonl`), 'utf8');
const oldText = readFileSync(join(FIXTURES, `${OLD_ID}.jsonl`), 'utf8');
const agentText = readFileSync(join(FIXTURES, MAIN_ID, 'subagents', `agent-${AGENT_ID}.jsonl`), 'utf8');

function block<T extends ConversationBlock>(parsed: { blocks: ConversationBlock[] }, id: string): T {
  const found = parsed.blocks.find((candidate) => candidate.id === id);
  if (found === undefined)
    throw new Error(`no block ${id} in ${parsed.blocks.map((candidate) => candidate.id).join(', ')}`);
  return found as T;
}

function systemBlocks(parsed: { blocks: ConversationBlock[] }, subtype: SystemBlock['subtype']): SystemBlock[] {
  return parsed.blocks.filter(
    (candidate): candidate is SystemBlock => candidate.type === 'system' && candidate.subtype === subtype,
  );
}

/** The events as a store would number them, folded by the one reducer. */
function reduce(events: UnsequencedEvent[], sessionId = 's'): ReturnType<typeof emptyConversation> {
  const numbered = events.map((event, seq) => ({ ...event, sessionId, seq, at: event.at ?? 0 }) as StreamEvent);
  return applyEvents(emptyConversation(sessionId), numbered);
}

function lines(...records: unknown[]): string {
  return records.map((record) => (typeof record === 'string' ? record : JSON.stringify(record))).join('\n') + '\n';
}

describe('parseClaudeCodeTranscript on a Claude Code 2.1.22x session', () => {
  const parsed = parseClaudeCodeTranscript(mainText);

  it('produces only blocks and metadata that match the conversation schemas', () => {
    for (const event of parsed.events) {
      if (event.type === 'block_complete')
        expect(ConversationBlockSchema.safeParse(event.block).success, event.block.id).toBe(true);
      else if (event.type === 'metadata_update')
        expect(TurnMetadataSchema.safeParse(event.metadata).success).toBe(true);
      else throw new Error(`unexpected ${event.type}`);
    }
    expect(parsed.warnings).toEqual([]);
  });

  it('keeps the records in chain order, one block per content block', () => {
    expect(parsed.blocks.map((candidate) => candidate.id).slice(2, 16)).toEqual([
      'u-0001',
      'at-0002',
      'a-0003',
      'a-0004',
      'a-0005',
      'u-0006',
      'pg-0007',
      'a-0008',
      'u-0009',
      'a-0010',
      'subagent-toolu_01Agent',
      'u-0011',
      'a-0012',
      's-0013',
    ]);
    expect(block(parsed, 'u-0001')).toMatchObject({
      type: 'user_message',
      content: 'Add a --verbose flag to the CLI',
      createdAt: Date.parse('2026-08-01T10:00:00.000Z'),
    });
    expect(block(parsed, 'a-0004')).toMatchObject({
      type: 'assistant_text',
      content: "I'll look at how the CLI parses its flags first.",
      model: 'claude-opus-5-5',
    });
  });

  it('counts the usage of one API message once, though every record of it repeats it', () => {
    const first = parsed.usage[0]!;
    // msg_01A spans three records (thinking, text, tool_use); the largest output count is the final one.
    expect(first.metadata.usage).toEqual({
      inputTokens: 3,
      outputTokens: 120,
      cacheReadTokens: 14000,
      cacheWriteTokens: 900,
    });
    const withUsage = parsed.usage.filter((entry) => entry.metadata.usage !== undefined);
    expect(withUsage).toHaveLength(7); // msg_01A, B, C, D, E, the API error message and msg_01F
  });

  it('turns empty signed thinking and redacted_thinking into redacted thinking blocks', () => {
    expect(block<ThinkingBlock>(parsed, 'a-0003')).toMatchObject({ type: 'thinking', content: '', redacted: true });
    expect(block<ThinkingBlock>(parsed, 'a-0021')).toMatchObject({ type: 'thinking', content: '', redacted: true });
  });

  it('pairs tool calls with their results, with the error flag and the structured result', () => {
    expect(block<ToolUseBlock>(parsed, 'a-0005')).toMatchObject({
      type: 'tool_use',
      toolUseId: 'toolu_01Read',
      name: 'Read',
      status: 'success',
    });
    const read = block<ToolResultBlock>(parsed, 'u-0006');
    expect(read).toMatchObject({ type: 'tool_result', toolUseId: 'toolu_01Read', isError: false });
    expect(read.content).toContain('export function main');
    // The structured result is kept without what repeats the text (the file's content, a failure's message).
    expect(read.output).toEqual({
      type: 'text',
      file: { filePath: '/home/dev/src/demo/src/cli.ts', numLines: 3, startLine: 1, totalLines: 3 },
    });
    expect(block<ToolUseBlock>(parsed, 'a-0008')).toMatchObject({ status: 'error', error: 'Error: Exit code 1' });
    const failed = block<ToolResultBlock>(parsed, 'u-0009');
    expect(failed).toMatchObject({ isError: true, content: expect.stringContaining('FAIL test/cli.test.ts') });
    expect(failed.output).toBeUndefined();
    // An Agent result keeps its numbers but not its content parts, which are the text.
    expect(block<ToolResultBlock>(parsed, 'u-0011').output).toEqual({
      status: 'completed',
      agentId: AGENT_ID,
      prompt: 'Locate where flags are parsed and list every flag.',
      totalDurationMs: 20500,
      totalTokens: 18200,
      totalToolUseCount: 2,
      usage: {
        input_tokens: 12,
        cache_creation_input_tokens: 4000,
        cache_read_input_tokens: 12000,
        output_tokens: 210,
      },
    });
  });

  it('marks a tool call with no result at the end of the transcript as interrupted', () => {
    expect(block<ToolUseBlock>(parsed, 'a-0027')).toMatchObject({
      name: 'Write',
      status: 'error',
      error: expect.stringContaining('interrupted'),
    });
  });

  it('links an Agent call to its subagent thread through the agent id of its result', () => {
    const subagent = block<SubagentBlock>(parsed, 'subagent-toolu_01Agent');
    expect(subagent).toMatchObject({
      type: 'subagent',
      subagentId: AGENT_ID,
      name: 'Explore',
      input: 'Locate where flags are parsed and list every flag.',
      status: 'success',
      output: 'Flags are parsed in src/args.ts via parseArgs(); the flags are --help and --version.',
      usage: { inputTokens: 12, outputTokens: 210, cacheReadTokens: 12000, cacheWriteTokens: 4000 },
    });
    expect(parsed.info.subagents).toEqual([
      { subagentId: AGENT_ID, toolUseId: 'toolu_01Agent', name: 'Explore', linked: true },
    ]);
  });

  it('keeps a compact_boundary and the compact summary as compaction blocks, and reports the compaction', () => {
    const compactions = systemBlocks(parsed, 'compaction');
    expect(compactions.map((candidate) => candidate.id)).toEqual(['b-0016', 'u-0017']);
    expect(compactions[0]!.content).toBe('Conversation compacted, manual (16800 → 2544 tokens)');
    expect(compactions[0]!.data).toMatchObject({
      kind: 'compact_boundary',
      trigger: 'manual',
      preTokens: 16800,
      postTokens: 2544,
      logicalParentUuid: 'u-0015',
    });
    expect(compactions[1]!.content).toContain('Pending Tasks:');
    expect(parsed.info.compactions).toEqual([
      {
        at: Date.parse('2026-08-01T10:05:04.000Z'),
        messagesBefore: 3,
        trigger: 'manual',
        preTokens: 16800,
        postTokens: 2544,
        summary: compactions[1]!.content,
        blockId: 'u-0017',
      },
    ]);
  });

  it('keeps CLI-wrapped and injected user text as system blocks, not as the user speaking', () => {
    expect(block<SystemBlock>(parsed, 'u-0015')).toMatchObject({
      subtype: 'info',
      content: '/compact keep the flag work',
      data: { kind: 'command' },
    });
    expect(block<SystemBlock>(parsed, 'u-0018')).toMatchObject({ subtype: 'info', data: { kind: 'meta' } });
    expect(block<SystemBlock>(parsed, 'u-0019')).toMatchObject({
      subtype: 'info',
      content: 'Compacted (ctrl+o to see full summary)',
      data: { kind: 'command_output' },
    });
    expect(block<SystemBlock>(parsed, 'u-0024')).toMatchObject({
      subtype: 'interrupted',
      content: '[Request interrupted by user]',
    });
    const humans = parsed.blocks
      .filter((candidate) => candidate.type === 'user_message')
      .map((candidate) => candidate.id);
    expect(humans).toEqual(['u-0001', 'u-0020', 'at-0025']);
  });

  it('keeps an image of a prompt as a placeholder and notes it', () => {
    expect(block(parsed, 'u-0020')).toMatchObject({
      content: 'Now add tests for the verbose output\n\n[image: image/png]',
      metadata: { attachments: [{ type: 'image', mediaType: 'image/png' }] },
    });
  });

  it('turns a prompt queued while the agent was busy into a user message', () => {
    expect(block(parsed, 'at-0025')).toMatchObject({
      type: 'user_message',
      content: 'also update the README',
      metadata: { queued: true },
    });
  });

  it('keeps API errors, hook summaries, notices and attachments as system blocks', () => {
    expect(block<SystemBlock>(parsed, 's-0022')).toMatchObject({
      subtype: 'error',
      content: 'API error: Overloaded (retry 1)',
    });
    expect(block<SystemBlock>(parsed, 'a-0023')).toMatchObject({
      subtype: 'error',
      data: { kind: 'api_error', status: 529 },
    });
    expect(block<SystemBlock>(parsed, 's-0013')).toMatchObject({
      subtype: 'info',
      data: { kind: 'stop_hook_summary' },
    });
    expect(block<SystemBlock>(parsed, 's-0029')).toMatchObject({
      subtype: 'info',
      content: 'Model switched to claude-opus-5-5',
    });
    expect(block<SystemBlock>(parsed, 'at-0002')).toMatchObject({
      subtype: 'info',
      content: 'Attachment hook_success',
      data: { kind: 'attachment' },
    });
  });

  it('keeps every record kind it does not map as unknown_record with the record in data, and never crashes', () => {
    const unknown = systemBlocks(parsed, 'unknown_record');
    const kinds = unknown.map((candidate) => (candidate.data as { record: { type?: string } }).record.type);
    expect(kinds).toEqual([
      'permission-mode',
      'file-history-snapshot',
      'progress',
      'queue-operation',
      'queue-operation',
      'worktree-state',
      'system',
      'ai-title',
    ]);
    const future = unknown.find((candidate) => candidate.id === 's-0028')!;
    expect(future.data).toMatchObject({
      source: 'claude-code',
      record: { subtype: 'brand_new_subtype', futureField: { nested: [1, 2, 3] } },
    });
  });

  it('folds turn durations and cumulative cost states into per-turn metadata', () => {
    expect(
      parsed.usage.filter((entry) => entry.metadata.durationMs !== undefined).map((entry) => entry.metadata.durationMs),
    ).toEqual([40500]);
    const costs = parsed.usage
      .filter((entry) => entry.metadata.costUsd !== undefined)
      .map((entry) => entry.metadata.costUsd);
    expect(costs[0]).toBeCloseTo(0.0421);
    expect(costs[1]).toBeCloseTo(0.0587 - 0.0421);
    expect(parsed.info.costUnknown).toBe(false);
  });

  it('reports the session: native id, titles, first prompt, cwd, version, model and time span', () => {
    expect(parsed.nativeSessionId).toBe(MAIN_ID);
    expect(parsed.info).toMatchObject({
      nativeSessionId: MAIN_ID,
      generatedTitle: 'Add verbose flag to CLI',
      firstUserMessage: 'Add a --verbose flag to the CLI',
      cwd: '/home/dev/src/demo',
      version: '2.1.221',
      model: 'claude-opus-5-5',
      startedAt: Date.parse('2026-08-01T10:00:00.000Z'),
      endedAt: Date.parse('2026-08-01T10:06:34.000Z'),
      messageCount: 6,
    });
  });

  it('rebuilds through the reducer into the same blocks, with metrics from the real usage', () => {
    const state = reduce(parsed.events);
    expect(state.blocks.map((candidate) => candidate.id)).toEqual(parsed.blocks.map((candidate) => candidate.id));
    expect(state.metrics.turns).toBe(3); // two ended by a stop reason, the last (a Write left without a result) by the file's end
    expect(state.metrics.outputTokens).toBe(120 + 60 + 70 + 90 + 30 + 0 + 95);
    expect(state.metrics.costUsd).toBeCloseTo(0.0587);
  });
});

describe('parseClaudeCodeTranscript on a Claude Code 2.0.46 session (inline sidechain, rewind)', () => {
  const parsed = parseClaudeCodeTranscript(oldText);

  it('splits inline sidechain records into a subagent thread linked to the Task call by its prompt', () => {
    expect(parsed.subagents).toHaveLength(1);
    const thread = parsed.subagents[0]!;
    expect(thread.id).toBe('sidechain-o-s-0001');
    expect(thread.blocks.map((candidate) => candidate.type)).toEqual(['user_message', 'assistant_text']);
    expect(block<SubagentBlock>(parsed, 'subagent-toolu_oTask')).toMatchObject({
      subagentId: 'sidechain-o-s-0001',
      name: 'general-purpose',
      status: 'success',
    });
    expect(parsed.blocks.some((candidate) => candidate.id === 'o-s-0001')).toBe(false);
  });

  it('takes the abandoned branch of a rewind out of the thread and keeps it, with its usage, in a system block', () => {
    const ids = parsed.blocks.map((candidate) => candidate.id);
    expect(ids).not.toContain('o-u-0005');
    expect(ids).not.toContain('o-a-0006');
    const rewind = block<SystemBlock>(parsed, 'o-u-0007:rewind');
    expect(ids.indexOf('o-u-0007:rewind')).toBe(ids.indexOf('o-u-0007') - 1);
    expect(rewind.data).toMatchObject({ kind: 'rewind', forkUuid: 'o-a-0004' });
    const abandoned = (rewind.data as { abandonedBlocks: ConversationBlock[] }).abandonedBlocks;
    expect(abandoned.map((candidate) => candidate.id)).toEqual(['o-u-0005', 'o-a-0006']);
    // The abandoned answer's tokens were spent: its usage still counts.
    expect(parsed.usage.some((entry) => entry.metadata.usage?.outputTokens === 40)).toBe(true);
    expect(parsed.info.messageCount).toBe(4);
  });

  it('reads the cost of old records that carried costUSD', () => {
    const state = reduce(parsed.events);
    expect(state.metrics.costUsd).toBeCloseTo(0.0031 + 0.0042 + 0.0011 + 0.0012 + 0.0009 + 0.0008);
  });

  it('uses the legacy summary record as a generated title, and keeps the record', () => {
    expect(parsed.info.generatedTitle).toBe('Plan the release notes');
    expect(parsed.blocks[0]).toMatchObject({
      id: 'line-1',
      subtype: 'unknown_record',
      data: { record: { type: 'summary', leafUuid: 'o-a-0004' } },
    });
  });

  it('keeps thinking text when the transcript has it', () => {
    const thinking = block<ThinkingBlock>(parsed, 'o-a-0002:0');
    expect(thinking.content).toContain('release notes');
    expect(thinking.redacted).toBeUndefined();
  });
});

describe('a subagent file', () => {
  it('goes to the subagent thread, and drops its replays of the parent session messages', () => {
    const main = parseClaudeCodeTranscript(mainText, { collectMessageIds: true });
    expect(main.info.subagents[0]!.subagentId).toBe(AGENT_ID);
    const parentMessageIds = new Set(['msg_01A', 'msg_01B', 'msg_01C', 'msg_01D', 'msg_01E', 'msg_01F']);
    const agent = parseClaudeCodeTranscript(agentText, {
      conversationId: AGENT_ID,
      parentMessageIds,
      file: 'agent.jsonl',
    });
    expect(agent.blocks).toEqual([]);
    expect(agent.subagents).toHaveLength(1);
    const thread = agent.subagents[0]!;
    expect(thread.id).toBe(AGENT_ID);
    expect(thread.blocks.map((candidate) => candidate.id)).toEqual(['sa-0001', 'sa-0003', 'sa-0004', 'sa-0005']);
    expect(thread.blocks.find((candidate) => candidate.id === 'sa-0003')).toMatchObject({
      status: 'success',
      name: 'Grep',
    });
    expect(agent.warnings).toEqual([expect.objectContaining({ code: 'PARENT_REPLAY', file: 'agent.jsonl' })]);
    expect(agent.usage.every((entry) => entry.conversationId === AGENT_ID)).toBe(true);
    expect(agent.info.firstUserMessage).toBe('Locate where flags are parsed and list every flag.');
  });
});

describe('failure paths', () => {
  const user = (uuid: string, parentUuid: string | null, content: string) => ({
    type: 'user',
    uuid,
    parentUuid,
    sessionId: 's',
    timestamp: '2026-08-01T10:00:00.000Z',
    message: { role: 'user', content },
  });
  const text = (uuid: string, parentUuid: string, content: string) => ({
    type: 'assistant',
    uuid,
    parentUuid,
    sessionId: 's',
    timestamp: '2026-08-01T10:00:01.000Z',
    message: {
      id: `msg_${uuid}`,
      role: 'assistant',
      content: [{ type: 'text', text: content }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 1, output_tokens: 1 },
    },
  });

  it('reports a malformed line with its number, skips it and parses the rest', () => {
    const parsed = parseClaudeCodeTranscript(
      lines(user('u1', null, 'hello'), '{"type":"assistant","uuid":', text('a1', 'u1', 'hi')),
    );
    expect(parsed.blocks.map((candidate) => candidate.id)).toEqual(['u1', 'a1']);
    expect(parsed.warnings).toEqual([
      { code: 'MALFORMED_LINE', line: 2, message: expect.stringContaining('line 2 is not valid JSON') },
    ]);
  });

  it('reports JSON that is not a record object and skips it', () => {
    const parsed = parseClaudeCodeTranscript(lines(user('u1', null, 'hello'), '[1,2,3]', '42'));
    expect(parsed.blocks).toHaveLength(1);
    expect(parsed.warnings.map((warning) => [warning.code, warning.line])).toEqual([
      ['NOT_A_RECORD', 2],
      ['NOT_A_RECORD', 3],
    ]);
  });

  it('reports a truncated last line (the file ends mid-record) and keeps everything before it', () => {
    const parsed = parseClaudeCodeTranscript(
      `${lines(user('u1', null, 'hello'), text('a1', 'u1', 'hi'))}{"type":"user","uuid":"u2","mess`,
    );
    expect(parsed.blocks.map((candidate) => candidate.id)).toEqual(['u1', 'a1']);
    expect(parsed.warnings).toEqual([{ code: 'TRUNCATED_LINE', line: 3, message: expect.stringContaining('cut off') }]);
  });

  it('keeps a record whose parent is missing, in file order, with a warning', () => {
    const parsed = parseClaudeCodeTranscript(
      lines(
        user('u1', null, 'hello'),
        text('a1', 'u1', 'hi'),
        user('u2', 'lost-in-compaction', 'again'),
        text('a2', 'u2', 'ok'),
      ),
    );
    expect(parsed.blocks.map((candidate) => candidate.id)).toEqual(['u1', 'a1', 'u2', 'a2']);
    expect(parsed.warnings).toEqual([
      { code: 'MISSING_PARENT', line: 3, message: expect.stringContaining('names parent lost-in-compaction') },
    ]);
  });

  it('places records written out of file order (a child before its parent) by the parentUuid chain', () => {
    const parsed = parseClaudeCodeTranscript(
      lines(
        user('u1', null, 'hello'),
        text('a2', 'u2', 'second answer'),
        text('a1', 'u1', 'first answer'),
        user('u2', 'a1', 'more'),
        text('a3', 'a2', 'third'),
      ),
    );
    expect(parsed.blocks.map((candidate) => candidate.id)).toEqual(['u1', 'a1', 'u2', 'a2', 'a3']);
    expect(parsed.warnings).toEqual([]);
  });

  it('lets a record whose parent never comes go in file order once the window is full, and at the end', () => {
    const records = [
      user('u1', 'earlier-file', 'hello'),
      text('a1', 'u1', 'hi'),
      user('u2', 'a1', 'again'),
      text('a2', 'u2', 'ok'),
    ];
    const events: UnsequencedEvent[] = [];
    const parser = new ClaudeCodeParser({ emit: (event) => events.push(event), windowRecords: 2 });
    records.forEach((record, index) => {
      parser.line(JSON.stringify(record), index + 1, true);
    });
    parser.end();
    expect(events.flatMap((event) => (event.type === 'block_complete' ? [event.block.id] : []))).toEqual([
      'u1',
      'a1',
      'u2',
      'a2',
    ]);
    expect(parser.warnings).toEqual([expect.objectContaining({ code: 'MISSING_PARENT', line: 1 })]);
    expect(parseClaudeCodeTranscript(lines(...records)).blocks.map((candidate) => candidate.id)).toEqual([
      'u1',
      'a1',
      'u2',
      'a2',
    ]);
  });

  it('counts a turn whose last assistant record has no stop_reason once the next user prompt starts', () => {
    const open = (uuid: string, parentUuid: string, content: string) => {
      const record = text(uuid, parentUuid, content);
      return { ...record, message: { ...record.message, stop_reason: null } };
    };
    const parsed = parseClaudeCodeTranscript(
      lines(
        user('u1', null, 'one'),
        open('a1', 'u1', 'first, cut off'),
        user('u2', 'a1', 'two'),
        text('a2', 'u2', 'second'),
        user('u3', 'a2', 'three'),
        open('a3', 'u3', 'still going'),
      ),
    );
    const state = reduce(parsed.events);
    // The first turn (no stop_reason, then a prompt), the second (end_turn), and the third: the file's end closes it.
    expect(state.metrics.turns).toBe(3);
    expect(parsed.blocks.map((candidate) => candidate.id)).toEqual(['u1', 'a1', 'u2', 'a2', 'u3', 'a3']);
  });

  it('keeps a record of an unknown type, and one without any type, as unknown_record', () => {
    const parsed = parseClaudeCodeTranscript(lines({ type: 'hologram', uuid: 'h1', payload: [1] }, { hello: 'world' }));
    expect(parsed.blocks).toEqual([
      expect.objectContaining({
        id: 'h1',
        subtype: 'unknown_record',
        data: { source: 'claude-code', record: { type: 'hologram', uuid: 'h1', payload: [1] } },
      }),
      expect.objectContaining({
        id: 'line-2',
        subtype: 'unknown_record',
        data: { source: 'claude-code', record: { hello: 'world' } },
      }),
    ]);
    expect(parsed.warnings).toEqual([]);
  });

  it('ignores unknown fields and odd types of known ones', () => {
    const parsed = parseClaudeCodeTranscript(
      lines(
        { ...user('u1', null, 'hello'), brandNew: { deeply: ['nested'] }, timestamp: 12 },
        {
          type: 'assistant',
          uuid: 'a1',
          parentUuid: 'u1',
          message: { id: 7, content: 'plain string content', usage: 'none' },
        },
        {
          type: 'user',
          uuid: 'u2',
          parentUuid: 'a1',
          message: {
            content: [{ type: 'tool_result', tool_use_id: 'nowhere', content: { unexpected: true } }, 'stray'],
          },
        },
      ),
    );
    expect(parsed.blocks.map((candidate) => [candidate.id, candidate.type])).toEqual([
      ['u1', 'user_message'],
      ['a1', 'assistant_text'],
      ['u2', 'tool_result'],
    ]);
    expect(block<ToolResultBlock>(parsed, 'u2').content).toBe('{"unexpected":true}');
    for (const event of parsed.events)
      if (event.type === 'block_complete') expect(ConversationBlockSchema.safeParse(event.block).success).toBe(true);
  });

  it("keeps a Bash result's structured fields but not the stdout that is its text", () => {
    const parsed = parseClaudeCodeTranscript(
      lines(
        {
          type: 'assistant',
          uuid: 'a1',
          parentUuid: null,
          message: { id: 'm1', content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'ls' } }] },
        },
        {
          type: 'user',
          uuid: 'u1',
          parentUuid: 'a1',
          message: { content: [{ type: 'tool_result', tool_use_id: 't1', content: 'a.txt\nb.txt' }] },
          toolUseResult: { stdout: 'a.txt\nb.txt', stderr: 'warning: x', interrupted: false, isImage: false },
        },
      ),
    );
    expect(block<ToolResultBlock>(parsed, 'u1').output).toEqual({
      stderr: 'warning: x',
      interrupted: false,
      isImage: false,
    });
  });

  it('drops a record repeated with the same uuid (a resumed session copying earlier records)', () => {
    const parsed = parseClaudeCodeTranscript(
      lines(user('u1', null, 'hello'), text('a1', 'u1', 'hi'), user('u1', null, 'hello'), text('a1', 'u1', 'hi')),
    );
    expect(parsed.blocks.map((candidate) => candidate.id)).toEqual(['u1', 'a1']);
    expect(parsed.usage.filter((entry) => entry.metadata.usage !== undefined)).toHaveLength(1);
  });

  it('parses an empty transcript into nothing', () => {
    const parsed = parseClaudeCodeTranscript('\n\n');
    expect(parsed).toMatchObject({ blocks: [], subagents: [], warnings: [] });
  });
});

describe('streaming', () => {
  function streamed(
    text: string,
    chunkSize: number,
    options: { windowRecords?: number } = {},
  ): ParsedNativeTranscript['events'] {
    const events: UnsequencedEvent[] = [];
    const parser = new ClaudeCodeParser({ emit: (event) => events.push(event), ...options });
    const splitter = new LineSplitter((line, number, terminated) => parser.line(line, number, terminated));
    const bytes = Buffer.from(text);
    for (let offset = 0; offset < bytes.length; offset += chunkSize)
      splitter.push(bytes.subarray(offset, offset + chunkSize));
    splitter.end();
    parser.end();
    return events;
  }

  it('gives the same events from byte chunks of any size as from the whole text', () => {
    const whole = parseClaudeCodeTranscript(mainText).events;
    for (const size of [1, 7, 256, 4096]) expect(streamed(mainText, size)).toEqual(whole);
  });

  it('with no window, still ends with the right tool status: a late result re-emits the call', () => {
    const events = streamed(mainText, 4096, { windowRecords: 0 });
    const state = reduce(events);
    const bash = state.blocks.find((candidate) => candidate.id === 'a-0008') as ToolUseBlock;
    expect(bash.status).toBe('error');
    const read = state.blocks.find((candidate) => candidate.id === 'a-0005') as ToolUseBlock;
    expect(read.status).toBe('success');
    expect(events.filter((event) => event.type === 'block_complete' && event.block.id === 'a-0005')).toHaveLength(2);
  });

  it('with a window smaller than the abandoned branch, names where the already emitted part of it starts', () => {
    const events = streamed(oldText, 4096, { windowRecords: 1 });
    const state = reduce(events);
    const rewind = state.blocks.find((candidate) => candidate.id === 'o-u-0007:rewind') as SystemBlock;
    expect(rewind.data).toMatchObject({ kind: 'rewind', abandonedEmittedFromRecord: 'o-u-0005' });
  });
});
