import { describe, expect, it } from 'vitest';
import { AgentPool, compileOutputSchema, jsonCandidates, WorkerSlots } from '../../src/draft/index.js';

describe('structured output', () => {
  const validator = compileOutputSchema({
    type: 'object',
    properties: { summary: { type: 'string' }, count: { type: 'integer', minimum: 0 } },
    required: ['summary', 'count'],
  });

  it('finds JSON in plain answers, code fences and prose', () => {
    expect(jsonCandidates('{"a":1}')).toEqual([{ a: 1 }]);
    expect(jsonCandidates('Here:\n```json\n{"a":2}\n```\nDone.')).toContainEqual({ a: 2 });
    expect(jsonCandidates('The result is {"a":3} as asked.')).toContainEqual({ a: 3 });
    expect(jsonCandidates('no json here')).toEqual([]);
  });

  it('validates against the schema and names the failing field', () => {
    expect(validator.validate('{"summary":"ok","count":2}')).toEqual({ ok: true, value: { summary: 'ok', count: 2 } });
    const wrong = validator.validate('{"summary":"ok","count":-1}');
    expect(wrong.ok).toBe(false);
    expect((wrong as { problem: string }).problem).toContain('count');
    expect(validator.validate('prose only')).toEqual({ ok: false, problem: 'the answer contains no JSON value' });
  });

  it('a schema that cannot be used is INVALID_INPUT', () => {
    expect(() => compileOutputSchema({ $ref: '#/definitions/missing' })).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT' }),
    );
  });
});

describe('worker slots', () => {
  it('grants up to the cap, queues the rest in order, and passes slots on release', async () => {
    const slots = new WorkerSlots(2);
    const first = await slots.acquire();
    const second = await slots.acquire();
    const order: string[] = [];
    const third = slots.acquire().then((release) => (order.push('third'), release));
    const fourth = slots.acquire().then((release) => (order.push('fourth'), release));
    expect([slots.active, slots.queued]).toEqual([2, 2]);
    first!();
    first!(); // releasing twice is harmless
    const releaseThird = await third;
    expect(order).toEqual(['third']);
    expect([slots.active, slots.queued]).toEqual([2, 1]);
    second!();
    const releaseFourth = await fourth;
    expect(order).toEqual(['third', 'fourth']);
    releaseThird!();
    releaseFourth!();
    expect([slots.active, slots.queued]).toEqual([0, 0]);
  });

  it('an aborted waiter leaves the queue without taking a slot', async () => {
    const slots = new WorkerSlots(1);
    const held = await slots.acquire();
    const controller = new AbortController();
    const waiting = slots.acquire(controller.signal);
    controller.abort();
    expect(await waiting).toBeUndefined();
    expect(slots.queued).toBe(0);
    held!();
    expect(slots.active).toBe(0);
    expect(() => new WorkerSlots(0)).toThrow(RangeError);
  });
});

describe('agent pool', () => {
  it('keeps copies, updates and releases entries', () => {
    const pool = new AgentPool();
    const agent = {
      agentId: 'a',
      kind: 'worker' as const,
      role: 'dev',
      project: 'p',
      status: 'queued' as const,
      sessionId: 's',
      startedAt: new Date(0).toISOString(),
      costUsd: 0,
    };
    pool.register(agent);
    agent.status = 'failed' as never;
    expect(pool.get('a')!.status).toBe('queued');
    expect(pool.update('a', { status: 'running' })!.status).toBe('running');
    expect(pool.list((entry) => entry.status === 'running')).toHaveLength(1);
    pool.release('a');
    expect(pool.get('a')).toBeUndefined();
    expect(pool.update('a', { status: 'running' })).toBeUndefined();
  });
});
