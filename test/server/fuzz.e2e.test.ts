import { afterEach, describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { METHOD_NAMES } from '../../src/protocol/index.js';
import { startTestServer, type TestServer } from './helpers.js';

/** mulberry32: a small seeded PRNG, so a failing frame can be regenerated from the seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Frame {
  data: string | Buffer;
  /** The id the answer must carry, when the frame has a readable one. */
  id?: string | number;
  /** The answer is an array of this many errors. */
  batch?: number;
}

function generator(seed: number) {
  const next = random(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const int = (max: number) => Math.floor(next() * max);
  const junkString = () => {
    const alphabet = [
      '{',
      '}',
      '[',
      ']',
      '"',
      ':',
      ',',
      'a',
      '0',
      '\\',
      ' ',
      'é',
      '\u0000',
      'null',
      'true',
      '../',
      '%',
    ];
    return Array.from({ length: 1 + int(40) }, () => pick(alphabet)).join('');
  };
  const junkValue = (depth = 0): unknown => {
    switch (int(depth > 2 ? 6 : 8)) {
      case 0:
        return null;
      case 1:
        return next() * 1e6 - 5e5;
      case 2:
        return junkString();
      case 3:
        return next() < 0.5;
      case 4:
        return pick(['', '../../etc/passwd', '.hidden', 'x'.repeat(300), 'a/b', '..', '-x']);
      case 5:
        return -int(100) - 2;
      case 6:
        return Array.from({ length: int(4) }, () => junkValue(depth + 1));
      default:
        return Object.fromEntries(
          Array.from({ length: int(4) }, () => [
            pick(['sessionId', 'content', 'role', 'afterSeq', 'limit', 'project', 'x']),
            junkValue(depth + 1),
          ]),
        );
    }
  };
  const badEnvelope = (index: number): { value: Record<string, unknown>; id?: string | number } => {
    const id = `f-${index}`;
    switch (int(6)) {
      case 0:
        return { value: { jsonrpc: pick(['1.0', 2, null, '2.00']), id, method: 'server_info' }, id };
      case 1:
        return { value: { jsonrpc: '2.0', id, method: pick([42, null, '', {}, []]) }, id };
      case 2:
        return { value: { jsonrpc: '2.0', id: pick([{}, [], 1.5, true, 'x'.repeat(300)]), method: 'server_info' } };
      case 3:
        return {
          value: {
            jsonrpc: '2.0',
            id,
            method: 'server_info',
            [pick(['extra', 'result', 'error', '__proto__x'])]: junkValue(),
          },
          id,
        };
      case 4:
        return { value: { jsonrpc: '2.0', method: pick([7, null]) } };
      default:
        return { value: { id, method: 'server_info' }, id };
    }
  };
  const badParams = (index: number): { value: Record<string, unknown>; id: string | number } => {
    const id = next() < 0.5 ? `f-${index}` : 100_000 + index;
    const method = pick(METHOD_NAMES);
    let params: unknown;
    switch (int(3)) {
      case 0:
        params = pick([[], [1, 2], 5, 'text', true]);
        break;
      case 1:
        params = { ...(junkValue() as object), fuzzUnknownKey: junkValue() };
        break;
      default:
        params = { sessionId: pick(['../x', '', '.', 'a'.repeat(201), 'a..b']), fuzzUnknownKey: 1 };
    }
    return { value: { jsonrpc: '2.0', id, method, params }, id };
  };
  return (index: number): Frame => {
    switch (int(7)) {
      case 0:
        return { data: junkString().replace(/^[[{]/, '!') }; // never valid JSON
      case 1:
        return { data: JSON.stringify(pick([1, 'str', null, true, 3.14])) };
      case 2: {
        const entries = Array.from({ length: 1 + int(5) }, (_, offset) => badEnvelope(index * 10 + offset).value);
        return { data: JSON.stringify(entries), batch: entries.length };
      }
      case 3: {
        const { value, id } = badEnvelope(index);
        return id !== undefined &&
          value['jsonrpc'] === '2.0' &&
          typeof value['method'] === 'string' &&
          value['method'] !== ''
          ? { data: JSON.stringify(value), id }
          : { data: JSON.stringify(value) };
      }
      case 4:
        return {
          data: JSON.stringify({
            jsonrpc: '2.0',
            id: `f-${index}`,
            method: `${pick(['nope', 'draft ', 'DRAFT', '__proto__', 'constructor', 'toString'])}`,
          }),
          id: `f-${index}`,
        };
      case 5:
        return { data: Buffer.from([0xff, 0xfe, int(255)]) };
      default: {
        const { value, id } = badParams(index);
        return { data: JSON.stringify(value), id };
      }
    }
  };
}

let harness: TestServer | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

function isErrorResponse(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { jsonrpc?: unknown }).jsonrpc === '2.0' &&
    typeof (value as { error?: { code?: unknown } }).error?.code === 'number'
  );
}

describe('fuzzing the server', () => {
  it('answers 10,000 malformed frames, envelopes and params each with a JSON-RPC error, and keeps serving other clients', async () => {
    const seed = 20_260_221;
    harness = await startTestServer({ rateLimit: false });
    const fuzzer = await harness.raw();
    const bystander = await harness.client();
    const make = generator(seed);
    const frames = Array.from({ length: 10_000 }, (_, index) => make(index));
    const answers: unknown[] = [];
    const done = new Promise<void>((resolve) => {
      fuzzer.on('message', (data: WebSocket.RawData) => {
        answers.push(JSON.parse(String(data)));
        if (answers.length === frames.length) resolve();
      });
    });
    let served = 0;
    for (let index = 0; index < frames.length; index += 1) {
      const frame = frames[index]!;
      fuzzer.send(frame.data, { binary: Buffer.isBuffer(frame.data) });
      if (index % 1_000 === 0) {
        const info = await bystander.request('server_info');
        expect(info.name).toBe('parley');
        await bystander.request('list_sessions');
        served += 1;
      }
    }
    await done;
    expect(served).toBe(10);

    const byId = new Map<string | number, unknown>();
    let singles = 0;
    let batches = 0;
    for (const answer of answers) {
      if (Array.isArray(answer)) {
        batches += 1;
        expect(answer.every(isErrorResponse), JSON.stringify(answer)).toBe(true);
      } else {
        singles += 1;
        expect(isErrorResponse(answer), JSON.stringify(answer)).toBe(true);
        const id = (answer as { id: string | number | null }).id;
        if (id !== null) byId.set(id, answer);
      }
    }
    expect(batches).toBe(frames.filter((frame) => frame.batch !== undefined).length);
    expect(singles).toBe(frames.length - batches);
    for (const frame of frames) if (frame.id !== undefined) expect(byId.has(frame.id), String(frame.data)).toBe(true);
    // Batches are answered whole: one error per entry.
    const batchSizes = answers
      .filter(Array.isArray)
      .map((answer) => (answer as unknown[]).length)
      .sort((a, b) => a - b);
    expect(batchSizes).toEqual(
      frames.flatMap((frame) => (frame.batch === undefined ? [] : [frame.batch])).sort((a, b) => a - b),
    );

    // The fuzzed connection itself still works.
    const ok = new Promise<unknown>((resolve) =>
      fuzzer.once('message', (data: WebSocket.RawData) => resolve(JSON.parse(String(data)))),
    );
    fuzzer.send(JSON.stringify({ jsonrpc: '2.0', id: 'after', method: 'server_info' }));
    expect(await ok).toMatchObject({ id: 'after', result: { name: 'parley' } });
    expect(harness.logs.filter((entry) => entry.level === 'error')).toEqual([]);
  });
});
