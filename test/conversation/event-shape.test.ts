import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isCanonicalStreamEvent, StreamEventSchema } from '../../src/conversation/index.js';

const envelope = { sessionId: 's-1', conversationId: 'main', seq: 7, at: 1_700_000_000_000 };
const times = { seq: 7, createdAt: 1_700_000_000_000, updatedAt: 1_700_000_000_001, completedAt: 1_700_000_000_002 };
const usage = { inputTokens: 1_000, outputTokens: 80.5, cacheReadTokens: 0, cacheWriteTokens: 3 };

/** Every event and block shape, once with every optional field and once with none. */
const REPRESENTATIVE: Record<string, unknown> = {
  'user_message, all fields': {
    ...envelope,
    type: 'block_complete',
    block: {
      type: 'user_message',
      id: 'u1',
      ...times,
      content: 'Question **1**',
      pinned: true,
      metadata: { from: 'user', nested: { a: [1, null] } },
    },
  },
  'user_message, required only': {
    ...envelope,
    type: 'block_start',
    block: { type: 'user_message', id: 'u1', createdAt: 0, content: '' },
  },
  'assistant_text, all fields': {
    ...envelope,
    type: 'block_complete',
    block: { type: 'assistant_text', id: 'a1', ...times, content: 'Answer', model: 'sonnet', metadata: {} },
  },
  'assistant_text, required only': {
    ...envelope,
    type: 'block_start',
    block: { type: 'assistant_text', id: 'a1', createdAt: 5, content: '' },
  },
  'thinking, all fields': {
    ...envelope,
    type: 'block_complete',
    block: { type: 'thinking', id: 'th', ...times, content: 'hmm', redacted: false },
  },
  'tool_use, all fields': {
    ...envelope,
    type: 'block_complete',
    block: {
      type: 'tool_use',
      id: 't1',
      ...times,
      toolUseId: 'call-1',
      name: 'read_file',
      input: { path: 'src/a.ts', lines: [1, 2] },
      status: 'error',
      error: 'not found',
    },
  },
  'tool_use, null input': {
    ...envelope,
    type: 'block_start',
    block: { type: 'tool_use', id: 't1', createdAt: 1, toolUseId: 'call-1', name: '', input: null, status: 'pending' },
  },
  'tool_result, all fields': {
    ...envelope,
    type: 'block_complete',
    block: {
      type: 'tool_result',
      id: 'r1',
      ...times,
      toolUseId: 'call-1',
      content: 'ok',
      output: { path: 'a', diff: '@@' },
      isError: false,
    },
  },
  'system, all fields': {
    ...envelope,
    type: 'block_complete',
    block: {
      type: 'system',
      id: 'sy',
      ...times,
      subtype: 'compaction',
      content: 'compacted',
      data: { tokensBefore: 10 },
    },
  },
  'subagent, all fields': {
    ...envelope,
    type: 'block_complete',
    block: {
      type: 'subagent',
      id: 'w',
      ...times,
      subagentId: 'worker-1',
      name: 'dev',
      input: 'do it',
      status: 'running',
      output: 'done',
      usage,
      costUsd: 0.25,
    },
  },
  'subagent, required only': {
    ...envelope,
    type: 'block_start',
    block: {
      type: 'subagent',
      id: 'w',
      createdAt: 1,
      subagentId: 'worker-1',
      name: 'dev',
      input: '',
      status: 'success',
    },
  },
  text_delta: { ...envelope, type: 'text_delta', blockId: 'a1', delta: ' more' },
  block_update: { ...envelope, type: 'block_update', blockId: 't1', updates: { status: 'success', extra: [1] } },
  'metadata_update, all fields': {
    ...envelope,
    type: 'metadata_update',
    metadata: {
      usage,
      costUsd: 0.001,
      costUnknown: false,
      model: 'm',
      contextWindow: 200_000,
      maxOutputTokens: 8_000,
      numTurns: 0,
      durationMs: 12.5,
      durationApiMs: 10,
      nativeSessionId: 'n',
      stopReason: 'end_turn',
      estimatedInputTokens: 990,
      turnComplete: true,
    },
  },
  'metadata_update, empty': { ...envelope, type: 'metadata_update', metadata: {} },
};

/** Values a mutation puts in a field: right and wrong types, bounds, and the odd ones out. */
const ODD_VALUES: unknown[] = [
  undefined,
  null,
  -1,
  0,
  1.5,
  Number.MAX_SAFE_INTEGER + 2,
  '',
  'x',
  'running',
  true,
  false,
  [],
  {},
  { inputTokens: 1 },
];

