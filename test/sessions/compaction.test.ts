import { beforeAll, describe, expect, it } from 'vitest';
import { TokenCounter, loadTokenizer, type ConversationBlock } from '../../src/conversation/index.js';
import {
  COMPACTION_SYSTEM_PROMPT,
  buildCompactionPrompt,
  chunkForSummary,
  collectIntents,
  collectLiveHandles,
  parseCheckpointOutput,
  planCompaction,
  projectConversation,
  prunedForSummary,
  renderForSummary,
  summarizeChunks,
} from '../../src/sessions/index.js';

beforeAll(async () => {
  await loadTokenizer();
});

const valid = {
  completed: ['Added --verbose to args.ts'],
  inProgress: ['Wiring the flag into logger.ts'],
  pending: ['Document the flag'],
  decisions: ['Use a boolean flag, no levels'],
  blockers: [],
};

describe('parseCheckpointOutput', () => {
  it('accepts the JSON object alone, fenced, or surrounded by prose', () => {
    expect(parseCheckpointOutput(JSON.stringify(valid))).toEqual({ ok: true, summary: valid });
    expect(parseCheckpointOutput(`Here it is:\n\`\`\`json\n${JSON.stringify(valid, null, 2)}\n\`\`\`\nDone.`)).toEqual({
      ok: true,
      summary: valid,
    });
    expect(parseCheckpointOutput(`Sure! ${JSON.stringify(valid)} Hope that helps.`)).toEqual({
      ok: true,
      summary: valid,
    });
  });

  it('maps the list names models commonly use (`completedItems` and `pendingItems` among them) and drops empty items', () => {
    const parsed = parseCheckpointOutput(
      JSON.stringify({
        completedItems: ['a', '  '],
        in_progress: [],
        pendingItems: ['b'],
        keyDecisions: [],
        currentBlockers: ['c'],
      }),
    );
    expect(parsed).toEqual({
      ok: true,
      summary: { completed: ['a'], inProgress: [], pending: ['b'], decisions: [], blockers: ['c'] },
    });
  });

  it('says precisely what is wrong with garbage, wrong shapes and missing lists', () => {
    expect(parseCheckpointOutput('I could not summarize that, sorry.')).toEqual({
      ok: false,
      errors: 'The answer contains no JSON object. Answer with exactly one JSON object.',
    });
    const broken = parseCheckpointOutput('{"completed": [oops]}');
    expect(broken.ok).toBe(false);
    expect(!broken.ok && broken.errors).toMatch(/^The JSON does not parse/);
    const wrong = parseCheckpointOutput(JSON.stringify({ ...valid, completed: 'everything', extra: 1 }));
    expect(wrong.ok).toBe(false);
    expect(!wrong.ok && wrong.errors).toContain('- completed:');
    expect(!wrong.ok && wrong.errors).toContain('extra');
    const missing = parseCheckpointOutput(JSON.stringify({ completed: [] }));
    expect(!missing.ok && missing.errors).toContain('- pending:');
  });
});

let seq = 0;
const user = (content: string, extra: Record<string, unknown> = {}): ConversationBlock =>
  ({
    id: `u${seq}`,
    seq: seq++,
    type: 'user_message',
    content,
    createdAt: 1000 + seq,
    completedAt: 1000 + seq,
    ...extra,
  }) as ConversationBlock;
const assistant = (content: string, complete = true): ConversationBlock =>
  ({
    id: `a${seq}`,
    seq: seq++,
    type: 'assistant_text',
    content,
    createdAt: 1000 + seq,
    ...(complete ? { completedAt: 1000 + seq } : {}),
  }) as ConversationBlock;
const call = (id: string): ConversationBlock => ({
  id: `c${seq}`,
  seq: seq++,
  type: 'tool_use',
  toolUseId: id,
  name: 'Read',
  input: {},
  status: 'success',
  createdAt: 1,
  completedAt: 1,
});
const result = (id: string, content = 'output'): ConversationBlock => ({
  id: `r${seq}`,
  seq: seq++,
  type: 'tool_result',
  toolUseId: id,
  content,
  isError: false,
  createdAt: 1,
  completedAt: 1,
});

