import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  TokenCounter,
  estimateTokens,
  isParleyError,
  loadTokenizer,
  type ConversationBlock,
} from '../../src/conversation/index.js';
import {
  assembleRequest,
  measureRequest,
  projectConversation,
  renderAgentDescription,
  describeAgent,
  renderCheckpoint,
  truncateText,
  waterLevel,
  withoutPendingUserMessage,
  type RequestSources,
} from '../../src/sessions/index.js';

beforeAll(async () => {
  expect(await loadTokenizer()).toBe(true);
});

const words =
  'the session keeps every message on disk while compaction folds old turns into a typed checkpoint with decisions blockers and pending work'.split(
    ' ',
  );
function prose(tokens: number, seed = 1): string {
  const out: string[] = [];
  let state = seed;
  for (let index = 0; index < tokens; index++) {
    state = (state * 1103515245 + 12345) % 2147483648;
    out.push(words[state % words.length]!);
  }
  return out.join(' ');
}

let seq = 0;
function blocksOf(entries: Array<['user' | 'assistant', string] | ['tool', string, string]>): ConversationBlock[] {
  seq = 0;
  const blocks: ConversationBlock[] = [];
  for (const entry of entries) {
    if (entry[0] === 'tool') {
      const id = `t${seq}`;
      blocks.push({
        id: `c${seq}`,
        seq: seq++,
        type: 'tool_use',
        toolUseId: id,
        name: 'Read',
        input: { path: entry[1] },
        status: 'success',
        createdAt: 1,
        completedAt: 1,
      });
      blocks.push({
        id: `r${seq}`,
        seq: seq++,
        type: 'tool_result',
        toolUseId: id,
        content: entry[2],
        isError: false,
        createdAt: 1,
        completedAt: 1,
      });
    } else {
      const n = seq++;
      blocks.push({
        id: `m${n}`,
        seq: n,
        type: entry[0] === 'user' ? 'user_message' : 'assistant_text',
        content: entry[1],
        createdAt: 1,
        completedAt: 1,
      } as ConversationBlock);
    }
  }
  return blocks;
}

function sources(
  blocks: ConversationBlock[],
  userMessage = 'What next?',
  extra: Partial<RequestSources> = {},
): RequestSources {
  return {
    role: renderAgentDescription(describeAgent('dev')),
    context: [
      { key: 'project-structure', title: 'Project Structure', text: 'src/\n  index.ts\npackage.json' },
      { key: 'task', title: 'Task', text: 'Id: t1\nTitle: Add a verbose flag' },
    ],
    checkpoint: renderCheckpoint(undefined),
    conversation: projectConversation({ blocks }).messages,
    userMessage,
    ...extra,
  };
}

const budget = (tokenBudget: number, calibrationRatio = 1) => ({
  tokenBudget,
  compactionThreshold: 0.9,
  calibrationRatio,
});
const actual = (request: { systemPrompt: string; userPrompt: string }) =>
  estimateTokens(request.systemPrompt) + estimateTokens(request.userPrompt);

