import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CodexRolloutParser, CodexRolloutScan, LineSplitter, parseCodexRollout } from '../../../src/backends/index.js';
import {
  applyEvents,
  emptyConversation,
  fileEditOf,
  type ConversationBlock,
  type StreamEvent,
  type SystemBlock,
  type ToolResultBlock,
  type ToolUseBlock,
  type UnsequencedEvent,
} from '../../../src/conversation/index.js';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'transcripts', 'codex');
const THREAD = '0199e2f1-5c3a-7d40-9b1e-6f2a4c8d0e13';
const ROLLOUT = join(FIXTURES, 'sessions', '2025', '10', '14', `rollout-2025-10-14T09-00-00-${THREAD}.jsonl`);
const LEGACY = join(FIXTURES, 'legacy', 'rollout-2025-05-07T17-24-21-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl');
const text = readFileSync(ROLLOUT, 'utf8');

function fold(events: UnsequencedEvent[]) {
  const numbered = events.map((event, seq) => ({ ...event, sessionId: 's', seq, at: event.at ?? 0 }) as StreamEvent);
  return applyEvents(emptyConversation('s'), numbered);
}

/** The events a streaming import gets: the file's bytes through the line splitter's byte path. */
function streamed(input: string, options: { live?: boolean } = {}) {
  const events: UnsequencedEvent[] = [];
  const parser = new CodexRolloutParser({ emit: (event) => events.push(event), file: 'rollout.jsonl', ...options });
  const splitter = new LineSplitter(
    (line, number, terminated) => parser.line(line, number, terminated),
    (buffer, start, end, number, terminated) => parser.lineBytes(buffer, start, end, number, terminated),
  );
  // Small chunks, so records span chunk boundaries.
  const bytes = Buffer.from(input, 'utf8');
  for (let offset = 0; offset < bytes.length; offset += 97) splitter.push(bytes.subarray(offset, offset + 97));
  splitter.end();
  const info = parser.end();
  return { events, info, warnings: parser.warnings };
}

const byType = <T extends ConversationBlock['type']>(blocks: ConversationBlock[], type: T) =>
  blocks.filter((block): block is Extract<ConversationBlock, { type: T }> => block.type === type);