describe('planCompaction', () => {
  const counter = new TokenCounter();
  const tokensOf = (unit: { key: string; content: string }) => counter.countKeyed(unit.key, unit.content);

  it('folds everything but the newest messages within the tail allowance', () => {
    seq = 0;
    const blocks = [user('one'), assistant('two'), user('three'), assistant('four')];
    const messages = projectConversation({ blocks }).messages;
    const tail = tokensOf(messages[2]!) + tokensOf(messages[3]!);
    const plan = planCompaction(messages, { tailTokens: tail, tokensOf })!;
    expect(plan.fold.map((unit) => unit.content)).toEqual(['**User**: one', '**Assistant**: two']);
    expect(plan.tail.map((unit) => unit.content)).toEqual(['**User**: three', '**Assistant**: four']);
    expect(plan.throughSeq).toBe(1);
    expect(plan.foldedMessages).toBe(2);
  });

  it('never folds a unit still in flight, nor anything after it', () => {
    seq = 0;
    const blocks = [user('one'), assistant('two'), user('three'), assistant('streaming…', false)];
    const plan = planCompaction(projectConversation({ blocks }).messages, { tailTokens: 0, tokensOf })!;
    expect(plan.fold.map((unit) => unit.content)).toEqual(['**User**: one', '**Assistant**: two', '**User**: three']);
  });

  it('moves the cut back so interleaved parallel calls are never split from their results', () => {
    seq = 0;
    // t1 and t2 are called together; t2's result comes after t1's: the only safe cuts are around both.
    const blocks = [user('go'), call('t1'), call('t2'), result('t1'), result('t2'), assistant('done'), user('next')];
    const messages = projectConversation({ blocks }).messages;
    const onlyLast =
      tokensOf(messages[messages.length - 1]!) +
      tokensOf(messages[messages.length - 2]!) +
      tokensOf(messages[messages.length - 3]!);
    const plan = planCompaction(messages, { tailTokens: onlyLast, tokensOf })!;
    // The tail would start at t2's unit, which began before t1's result: the cut moves back to before t1.
    expect(plan.fold.map((unit) => unit.kind)).toEqual(['message']);
    expect(plan.throughSeq).toBe(0);
  });

  it('returns nothing when everything is in the tail', () => {
    seq = 0;
    expect(
      planCompaction(projectConversation({ blocks: [user('a'), assistant('b')] }).messages, {
        tailTokens: 10_000,
        tokensOf,
      }),
    ).toBeUndefined();
  });
});

describe('what survives verbatim', () => {
  const counter = new TokenCounter();

  it('keeps the first user message and every pinned one for good, and the most recent requests within an allowance', () => {
    seq = 0;
    const blocks = [
      user('Build a CLI that renames photos by date'),
      assistant('ok'),
      user('use exif when present', { pinned: true }),
      user('also add --dry-run'),
      user('and make it fast'),
      user('out of range'),
    ];
    const intents = collectIntents(blocks, { throughSeq: 4, counter, maxEntryTokens: 100, recentTokens: 1000 });
    expect(intents.pinned).toEqual(['Build a CLI that renames photos by date', 'use exif when present']);
    expect(intents.userRequests).toEqual(['also add --dry-run', 'and make it fast']);
    const small = collectIntents(blocks, { throughSeq: 4, counter, maxEntryTokens: 100, recentTokens: 5 });
    expect(small.userRequests).toEqual(['and make it fast']);
  });

  it('carries pinned intent from the previous checkpoint and ignores messages hidden by a clear', () => {
    seq = 0;
    const blocks = [user('before the clear'), user('after the clear'), user('later')];
    const intents = collectIntents(blocks, {
      throughSeq: 2,
      clearedThroughSeq: 0,
      previous: { pinned: ['an older goal'] },
      counter,
      maxEntryTokens: 100,
      recentTokens: 100,
    });
    expect(intents.pinned).toEqual(['an older goal', 'after the clear']);
    expect(intents.userRequests).toEqual(['later']);
  });

  it('cuts a very long pinned message to its allowance, saying so', () => {
    seq = 0;
    const intents = collectIntents([user(`goal ${'detail '.repeat(5_000)}`)], {
      throughSeq: 0,
      counter,
      maxEntryTokens: 200,
      recentTokens: 0,
    });
    expect(counter.countText(intents.pinned[0]!)).toBeLessThanOrEqual(200);
    expect(intents.pinned[0]).toContain('truncated');
  });

  it('keeps workers that are still pending or running as live handles', () => {
    const worker = (subagentId: string, status: 'pending' | 'running' | 'success' | 'error'): ConversationBlock => ({
      id: `w-${subagentId}-${status}`,
      type: 'subagent',
      subagentId,
      name: `worker ${subagentId}`,
      input: 'x',
      status,
      createdAt: 1,
    });
    const handles = collectLiveHandles(
      [worker('a', 'running'), worker('b', 'running'), worker('b', 'success'), worker('c', 'pending')],
      [
        { id: 'external', kind: 'worker', status: 'running' },
        { id: 'a', kind: 'worker', status: 'pending' },
      ],
    );
    expect(handles).toEqual([
      { id: 'a', kind: 'worker', label: 'worker a', status: 'running' },
      { id: 'c', kind: 'worker', label: 'worker c', status: 'pending' },
      { id: 'external', kind: 'worker', status: 'running' },
    ]);
  });
});

