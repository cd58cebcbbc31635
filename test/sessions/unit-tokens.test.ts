import { describe, expect, it } from 'vitest';
import { TokenCounter, createTokenizer, type CountTokens } from '../../src/conversation/index.js';
import type { ProjectedMessage } from '../../src/sessions/projection.js';
import { UnitTokens } from '../../src/sessions/unit-tokens.js';

function unit(index: number, content = `**User**: message ${index}`): ProjectedMessage {
  return {
    key: `s:b${index}#${content.length}`,
    kind: 'message',
    role: 'user',
    content,
    blockIds: [`b${index}`],
    firstSeq: index,
    lastSeq: index,
    complete: true,
  };
}

/** A tokenizer that counts characters and how often it was asked. */
async function countingTokenizer(slow = 0): Promise<{ counter: TokenCounter; calls: () => number }> {
  let calls = 0;
  const count: CountTokens = (text) => {
    calls++;
    // Busy for `slow` ms, like BPE over a long text: what makes counting ahead give the loop back.
    const until = performance.now() + slow;
    while (performance.now() < until);
    return text.length;
  };
  const tokenizer = createTokenizer({ load: () => Promise.resolve(count) });
  await tokenizer.load();
  // Loading probes the tokenizer once; only the counts asked for after are counted.
  const probes = calls;
  return { counter: new TokenCounter({ tokenizer, maxEntries: 10 }), calls: () => calls - probes };
}

describe('UnitTokens', () => {
  it("counts each unit once, however many units there are beside the counter's cache", async () => {
    const { counter, calls } = await countingTokenizer();
    const counts = new UnitTokens(counter);
    const units = Array.from({ length: 1_000 }, (_, index) => unit(index));
    await counts.countAhead(units);
    expect(calls()).toBe(1_000);
    for (const each of units) expect(counts.of(each)).toBe(each.content.length);
    await counts.countAhead(units);
    expect(calls()).toBe(1_000);
    // A unit whose text changed has a new key, and is counted again.
    const grown = unit(3, '**User**: message 3, and more');
    expect(counts.of(grown)).toBe(grown.content.length);
    expect(calls()).toBe(1_001);
  });

  it('gives the event loop back while it counts a long conversation', async () => {
    const { counter } = await countingTokenizer(0.05);
    const counts = new UnitTokens(counter);
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 1);
    try {
      await counts.countAhead(Array.from({ length: 4_000 }, (_, index) => unit(index)));
    } finally {
      clearInterval(ticker);
    }
    // 4,000 × 0.05 ms is 200 ms of counting, given back every 10 ms: a timer that never ran would read 0.
    expect(ticks).toBeGreaterThan(0);
  });

  it('stops counting when its signal aborts, with the reason', async () => {
    const { counter } = await countingTokenizer(0.05);
    const controller = new AbortController();
    const reason = new Error('the client went away');
    setTimeout(() => controller.abort(reason), 1);
    await expect(
      new UnitTokens(counter).countAhead(
        Array.from({ length: 100_000 }, (_, index) => unit(index)),
        controller.signal,
      ),
    ).rejects.toBe(reason);
  });

  it('keeps no estimate made before the tokenizer loaded', () => {
    let loaded: ((count: CountTokens) => void) | undefined;
    const tokenizer = createTokenizer({ load: () => new Promise<CountTokens>((resolve) => (loaded = resolve)) });
    const counter = new TokenCounter({ tokenizer });
    const counts = new UnitTokens(counter);
    const one = unit(1, '12345678');
    expect(counts.of(one)).toBe(2);
    void tokenizer.load();
    loaded!((text) => text.length);
    return tokenizer.load().then(() => {
      expect(counts.of(one)).toBe(8);
      expect(counts.size).toBe(1);
    });
  });

  it('lets go of the counts of units a new projection no longer has, once they outnumber it', async () => {
    const { counter } = await countingTokenizer();
    const counts = new UnitTokens(counter);
    await counts.countAhead(Array.from({ length: 5_000 }, (_, index) => unit(index)));
    // A count derived from a unit (its pruned form) goes when the unit goes, and stays while it stays.
    counts.countKeyed(`${unit(1).key}\0pruned`, 'pruned 1');
    counts.countKeyed(`${unit(4_999).key}\0pruned`, 'pruned 4999');
    const now = [unit(4_998), unit(4_999)];
    counts.retainOnly(now);
    expect(counts.size).toBe(3);
    // Fewer than four times the units (and a thousand) are left as they are: a growing session is not swept every turn.
    await counts.countAhead([unit(5_000)]);
    counts.retainOnly([unit(5_000)]);
    expect(counts.size).toBe(4);
  });
});