describe('Codex rollout reader', () => {
  it('reads every record type of a rollout into blocks, tools joined on their call ids', () => {
    const parsed = parseCodexRollout(text, { file: 'rollout.jsonl' });
    const blocks = parsed.blocks;
    expect(parsed.nativeSessionId).toBe(THREAD);
    expect(parsed.info).toMatchObject({ cwd: '/home/dev/src/demo', version: '0.46.0', model: 'gpt-5-codex' });
    expect(byType(blocks, 'user_message').map((block) => block.content)).toEqual([
      'Fix the failing greeting test\n[image]',
      'Now refactor everything',
      'Summarise and review',
    ]);
    // Injected context is shown as context, not as something the user typed.
    expect(byType(blocks, 'system').filter((block) => block.subtype === 'info')[0]?.content).toContain(
      '<user_instructions>',
    );
    expect(byType(blocks, 'assistant_text').map((block) => block.content)).toEqual([
      'Fixed the typo in `greet`; the test passes now.',
      'Summary: the greeting is fixed.',
    ]);
    const thinking = byType(blocks, 'thinking');
    expect(thinking[0]?.content).toContain('I should run the tests first.');
    expect(thinking[1]).toMatchObject({ content: '', redacted: true });
    // The events that repeat response items (user_message, agent_message, agent_reasoning) add nothing.
    expect(blocks.filter((block) => 'content' in block && block.content === 'Fix the failing greeting test')).toEqual(
      [],
    );

    const tools = byType(blocks, 'tool_use');
    const results = byType(blocks, 'tool_result');
    const resultOf = (tool: ToolUseBlock): ToolResultBlock | undefined =>
      results.find((result) => result.toolUseId === tool.toolUseId);
    const [test, cat, edit, write, search, plan, cut] = tools;
    expect(test).toMatchObject({
      name: 'shell',
      status: 'error',
      input: { command: 'npm test', cwd: '/home/dev/src/demo' },
    });
    expect(resultOf(test!)).toMatchObject({
      content: '1 failing\n',
      isError: true,
      output: { exitCode: 1, durationMs: 2500 },
    });
    expect(cat).toMatchObject({ name: 'shell', status: 'success', input: { command: 'cat src/greet.js' } });
    expect(resultOf(cat!)?.output).toMatchObject({ exitCode: 0 });
    // apply_patch: one call per file, the update with the diff Codex reported.
    expect(edit).toMatchObject({
      name: 'edit_file',
      input: { path: 'src/greet.js', kind: 'update' },
      status: 'success',
    });
    const view = fileEditOf(edit!, resultOf(edit!));
    expect(view?.hunks[0]?.lines).toEqual([
      { kind: '-', text: "export const greet = () => 'helo';" },
      { kind: '+', text: "export const greet = () => 'hello';" },
    ]);
    expect(write).toMatchObject({ name: 'write_file', input: { path: 'NOTES.md', content: 'Fixed the greeting.\n' } });
    expect(search).toMatchObject({ name: 'web_search', status: 'success' });
    expect(resultOf(search!)?.content).toBe('Searched the web for: node test runner greeting');
    expect(plan).toMatchObject({ name: 'update_plan', status: 'success' });
    // The call of the aborted turn never got its output.
    expect(cut).toMatchObject({ name: 'shell', status: 'error', error: expect.stringContaining('interrupted') });
    expect(resultOf(cut!)).toBeUndefined();
    for (const tool of tools.slice(0, 6)) expect(blocks.indexOf(tool)).toBeLessThan(blocks.indexOf(resultOf(tool)!));

    const system = byType(blocks, 'system');
    const subtypes = (subtype: SystemBlock['subtype']) => system.filter((block) => block.subtype === subtype);
    expect(subtypes('aborted')[0]?.content).toContain('interrupted');
    expect(subtypes('error')[0]?.content).toContain('stream disconnected');
    expect(subtypes('compaction').map((block) => block.content)).toEqual([
      expect.stringContaining('## Goal') as string,
      expect.stringContaining('encrypted') as string,
    ]);
    expect(system.some((block) => block.content.includes('rolled back'))).toBe(true);
    expect(system.some((block) => block.content.includes('review'))).toBe(true);
    expect(parsed.info.compactions[0]).toMatchObject({ blockId: 'L41', summary: expect.stringContaining('## Goal') });
  });

  it('keeps records, events and items of unknown kinds as unknown_record blocks with the record', () => {
    const parsed = parseCodexRollout(text);
    const unknown = byType(parsed.blocks, 'system').filter((block) => block.subtype === 'unknown_record');
    expect(unknown.map((block) => block.content)).toEqual([
      'Codex record of type "a_record_type_from_a_newer_codex" (not shown)',
      'Codex event of type "an_event_from_a_newer_codex" (not shown)',
      'Codex response item of type "a_response_item_from_a_newer_codex" (not shown)',
    ]);
    expect(unknown[0]?.data).toMatchObject({ source: 'codex', record: { payload: { something: 'new' } } });
    expect(parsed.warnings.map((warning) => warning.code)).toEqual(['UNKNOWN_RECORD']);
  });

  it('counts usage as the growth of the running total, once, with cost, turns and the context window', () => {
    const metrics = fold(parseCodexRollout(text).events).metrics;
    // The fixture's totals: 20,500 input of which 14,500 cached, 310 output; one total is repeated.
    expect(metrics).toMatchObject({ inputTokens: 6000, cacheReadTokens: 14_500, outputTokens: 310, turns: 3 });
    expect(metrics.contextWindow).toBe(272_000);
    // gpt-5-codex: $1.25 input, $0.125 cached, $10 output per million.
    expect(metrics.costUsd).toBeCloseTo((6000 * 1.25 + 14_500 * 0.125 + 310 * 10) / 1_000_000, 10);
    // The last request: 900 input, none cached.
    expect(metrics.lastInputTokens).toBe(900);
  });

  it('reads the bytes of a streamed file as it reads lines, skipping the repeated events unparsed', () => {
    const whole = parseCodexRollout(text);
    const { events, info } = streamed(text);
    expect(events).toEqual(whole.events);
    expect(info).toEqual(whole.info);
  });

  it('sets aside a torn last line with a warning and keeps everything before it', () => {
    const lines = text.trimEnd().split('\n');
    const cut = `${lines.slice(0, 27).join('\n')}\n${lines[27]!.slice(0, 40)}`;
    const { events, warnings } = streamed(cut);
    expect(warnings).toEqual([expect.objectContaining({ code: 'TRUNCATED_LINE', line: 28 })]);
    expect(warnings[0]?.message).toMatch(/cut off/);
    const state = fold(events);
    expect(state.blocks.filter((block) => block.type === 'assistant_text')).toHaveLength(1);
    // The turn the file ends in is closed: an import that is not live reads a finished file.
    expect(state.metrics.turns).toBe(1);
  });

  it('reports a malformed line in the middle and reads on', () => {
    const lines = text.trimEnd().split('\n');
    lines.splice(5, 0, '{"timestamp": nope');
    const parsed = parseCodexRollout(lines.join('\n'));
    expect(parsed.warnings[0]).toMatchObject({ code: 'MALFORMED_LINE', line: 6 });
    expect(byType(parsed.blocks, 'user_message')).toHaveLength(3);
  });

  it('in a file being written, leaves the open turn open and holds a call back until its output is written', () => {
    const lines = text.trimEnd().split('\n');
    // Up to the first shell call, with a half-written record after it.
    const partial = `${lines.slice(0, 11).join('\n')}\n{"timestamp":"2025-10-14T09:00:11`;
    const { events, warnings } = streamed(partial, { live: true });
    expect(warnings).toEqual([]);
    const state = fold(events);
    expect(state.metrics.turns).toBe(0);
    expect(state.blocks.map((block) => block.type)).toEqual(['system', 'system', 'user_message', 'thinking']);
    // Its usage is counted already, at the place it keeps in every later reading.
    expect(state.metrics.outputTokens).toBe(120);
    const later = streamed(lines.slice(0, 15).join('\n'), { live: true });
    expect(later.events.slice(0, events.length)).toEqual(events);
    expect(fold(later.events).blocks.find((block) => block.type === 'tool_use')).toMatchObject({ status: 'error' });
  });

  it('reads the first rollouts, which had no envelope', () => {
    const parsed = parseCodexRollout(readFileSync(LEGACY, 'utf8'));
    expect(parsed.nativeSessionId).toBe('5973b6c0-94b8-487b-a530-2aeb6098ae0e');
    expect(parsed.blocks.map((block) => block.type)).toEqual([
      'user_message',
      'tool_use',
      'tool_result',
      'assistant_text',
      'user_message',
      'assistant_text',
    ]);
    expect(parsed.blocks[1]).toMatchObject({ name: 'shell', input: { command: 'ls' }, status: 'success' });
    expect(parsed.warnings).toEqual([]);
    // No turn-end records: each prompt ends the turn before it, the file's end the last.
    expect(fold(parsed.events).metrics.turns).toBe(2);
  });

  it('shows an apply_patch run through the shell as the files it changed, with diffs from the patch itself', () => {
    const patch =
      '*** Begin Patch\n*** Update File: a.txt\n@@\n keep\n-old\n+new\n*** Delete File: gone.txt\n*** End Patch';
    const records = [
      { type: 'session_meta', payload: { id: 't' } },
      {
        type: 'response_item',
        payload: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Edit' }] },
      },
      {
        type: 'response_item',
        payload: {
          type: 'function_call',
          name: 'exec_command',
          call_id: 'c1',
          arguments: JSON.stringify({ cmd: `apply_patch <<'EOF'\n${patch}\nEOF\n` }),
        },
      },
      {
        type: 'response_item',
        payload: { type: 'function_call_output', call_id: 'c1', output: 'Exit code: 0\nSuccess.' },
      },
    ];
    const parsed = parseCodexRollout(records.map((record) => JSON.stringify(record)).join('\n'));
    const tools = byType(parsed.blocks, 'tool_use');
    expect(tools.map((tool) => [tool.name, (tool.input as { path: string }).path, tool.status])).toEqual([
      ['edit_file', 'a.txt', 'success'],
      ['edit_file', 'gone.txt', 'success'],
    ]);
    const result = byType(parsed.blocks, 'tool_result')[0]!;
    expect(fileEditOf(tools[0]!, result)?.hunks[0]?.lines.map((line) => `${line.kind}${line.text}`)).toEqual([
      ' keep',
      '-old',
      '+new',
    ]);
  });

  it('scans for a listing with the same numbers the full reading gives', () => {
    const scan = new CodexRolloutScan();
    const splitter = new LineSplitter(
      (line, number, terminated) => scan.line(line, number, terminated),
      (buffer, start, end, number, terminated) => scan.lineBytes(buffer, start, end, number, terminated),
    );
    splitter.push(text);
    splitter.end();
    const info = scan.end();
    const whole = parseCodexRollout(text);
    expect(fold(scan.metadata).metrics).toEqual(fold(whole.events).metrics);
    expect(info.firstUserMessage).toBe(whole.info.firstUserMessage);
    expect(info.messageCount).toBe(whole.info.messageCount);
    expect(info.compactions).toHaveLength(2);
  });
});