/** Every path to a field of `value` (objects only: the shape, not what `input` or `data` hold). */
function paths(value: unknown, prefix: string[] = []): string[][] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [];
  const out: string[][] = [];
  for (const key of Object.keys(value)) {
    out.push([...prefix, key]);
    out.push(...paths((value as Record<string, unknown>)[key], [...prefix, key]));
  }
  return out;
}

/** A deep copy (as the wire would give it) with the field at `path` set to `next`, or removed for `undefined`. */
function mutate(value: unknown, path: string[], next: unknown): unknown {
  const copy = JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
  let target = copy;
  for (const key of path.slice(0, -1)) target = target[key] as Record<string, unknown>;
  const last = path.at(-1)!;
  if (next === undefined) delete target[last];
  else target[last] = next;
  return copy;
}

/** The property under test: a yes from the check is a yes from the schema, with the value unchanged. */
function expectSound(value: unknown): boolean {
  const canonical = isCanonicalStreamEvent(value);
  const parsed = StreamEventSchema.safeParse(value);
  if (canonical) {
    expect(parsed.success).toBe(true);
    expect(parsed.data).toStrictEqual(value);
  }
  return canonical;
}

describe('isCanonicalStreamEvent', () => {
  it.each(Object.entries(REPRESENTATIVE))('passes %s, which the schema accepts unchanged', (_name, event) => {
    const wire = JSON.parse(JSON.stringify(event)) as unknown;
    expect(isCanonicalStreamEvent(wire)).toBe(true);
    expect(StreamEventSchema.parse(wire)).toStrictEqual(wire);
  });

  it('never passes a malformed variant of any shape: every field removed, retyped, out of bounds; never one the schema would change', () => {
    let variants = 0;
    let refusedBySchema = 0;
    for (const event of Object.values(REPRESENTATIVE)) {
      for (const path of paths(event)) {
        for (const value of ODD_VALUES) {
          const variant = mutate(event, path, value);
          variants += 1;
          const canonical = expectSound(variant);
          if (!StreamEventSchema.safeParse(variant).success) {
            refusedBySchema += 1;
            expect(canonical).toBe(false);
          }
        }
      }
    }
    // The variants reach both sides: most are refused by the schema, and the check still passes valid ones.
    expect(variants).toBeGreaterThan(2_000);
    expect(refusedBySchema).toBeGreaterThan(variants / 2);
  });

  it('leaves to the schema what it would change: an unknown key (stripped), a missing default (filled in), a __proto__ key, a class instance', () => {
    const result = REPRESENTATIVE['tool_result, all fields'] as { block: Record<string, unknown> };
    const unknownKey = { ...result, extra: 1 };
    const unknownBlockKey = { ...result, block: { ...result.block, colour: 'red' } };
    const { isError: _isError, ...withoutDefault } = result.block;
    const missingDefault = { ...result, block: withoutDefault };
    const protoRecord = JSON.parse(
      '{"sessionId":"s","conversationId":"main","seq":1,"at":1,"type":"block_update","blockId":"b","updates":{"__proto__":{"polluted":true}}}',
    ) as unknown;
    const protoKey = JSON.parse(
      '{"sessionId":"s","conversationId":"main","seq":1,"at":1,"type":"text_delta","blockId":"b","delta":"x","__proto__":{}}',
    ) as unknown;
    class Event {
      constructor(
        readonly sessionId = 's',
        readonly conversationId = 'main',
        readonly seq = 1,
        readonly at = 1,
        readonly type = 'text_delta',
        readonly blockId = 'b',
        readonly delta = 'x',
      ) {}
    }
    for (const value of [unknownKey, unknownBlockKey, missingDefault, protoRecord, protoKey, new Event()]) {
      expect(isCanonicalStreamEvent(value)).toBe(false);
      // Each of these is valid: the schema takes it, and returns something else than what came in.
      const parsed = StreamEventSchema.safeParse(value);
      expect(parsed.success).toBe(true);
    }
    expect(StreamEventSchema.parse(missingDefault)).toMatchObject({ block: { isError: false } });
  });

  it('is sound on arbitrary JSON put anywhere in any shape (property)', () => {
    const entries = Object.values(REPRESENTATIVE);
    const arbitrary = fc
      .record({
        index: fc.nat(entries.length - 1),
        pick: fc.nat(),
        value: fc.jsonValue({ maxDepth: 2 }),
        drop: fc.boolean(),
      })
      .map(({ index, pick, value, drop }) => {
        const event = entries[index]!;
        const all = paths(event);
        const path = all[pick % all.length]!;
        return mutate(event, path, drop ? undefined : value);
      });
    fc.assert(
      fc.property(arbitrary, (variant) => {
        expectSound(variant);
      }),
      { numRuns: 3_000, seed: 20 },
    );
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), (value) => {
        expectSound(value);
      }),
      { numRuns: 1_000, seed: 21 },
    );
  });
});
