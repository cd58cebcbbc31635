import { describe, expect, it } from 'vitest';
import {
  ClaudeCodeSummaryScan,
  forEachLine,
  parseClaudeCodeTranscript,
  parseGeminiTranscript,
} from '../../../src/backends/index.js';
import {
  applyEvents,
  emptyConversation,
  type StreamEvent,
  type UnsequencedEvent,
} from '../../../src/conversation/index.js';
import { assistantRecord, jsonl, systemRecord, userRecord } from '../../fixtures/transcripts/shapes.js';

/** Shapes seen in real transcripts that the frozen fixtures do not have (see fixtures/transcripts/shapes.ts). */

function fold(events: UnsequencedEvent[]) {
  return applyEvents(
    emptyConversation('s'),
    events.map((event, seq) => ({ ...event, sessionId: 's', seq }) as StreamEvent),
  );
}

function scanned(text: string) {
  const scan = new ClaudeCodeSummaryScan();
  forEachLine(text, (line, number, terminated) => scan.line(line, number, terminated));
  scan.end();
  return fold(scan.summary().metadata);
}

describe('turn counts', () => {
  const onePrompt = jsonl([
    userRecord('u-1', null, 'Rename the flag'),
    assistantRecord('a-1', 'u-1', 'Renamed it.', { stopReason: null }),
  ]);

  it('a finished Claude Code 2.x file whose assistant records all say stop_reason null counts its last exchange as a turn', () => {
    expect(fold(parseClaudeCodeTranscript(onePrompt).events).metrics.turns).toBe(1);
    expect(scanned(onePrompt).metrics.turns).toBe(1);
  });

  it('counts each of two prompts once, and a turn_duration record ends its turn once', () => {
    const text = jsonl([
      userRecord('u-1', null, 'First'),
      assistantRecord('a-1', 'u-1', 'One.'),
      systemRecord('t-1', 'a-1', { subtype: 'turn_duration', durationMs: 1200 }),
      userRecord('u-2', 't-1', 'Second'),
      assistantRecord('a-2', 'u-2', 'Two.'),
    ]);
    expect(fold(parseClaudeCodeTranscript(text).events).metrics.turns).toBe(2);
    expect(scanned(text).metrics.turns).toBe(2);
  });

  it('a file being written (live) keeps its last turn open', () => {
    expect(fold(parseClaudeCodeTranscript(onePrompt, { live: true }).events).metrics.turns).toBe(0);
  });

  it('a Gemini CLI session whose answers end with tool calls counts a turn per prompt', () => {
    const header = {
      sessionId: '7e8f9a0b-1c2d-4e3f-8a9b-0c1d2e3f4a5b',
      projectHash: 'ab12',
      startTime: '2026-09-01T10:00:00Z',
    };
    const call = (id: string) => ({
      id,
      name: 'read_file',
      args: { path: 'a.ts' },
      status: 'success',
      timestamp: '2026-09-01T10:00:02Z',
      result: [{ functionResponse: { id, name: 'read_file', response: { output: 'x' } } }],
    });
    const text = jsonl([
      JSON.stringify(header),
      JSON.stringify({ id: 'm1', timestamp: '2026-09-01T10:00:01Z', type: 'user', content: [{ text: 'Read a.ts' }] }),
      JSON.stringify({
        id: 'm2',
        timestamp: '2026-09-01T10:00:02Z',
        type: 'gemini',
        content: 'Reading it.',
        toolCalls: [call('c1')],
        model: 'gemini-2.5-pro',
        tokens: { input: 100, output: 10, cached: 0, thoughts: 0, tool: 0, total: 110 },
      }),
      JSON.stringify({ id: 'm3', timestamp: '2026-09-01T10:00:03Z', type: 'user', content: [{ text: 'And b.ts' }] }),
      JSON.stringify({
        id: 'm4',
        timestamp: '2026-09-01T10:00:04Z',
        type: 'gemini',
        content: '',
        toolCalls: [call('c2')],
        model: 'gemini-2.5-pro',
        tokens: { input: 120, output: 10, cached: 0, thoughts: 0, tool: 0, total: 130 },
      }),
    ]);
    expect(fold(parseGeminiTranscript(text).events).metrics.turns).toBe(2);
  });
});

