import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SDKMessage } from '@anthropic-ai/claude-agent-sdk';
import { describe, expect, it } from 'vitest';
import type {
  UnsequencedEvent,
  SubagentBlock,
  ToolResultBlock,
  ToolUseBlock,
} from '../../../src/conversation/index.js';
import { counterIds } from '../../../src/backends/index.js';
import { ClaudeTurnMapper } from '../../../src/backends/claude-sdk/turn-mapper.js';
import type { CostState } from '../../../src/backends/claude-sdk/native-storage.js';
import { checkEventStream, finalMetadata, mainBlocks, reduce, systemBlocks } from '../conformance.js';

/** Recorded from the real SDK and CLI: see test/fixtures/claude-sdk/README.md. */
function recorded(name: string): { messages: SDKMessage[]; thrown: string | undefined } {
  const lines = readFileSync(join(import.meta.dirname, '../../fixtures/claude-sdk', `${name}.jsonl`), 'utf8')
    .trim()
    .split('\n');
  const parsed = lines.map((line) => JSON.parse(line) as SDKMessage | { thrown: string });
  const thrown = parsed.find((entry): entry is { thrown: string } => 'thrown' in entry);
  return { messages: parsed.filter((entry): entry is SDKMessage => !('thrown' in entry)), thrown: thrown?.thrown };
}

function replay(
  name: string,
  options: { baseline?: CostState; aborted?: boolean } = {},
): { events: UnsequencedEvent[]; mapper: ClaudeTurnMapper } {
  let now = 1_000;
  const mapper = new ClaudeTurnMapper({
    clock: () => now++,
    newId: counterIds('test'),
    nativeSessionId: 'bb65b695-33ed-49c1-a4c5-637400b0a533',
    baseline: options.baseline ?? { totalCostUsd: 0, totalApiDurationMs: 0 },
    endpoint: 'http://127.0.0.1:1',
    model: 'claude-sonnet-4-5',
  });
  const events = recorded(name).messages.flatMap((message) => mapper.map(message));
  events.push(...mapper.finish({ aborted: options.aborted ?? false }));
  return { events, mapper };
}

const PRICE = { input: 3 / 1e6, output: 15 / 1e6, cacheRead: 0.3 / 1e6, cacheWrite: 3.75 / 1e6 };