describe('assembleRequest', () => {
  it('lays the request out as designed: role and instructions, context, checkpoint, recent conversation; the new message is the user prompt', () => {
    const request = assembleRequest(
      sources(
        blocksOf([
          ['user', 'Add a --verbose flag'],
          ['assistant', 'Done.'],
        ]),
      ),
      new TokenCounter(),
      budget(100_000),
    );
    const order = [
      '# Your Role',
      '## Instructions',
      '# Context',
      '## Project Structure',
      '## Task',
      '# Checkpoint (Work Progress)',
      '# Recent Conversation',
      '**User**: Add a --verbose flag',
      '**Assistant**: Done.',
    ];
    const positions = order.map((heading) => request.systemPrompt.indexOf(heading));
    expect(positions.every((position) => position >= 0)).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    expect(request.userPrompt).toBe('What next?');
    expect(request.messages).toBe(2);
    expect(request.threshold).toBe(90_000);
  });

  it('per-section tokens add up to the total, which is never below what the text really counts', () => {
    const request = assembleRequest(
      sources(
        blocksOf([
          ['user', prose(300)],
          ['tool', 'a.ts', prose(500, 2)],
          ['assistant', prose(200, 3)],
        ]),
      ),
      new TokenCounter(),
      budget(100_000),
    );
    const { role, context, checkpoint, conversation, userPrompt } = request.sections;
    expect(role + context + checkpoint + conversation + userPrompt).toBe(request.totalTokens);
    expect(actual(request)).toBeLessThanOrEqual(request.totalTokens);
    expect(request.totalTokens - actual(request)).toBeLessThan(20);
    expect(request.adjustments).toEqual({ prunedToolOutputs: 0, truncated: [], omittedMessages: 0 });
  });

  it('property: the estimate is never below the real count of the assembled text', () => {
    const text = fc.string({
      unit: fc.constantFrom('a', 'b', ' ', '\n', '.', '*', '#', '`', 'é', '😀', '\t', '1', '<', '|', '}', '-'),
      maxLength: 200,
    });
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom<'user' | 'assistant'>('user', 'assistant'), text), { maxLength: 12 }),
        text,
        text,
        (messages, userMessage, note) => {
          const request = assembleRequest(
            sources(blocksOf(messages), userMessage, { context: [{ key: 'note', title: 'Note', text: note }] }),
            new TokenCounter(),
            budget(1_000_000),
          );
          expect(actual(request)).toBeLessThanOrEqual(request.totalTokens);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('prunes old tool outputs first, keeping the newest one whole', () => {
    const blocks = blocksOf([
      ['user', 'read them'],
      ['tool', 'a.ts', prose(3000, 4)],
      ['tool', 'b.ts', prose(3000, 5)],
      ['tool', 'c.ts', prose(1000, 6)],
      ['assistant', 'read'],
    ]);
    const request = assembleRequest(sources(blocks), new TokenCounter(), budget(3_000));
    expect(request.totalTokens).toBeLessThanOrEqual(3_000);
    expect(actual(request)).toBeLessThanOrEqual(3_000);
    expect(request.adjustments.prunedToolOutputs).toBe(2);
    expect(request.adjustments.truncated).toEqual([]);
    expect(request.systemPrompt).toContain('[old tool output pruned to save context:');
    expect(request.systemPrompt).toContain(prose(1000, 6));
  });

  it('cuts one huge message in the middle, with a marker saying what was cut, when pruning is not enough', () => {
    const huge = `START ${prose(20_000, 7)} END`;
    const request = assembleRequest(
      sources(
        blocksOf([
          ['user', huge],
          ['assistant', 'That is long.'],
        ]),
      ),
      new TokenCounter(),
      budget(5_000),
    );
    expect(request.totalTokens).toBeLessThanOrEqual(5_000);
    expect(actual(request)).toBeLessThanOrEqual(5_000);
    expect(request.systemPrompt).toContain('**User**: START');
    expect(request.systemPrompt).toContain('END');
    expect(request.systemPrompt).toMatch(
      /\[… truncated to fit the token budget: cut about [\d,]+ of [\d,]+ tokens \([\d,]+ characters\) from the middle of this user message \(seq 0; the full text is kept in the session log\) …\]/,
    );
    expect(request.adjustments.truncated).toHaveLength(1);
    expect(request.adjustments.truncated[0]!.fromTokens).toBeGreaterThan(20_000);
    expect(request.systemPrompt).toContain('**Assistant**: That is long.');
  });

  it('cuts a huge new message too, so the request still fits', () => {
    const request = assembleRequest(sources(blocksOf([]), prose(30_000, 8)), new TokenCounter(), budget(4_000));
    expect(request.totalTokens).toBeLessThanOrEqual(4_000);
    expect(actual(request)).toBeLessThanOrEqual(4_000);
    expect(request.userPrompt).toContain('from the middle of your message');
  });

  it('leaves out the oldest messages with a notice when there are too many to fit', () => {
    const entries: Array<['user' | 'assistant', string]> = [];
    for (let index = 0; index < 200; index++)
      entries.push([index % 2 ? 'assistant' : 'user', `message ${index} ${prose(40, index)}`]);
    const request = assembleRequest(sources(blocksOf(entries)), new TokenCounter(), budget(3_000));
    expect(request.totalTokens).toBeLessThanOrEqual(3_000);
    expect(actual(request)).toBeLessThanOrEqual(3_000);
    expect(request.adjustments.omittedMessages).toBeGreaterThan(100);
    expect(request.systemPrompt).toMatch(
      /\[\d+ older messages \(seq 0–\d+\) left out to fit the token budget; they are not in the checkpoint yet and are kept in the session log\.\]/,
    );
    expect(request.systemPrompt).toContain('message 199 ');
    expect(request.systemPrompt).not.toContain('message 0 ');
  });

  it('leaves out the fewest oldest messages: keeping one more would not fit', () => {
    const entries: Array<['user' | 'assistant', string]> = [];
    for (let index = 0; index < 300; index++)
      entries.push([index % 2 ? 'assistant' : 'user', `message ${index} ${prose(40, index)}`]);
    const counter = new TokenCounter();
    const left = assembleRequest(sources(blocksOf(entries)), counter, budget(3_000)).adjustments.omittedMessages;
    expect(left).toBeGreaterThan(1);
    // The request with one message fewer left out, notice included, is over the budget.
    const oneMore = measureRequest(sources(blocksOf(entries.slice(left - 1))), counter, budget(3_000)).totalTokens;
    const notice = counter.countText(
      `\n\n[${left - 1} older messages (seq 0–${left - 2}) left out to fit the token budget; they are not in the checkpoint yet and are kept in the session log.]`,
    );
    expect(oneMore + notice).toBeGreaterThan(3_000);
  });

  it('fits a conversation of 30,000 messages, keeping the newest', () => {
    const entries: Array<['user' | 'assistant', string]> = [];
    for (let index = 0; index < 30_000; index++)
      entries.push([index % 2 ? 'assistant' : 'user', `message ${index} ${prose(12, index)}`]);
    const request = assembleRequest(sources(blocksOf(entries)), new TokenCounter(), budget(3_000));
    expect(request.totalTokens).toBeLessThanOrEqual(3_000);
    expect(request.adjustments.omittedMessages).toBeGreaterThan(29_000);
    expect(request.systemPrompt).toContain('message 29999 ');
    expect(request.systemPrompt).toContain(`[${request.adjustments.omittedMessages} older messages (seq 0–`);
  });

  it('applies the calibration ratio: sections are scaled and the scaled total fits the budget', () => {
    const plain = assembleRequest(sources(blocksOf([['user', prose(2_000, 9)]])), new TokenCounter(), budget(100_000));
    const scaled = assembleRequest(
      sources(blocksOf([['user', prose(2_000, 9)]])),
      new TokenCounter(),
      budget(100_000, 1.5),
    );
    expect(scaled.estimatedTokens).toBe(plain.estimatedTokens);
    expect(scaled.totalTokens).toBeGreaterThanOrEqual(Math.ceil(plain.totalTokens * 1.5));
    expect(scaled.totalTokens).toBeLessThanOrEqual(Math.ceil(plain.totalTokens * 1.5) + 5);
    const tight = assembleRequest(
      sources(blocksOf([['user', prose(2_000, 9)]])),
      new TokenCounter(),
      budget(2_000, 1.5),
    );
    expect(tight.totalTokens).toBeLessThanOrEqual(2_000);
    expect(actual(tight) * 1.5).toBeLessThanOrEqual(2_000);
  });

  it('refuses a budget smaller than the skeleton of a request, naming it', () => {
    let error: unknown;
    try {
      assembleRequest(sources(blocksOf([['user', 'hi']])), new TokenCounter(), budget(20));
    } catch (caught) {
      error = caught;
    }
    expect(isParleyError(error, 'TOKEN_BUDGET_TOO_SMALL')).toBe(true);
    expect((error as Error).message).toContain('A token budget of 20');
  });

  it('measureRequest agrees with assembleRequest when nothing has to give way', () => {
    const input = sources(
      blocksOf([
        ['user', prose(100)],
        ['assistant', prose(100, 2)],
      ]),
    );
    const counter = new TokenCounter();
    expect(measureRequest(input, counter, budget(100_000)).totalTokens).toBe(
      assembleRequest(input, counter, budget(100_000)).totalTokens,
    );
  });

  it('does not repeat the new message in the history when the caller already stored it', () => {
    const messages = projectConversation({
      blocks: blocksOf([
        ['user', 'first'],
        ['assistant', 'ok'],
        ['user', 'What next?'],
      ]),
    }).messages;
    expect(withoutPendingUserMessage(messages, 'What next?').map((message) => message.content)).toEqual([
      '**User**: first',
      '**Assistant**: ok',
    ]);
    expect(withoutPendingUserMessage(messages, 'something else')).toHaveLength(3);
  });
});

describe('truncateText', () => {
  it('keeps the head and the tail within the limit, with a marker in between', () => {
    const text = `HEAD ${prose(5_000, 11)} TAIL`;
    const cut = truncateText(text, 500, estimateTokens, 'this tool output');
    expect(cut.tokens).toBeLessThanOrEqual(500);
    expect(estimateTokens(cut.text)).toBe(cut.tokens);
    expect(cut.text.startsWith('HEAD')).toBe(true);
    expect(cut.text.endsWith('TAIL')).toBe(true);
    expect(cut.text).toContain('from the middle of this tool output');
  });

  it('never splits a surrogate pair and returns short text unchanged', () => {
    const emoji = '😀'.repeat(3_000);
    const cut = truncateText(emoji, 300, estimateTokens, 'x');
    expect(cut.text).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
    expect(truncateText('short', 10, estimateTokens, 'x')).toEqual({ text: 'short', tokens: estimateTokens('short') });
  });
});

describe('waterLevel', () => {
  it('finds the common cap that removes the excess from the largest items first', () => {
    expect(waterLevel([10_000, 500, 300], 4_000, 0)).toBe(6_000);
    expect(waterLevel([5_000, 5_000, 300], 4_000, 0)).toBe(3_000);
    expect(waterLevel([300, 300], 10_000, 0)).toBe(200);
  });
});