describe('Claude Code 1.0.x system records without a subtype', () => {
  const text = jsonl([
    userRecord('u-1', null, 'Plan the refactor', { version: '1.0.51' }),
    systemRecord(
      's-1',
      'u-1',
      { content: 'Claude Opus 4 limit reached, now using Sonnet 4', level: 'warning', isMeta: false },
      { version: '1.0.51' },
    ),
    systemRecord('s-2', 's-1', { content: 'PreToolUse:Bash [check.sh] failed', level: 'error' }, { version: '1.0.51' }),
    systemRecord('s-3', 's-2', { content: 'Running PostToolUse hooks…', level: 'info' }, { version: '1.0.51' }),
    assistantRecord('a-1', 's-3', 'Here is the plan.', { version: '1.0.51', stopReason: 'end_turn' }),
  ]);

  it('are shown as system blocks with their level, not hidden as unknown records', () => {
    const system = parseClaudeCodeTranscript(text).blocks.filter((block) => block.type === 'system');
    expect(system.map((block) => [block.subtype, block.content, (block.data as { level?: string }).level])).toEqual([
      ['info', 'warning: Claude Opus 4 limit reached, now using Sonnet 4', 'warning'],
      ['error', 'PreToolUse:Bash [check.sh] failed', 'error'],
      ['info', 'Running PostToolUse hooks…', 'info'],
    ]);
  });
});

describe('cost of a transcript that records usage but no cost', () => {
  const usage = {
    input_tokens: 1_000_000,
    output_tokens: 100_000,
    cache_read_input_tokens: 0,
    cache_creation_input_tokens: 0,
  };
  const text = jsonl([
    userRecord('u-1', null, 'Explain the build'),
    assistantRecord('a-1', 'u-1', 'It uses tsc.', { model: 'claude-sonnet-4-5-20250929', usage }),
    userRecord('u-2', 'a-1', 'And the tests?'),
    assistantRecord('a-2', 'u-2', 'Vitest.', { model: 'some-private-model', usage }),
  ]);

  it('is priced from the price table, marked as estimated; a model the table lacks keeps the cost unknown', () => {
    // claude-sonnet-4-5: $3 per million input, $15 per million output.
    const metrics = fold(parseClaudeCodeTranscript(text).events).metrics;
    expect(metrics.costUsd).toBeCloseTo(3 + 1.5, 6);
    expect(metrics).toMatchObject({ costEstimated: true, costUnknown: true });
    expect(scanned(text)).toMatchObject({ metrics: { costUsd: expect.closeTo(4.5, 6), costEstimated: true } });
  });

  it('a recorded cost is used as it is, never estimated', () => {
    const recorded = jsonl([
      userRecord('u-1', null, 'Explain the build'),
      assistantRecord('a-1', 'u-1', 'It uses tsc.', { usage, extra: { costUSD: 0.25 } }),
    ]);
    const metrics = fold(parseClaudeCodeTranscript(recorded).events).metrics;
    expect(metrics.costUsd).toBeCloseTo(0.25, 6);
    expect(metrics.costEstimated).toBeUndefined();
  });
});

describe('images and documents in user messages', () => {
  it('keep their data in the prompt block, for a client to show on request; one too large is named with its size', () => {
    const small = Buffer.from('a tiny png').toString('base64');
    const large = 'A'.repeat(8 * 1024 * 1024 + 4);
    const text = jsonl([
      userRecord('u-1', null, [
        { type: 'text', text: 'Look' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: small } },
        { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: large } },
      ]),
    ]);
    const prompt = parseClaudeCodeTranscript(text).blocks[0]!;
    expect(prompt).toMatchObject({
      type: 'user_message',
      content: 'Look\n\n[image: image/png]\n\n[document: application/pdf]',
    });
    expect((prompt as { metadata?: unknown }).metadata).toEqual({
      attachments: [
        { type: 'image', mediaType: 'image/png', data: small, bytes: 10 },
        { type: 'document', mediaType: 'application/pdf', bytes: 6291459, omitted: 'too large to keep in the session' },
      ],
    });
  });
});