describe('summarizer input', () => {
  it('prunes old tool output to its head before summarizing, keeping the newest whole', () => {
    seq = 0;
    const blocks = [
      user('go'),
      call('t1'),
      result('t1', `OLD ${'x'.repeat(3_000)}`),
      call('t2'),
      result('t2', `NEW ${'y'.repeat(3_000)}`),
    ];
    const fold = projectConversation({ blocks }).messages;
    const pruned = prunedForSummary(fold, 3_500);
    expect([...pruned]).toEqual([1]);
    const text = renderForSummary(fold[1]!, true);
    expect(text).toContain('OLD xxx');
    expect(text).toContain('[… old tool output pruned before summarizing: 2,704 more characters …]');
    expect(text).toContain('called tool `Read`');
    expect(renderForSummary(fold[2]!, false)).toContain('y'.repeat(3_000));
  });

  it('splits a long history into summarizer calls that each fit, cutting a single oversized message', () => {
    const counter = new TokenCounter();
    const chunks = chunkForSummary(['a '.repeat(300), 'b '.repeat(300), 'c '.repeat(5_000)], 700, counter);
    expect(chunks).toHaveLength(2);
    for (const chunk of chunks)
      expect(chunk.reduce((sum, text) => sum + counter.countText(text), 0)).toBeLessThanOrEqual(700);
    expect(chunks[1]![0]).toContain('truncated');
  });

  it('folds chunks one call at a time, each call building on the previous answer', async () => {
    const prompts: string[] = [];
    const summary = await summarizeChunks({
      summarize: async ({ systemPrompt, prompt }) => {
        expect(systemPrompt).toBe(COMPACTION_SYSTEM_PROMPT);
        prompts.push(prompt);
        return JSON.stringify({ ...valid, completed: [`part ${prompts.length}`] });
      },
      previous: undefined,
      chunks: [['**User**: one'], ['**User**: two']],
      fromSeq: 0,
      throughSeq: 9,
      signal: new AbortController().signal,
    });
    expect(summary.completed).toEqual(['part 2']);
    expect(prompts[0]).toContain('(none: this is the first checkpoint)');
    expect(prompts[0]).toContain('part 1 of 2');
    expect(prompts[1]).toContain('"part 1"');
    expect(prompts[1]).toContain('**User**: two');
  });

  it('the prompt carries the previous checkpoint, the range and the user instructions', () => {
    const prompt = buildCompactionPrompt({
      previous: valid,
      units: ['**User**: hi'],
      fromSeq: 3,
      throughSeq: 8,
      instructions: 'Keep the API names exact',
    });
    expect(prompt).toContain('# Previous Checkpoint');
    expect(prompt).toContain('Added --verbose to args.ts');
    expect(prompt).toContain('# Conversation To Fold In (seq 3–8)');
    expect(prompt).toContain('# Instructions From The User For This Compaction\n\nKeep the API names exact');
  });
});