describe('claude-sdk turn mapper on recorded SDK messages', () => {
  it('a tool loop: thinking, streamed text, a Bash call with its result, then the answer', () => {
    const { events } = replay('tool-loop');
    checkEventStream(events);
    const blocks = mainBlocks(events);
    expect(blocks.map((block) => block.type)).toEqual([
      'thinking',
      'assistant_text',
      'tool_use',
      'tool_result',
      'assistant_text',
    ]);
    const use = blocks[2] as ToolUseBlock;
    expect(use).toMatchObject({
      name: 'Bash',
      input: { command: 'echo hi', description: 'say hi' },
      status: 'success',
    });
    const result = blocks[3] as ToolResultBlock;
    expect(result).toMatchObject({ toolUseId: use.toolUseId, content: 'hi', isError: false });
    expect(result.output).toMatchObject({ stdout: 'hi' });
    expect(blocks[4]).toMatchObject({
      type: 'assistant_text',
      content: 'The command said hi.',
      model: 'claude-sonnet-4-5',
    });
  });

  it('reports the first request when the second starts, and the rest with the result', () => {
    const { events } = replay('tool-loop');
    const updates = events.filter((event) => event.type === 'metadata_update');
    expect(updates).toHaveLength(2);
    expect(updates[0]!.type === 'metadata_update' && updates[0]!.metadata.usage).toEqual({
      inputTokens: 500,
      outputTokens: 40,
      cacheReadTokens: 100,
      cacheWriteTokens: 50,
    });
    const final = finalMetadata(events);
    expect(final.usage).toEqual({ inputTokens: 700, outputTokens: 12, cacheReadTokens: 0, cacheWriteTokens: 0 });
    const expected =
      500 * PRICE.input +
      40 * PRICE.output +
      100 * PRICE.cacheRead +
      50 * PRICE.cacheWrite +
      700 * PRICE.input +
      12 * PRICE.output;
    expect(final.costUsd).toBeCloseTo(expected, 12);
    expect(final).toMatchObject({
      contextWindow: 200_000,
      maxOutputTokens: 32_000,
      numTurns: 2,
      model: 'claude-sonnet-4-5',
      turnComplete: true,
    });
    const metrics = reduce(events).metrics;
    expect(metrics.lastInputTokens).toBe(700);
    expect(metrics.inputTokens).toBe(1_200);
  });

  it("a resumed session: cost and API time are this turn's, not the CLI's running totals", () => {
    // The previous file's result is the baseline the CLI restored from the transcript.
    const { events } = replay('background-subagent', {
      baseline: { totalCostUsd: 0.0045975, totalApiDurationMs: 138 },
    });
    checkEventStream(events);
    const updates = events.flatMap((event) =>
      event.type === 'metadata_update' && event.metadata.costUsd !== undefined ? [event.metadata] : [],
    );
    // Two results (the Agent turn and the task-notification turn the CLI runs by itself): each is priced once.
    expect(updates).toHaveLength(2);
    expect(updates[0]!.costUsd).toBeCloseTo(0.0060225 - 0.0045975, 12);
    expect(updates[0]!.durationApiMs).toBe(258 - 138);
    expect(updates[1]!.costUsd).toBeCloseTo(0.0066225 - 0.0060225, 12);
    expect(updates[1]!.durationApiMs).toBe(270 - 258);
    expect(updates.filter((metadata) => metadata.turnComplete)).toHaveLength(1);
    expect(reduce(events).metrics.costUsd).toBeCloseTo(0.0066225 - 0.0045975, 12);
  });

  it('a backgrounded subagent is a thread named by the Agent call id, completed by its task notification', () => {
    const { events } = replay('background-subagent', {
      baseline: { totalCostUsd: 0.0045975, totalApiDurationMs: 138 },
    });
    const state = reduce(events);
    const subagent = state.blocks.find((block): block is SubagentBlock => block.type === 'subagent');
    expect(subagent).toMatchObject({
      subagentId: 'toolu_agent1',
      name: 'general-purpose',
      input: 'SURVEY the code',
      status: 'success',
      output: 'Found three modules.',
    });
    // The "Async agent launched" tool result is bookkeeping, not the subagent's output.
    expect(state.blocks.some((block) => block.type === 'tool_result')).toBe(false);
    const thread = state.subagents.find((entry) => entry.id === 'toolu_agent1');
    expect(thread?.blocks.map((block) => block.type)).toEqual(['system', 'user_message', 'assistant_text', 'system']);
    expect(thread?.blocks[2]).toMatchObject({ content: 'Found three modules.' });
  });

  it('an interrupt is an abort, not an error: partial text kept, the streamed input tokens still counted', () => {
    const { events } = replay('interrupt', {
      aborted: true,
      baseline: { totalCostUsd: 0.0066225, totalApiDurationMs: 270 },
    });
    checkEventStream(events);
    expect(systemBlocks(events, 'error')).toHaveLength(0);
    expect(systemBlocks(events, 'aborted')).toHaveLength(1);
    expect(mainBlocks(events).find((block) => block.type === 'assistant_text')).toMatchObject({ content: 'A slow a' });
    const final = finalMetadata(events);
    expect(final.usage?.inputTokens).toBe(321);
    expect(final.stopReason).toBe('aborted');
    expect(final.costUsd).toBeCloseTo(0.0076155 - 0.0066225, 12);
  });

  it('manual compaction becomes a compaction block with trigger and preTokens; the summary is not shown as output', () => {
    const { events } = replay('compact', { baseline: { totalCostUsd: 0.0076155, totalApiDurationMs: 270 } });
    checkEventStream(events);
    const [compaction] = systemBlocks(events, 'compaction');
    expect(compaction?.data).toMatchObject({
      trigger: 'manual',
      preTokens: expect.any(Number) as unknown,
      postTokens: expect.any(Number) as unknown,
    });
    expect(
      mainBlocks(events).filter((block) => block.type === 'assistant_text' || block.type === 'user_message'),
    ).toHaveLength(0);
    // The summary request was billed, though the CLI reports no API time for it.
    expect(finalMetadata(events).costUsd).toBeCloseTo(0.0082155 - 0.0076155, 12);
    expect(finalMetadata(events).durationApiMs).toBe(0);
  });

  it('an API error result becomes one error block with the failure code, and the synthetic "API Error" text is not output', () => {
    const { events, mapper } = replay('rate-limit', { baseline: { totalCostUsd: 0.0082155, totalApiDurationMs: 287 } });
    checkEventStream(events);
    const errors = systemBlocks(events, 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]!.data).toMatchObject({ code: 'RATE_LIMITED', retryable: true, status: 429 });
    expect(errors[0]!.content).toContain('per-minute rate limit');
    expect(mainBlocks(events).some((block) => block.type === 'assistant_text')).toBe(false);
    expect(finalMetadata(events)).toMatchObject({ costUsd: 0, stopReason: 'error' });
    // No request was answered: no usage, so the session's context occupancy is left as it was.
    expect(finalMetadata(events).usage).toBeUndefined();
    expect(mapper.failed).toBe(true);
  });

  it('a model the CLI cannot price has an unknown cost, not its guess', () => {
    const { events } = replay('unknown-model');
    const final = finalMetadata(events);
    expect(final.costUnknown).toBe(true);
    expect(final.costUsd).toBeUndefined();
    expect(final.model).toBe('claude-unreleased-9');
  });

  it("when the CLI did not restore a running total (no cost-state), the result is this turn's own total", () => {
    const { events } = replay('tool-loop', { baseline: { totalCostUsd: 1, totalApiDurationMs: 10_000 } });
    expect(finalMetadata(events).costUsd).toBeCloseTo(0.0045975, 12);
    expect(finalMetadata(events).durationApiMs).toBe(138);
  });

  it('a CLI that dies mid-request: partial output closed, usage streamed so far kept, cost marked unknown', () => {
    const { messages } = recorded('tool-loop');
    const cut = messages.findIndex((message) => message.type === 'user');
    let now = 0;
    const mapper = new ClaudeTurnMapper({
      clock: () => now++,
      newId: counterIds('cut'),
      nativeSessionId: 'n',
      baseline: { totalCostUsd: 0, totalApiDurationMs: 0 },
      endpoint: 'e',
      model: 'claude-sonnet-4-5',
    });
    const events = messages.slice(0, cut).flatMap((message) => mapper.map(message));
    events.push(
      ...mapper.finish({
        aborted: false,
        failure: {
          code: 'PROCESS_FAILED',
          backend: 'claude-sdk',
          message: 'The Claude Code process was killed by SIGKILL.',
          advice: 'Send again.',
          retryable: true,
        },
      }),
    );
    checkEventStream(events);
    const use = mainBlocks(events).find((block): block is ToolUseBlock => block.type === 'tool_use');
    expect(use?.status).toBe('error');
    expect(systemBlocks(events, 'error')[0]!.data).toMatchObject({ code: 'PROCESS_FAILED' });
    const final = finalMetadata(events);
    expect(final.costUnknown).toBe(true);
    expect(final.usage).toEqual({ inputTokens: 500, outputTokens: 40, cacheReadTokens: 100, cacheWriteTokens: 50 });
  });

  it('api retries and permission denials are info blocks', () => {
    let now = 0;
    const mapper = new ClaudeTurnMapper({
      clock: () => now++,
      newId: counterIds('info'),
      nativeSessionId: 'n',
      baseline: { totalCostUsd: 0, totalApiDurationMs: 0 },
      endpoint: 'e',
      model: undefined,
    });
    const events = [
      ...mapper.map({
        type: 'system',
        subtype: 'api_retry',
        attempt: 1,
        max_retries: 2,
        retry_delay_ms: 586,
        error_status: 500,
        error: 'server_error',
        uuid: 'u',
        session_id: 's',
      } as unknown as SDKMessage),
      ...mapper.map({
        type: 'system',
        subtype: 'permission_denied',
        tool_name: 'Bash',
        tool_use_id: 't',
        message: 'touch is not allowed',
        uuid: 'u',
        session_id: 's',
      } as unknown as SDKMessage),
      ...mapper.finish({ aborted: false }),
    ];
    const info = systemBlocks(events, 'info');
    expect(info.map((block) => block.content)).toEqual([
      'The API failed (HTTP 500, server_error); Claude Code retries in 586 ms (attempt 1 of 2).',
      'Permission denied for Bash: touch is not allowed',
    ]);
  });
});
