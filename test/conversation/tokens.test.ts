import fc from 'fast-check';
import { countTokens as cl100kCount } from 'gpt-tokenizer/encoding/cl100k_base';
import { describe, expect, it } from 'vitest';
import { countInPieces } from '../../src/conversation/tokens.js';
import {
  TokenCalibration,
  TokenCounter,
  createTokenizer,
  estimateTokens,
  fallbackTokenCount,
  getTokenizer,
  loadTokenizer,
  type CountTokens,
} from '../../src/conversation/index.js';

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (error: unknown) => void } {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  return { promise, resolve, reject };
}

describe('tokenizer', () => {
  it('counts with the cl100k_base BPE once loaded', async () => {
    expect(await loadTokenizer()).toBe(true);
    const text = 'The quick brown fox jumps over the lazy dog. `const answer = 42;`\n'.repeat(20);
    expect(estimateTokens(text)).toBe(cl100kCount(text));
    expect(getTokenizer().state()).toMatchObject({ status: 'ready', encoding: 'cl100k_base' });
    expect(estimateTokens('')).toBe(0);
  });

  it('treats special-token strings a user typed as text instead of throwing', async () => {
    await loadTokenizer();
    expect(() => estimateTokens('a <|endoftext|> b <|im_start|>')).not.toThrow();
    expect(estimateTokens('a <|endoftext|> b')).toBeGreaterThan(3);
  });

  it('answers characters / 4 before the tokenizer has loaded, starts loading on the first count, then counts exactly', async () => {
    const gate = deferred<CountTokens>();
    let loads = 0;
    const tokenizer = createTokenizer({
      load: () => {
        loads++;
        return gate.promise;
      },
      encoding: 'test',
    });
    expect(tokenizer.state().status).toBe('idle');
    expect(tokenizer.count('12345678')).toBe(2);
    expect(tokenizer.state().status).toBe('loading');
    expect(tokenizer.count('123456789')).toBe(3);
    expect(loads).toBe(1);
    gate.resolve((text) => text.length);
    expect(await tokenizer.load()).toBe(true);
    expect(tokenizer.ready).toBe(true);
    expect(tokenizer.count('12345678')).toBe(8);
    expect(tokenizer.state()).toMatchObject({ status: 'ready', encoding: 'test' });
    expect(loads).toBe(1);
  });

  it('falls back to characters / 4 for good when the tokenizer cannot load, and says why', async () => {
    const tokenizer = createTokenizer({ load: () => Promise.reject(new Error('Cannot find package gpt-tokenizer')) });
    expect(await tokenizer.load()).toBe(false);
    expect(tokenizer.ready).toBe(false);
    expect(tokenizer.count('x'.repeat(40))).toBe(10);
    expect(tokenizer.state()).toEqual({
      status: 'failed',
      encoding: 'chars/4',
      error: 'Cannot find package gpt-tokenizer',
    });
  });

  it('a loader that returns something that does not count is a failed load', async () => {
    const tokenizer = createTokenizer({ load: async () => (() => 'nope') as unknown as CountTokens });
    expect(await tokenizer.load()).toBe(false);
    expect(tokenizer.count('abcd')).toBe(1);
  });

  it('the fallback rounds up', () => {
    expect(fallbackTokenCount('')).toBe(0);
    expect(fallbackTokenCount('a')).toBe(1);
    expect(fallbackTokenCount('abcde')).toBe(2);
  });
});

describe('TokenCounter', () => {
  it('counts a message once and serves it from the cache after', () => {
    let calls = 0;
    const tokenizer = createTokenizer({ load: async () => (text: string) => (calls++, text.length) });
    return tokenizer.load().then(() => {
      const counter = new TokenCounter({ tokenizer });
      calls = 0;
      expect(counter.countKeyed('block-1#5', 'hello')).toBe(5);
      expect(counter.countKeyed('block-1#5', 'hello')).toBe(5);
      expect(calls).toBe(1);
      expect(counter.stats()).toEqual({ hits: 1, misses: 1, entries: 1 });
      // The key changes with the content length, so a grown block is counted again.
      expect(counter.countKeyed('block-1#11', 'hello world')).toBe(11);
      expect(calls).toBe(2);
    });
  });

  it('never caches a fallback estimate made before the tokenizer loaded', async () => {
    const gate = deferred<CountTokens>();
    const tokenizer = createTokenizer({ load: () => gate.promise });
    const counter = new TokenCounter({ tokenizer });
    expect(counter.countKeyed('b#8', '12345678')).toBe(2);
    gate.resolve((text) => text.length);
    await tokenizer.load();
    expect(counter.countKeyed('b#8', '12345678')).toBe(8);
  });

  it('evicts the least recently used counts beyond its bounds', async () => {
    const tokenizer = createTokenizer({ load: async () => (text: string) => text.length });
    await tokenizer.load();
    const counter = new TokenCounter({ tokenizer, maxEntries: 2 });
    counter.countKeyed('a', 'x');
    counter.countKeyed('b', 'xx');
    counter.countKeyed('a', 'x'); // a is now the most recently used
    counter.countKeyed('c', 'xxx');
    expect(counter.stats().entries).toBe(2);
    const before = counter.stats().misses;
    counter.countKeyed('a', 'x');
    expect(counter.stats().misses).toBe(before);
    counter.countKeyed('b', 'xx');
    expect(counter.stats().misses).toBe(before + 1);

    // Many evictions and hits in a row keep exactly the most recently used keys (as a plain list would).
    const many = new TokenCounter({ tokenizer, maxEntries: 50 });
    let order: string[] = [];
    let seed = 12345;
    for (let step = 0; step < 5_000; step++) {
      // Skewed toward low numbers, so some keys are hit again before they go and others are not.
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      const key = `k${Math.floor((seed / 2 ** 31) ** 2 * 120)}`;
      many.countKeyed(key, 'x');
      order = [...order.filter((other) => other !== key), key].slice(-50);
    }
    expect(many.stats().hits).toBeGreaterThan(1_000);
    const kept = many.stats().misses;
    for (const key of order) many.countKeyed(key, 'x');
    expect(many.stats().misses).toBe(kept);
    many.clear();
    many.countKeyed('after-clear', 'x');
    expect(many.stats().entries).toBe(1);

    const byChars = new TokenCounter({ tokenizer, maxKeyChars: 200 });
    byChars.countText('y'.repeat(150));
    byChars.countText('z'.repeat(150));
    expect(byChars.stats().entries).toBe(1);
  });
});

describe('TokenCalibration', () => {
  it('is 1 until a back end reports real numbers', () => {
    const calibration = new TokenCalibration();
    expect(calibration.ratio).toBe(1);
    expect(calibration.apply(1000)).toBe(1000);
    expect(calibration.snapshot()).toEqual({ ratio: 1, samples: 0 });
  });

  it('keeps the ratio real / estimated and applies it to later estimates', () => {
    const calibration = new TokenCalibration();
    expect(calibration.record(10_000, 11_000)).toBe(true);
    expect(calibration.ratio).toBeCloseTo(1.1);
    expect(calibration.apply(20_000)).toBe(22_000);
    calibration.record(30_000, 33_000);
    expect(calibration.ratio).toBeCloseTo(1.1);
    expect(calibration.snapshot()).toEqual({
      ratio: calibration.ratio,
      samples: 2,
      lastEstimated: 30_000,
      lastReal: 33_000,
    });
  });

  it('weighs samples by size, forgets old ones, ignores tiny or absurd reports and clamps the ratio', () => {
    const calibration = new TokenCalibration({ window: 2 });
    calibration.record(1000, 2000);
    calibration.record(1000, 1000);
    calibration.record(3000, 3000);
    expect(calibration.ratio).toBeCloseTo(1);
    expect(calibration.record(50, 500)).toBe(false);
    expect(calibration.record(1000, 0)).toBe(false);
    expect(calibration.record(Number.NaN, 10)).toBe(false);
    const wild = new TokenCalibration();
    wild.record(1000, 100_000);
    expect(wild.ratio).toBe(3);
    wild.record(100_000, 1);
    expect(wild.ratio).toBeGreaterThanOrEqual(0.5);
  });

  it('invert gives the largest raw estimate whose calibrated value fits', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 200, max: 1_000_000 }),
        fc.integer({ min: 1, max: 2_000_000 }),
        fc.integer({ min: 1, max: 500_000 }),
        (estimated, real, budget) => {
          const calibration = new TokenCalibration();
          calibration.record(estimated, real);
          const raw = calibration.invert(budget);
          expect(calibration.apply(raw)).toBeLessThanOrEqual(budget);
          expect(calibration.apply(raw + 1)).toBeGreaterThan(budget);
        },
      ),
    );
  });
});

describe('counting a long run with no space', () => {
  it('hands the BPE counter slices of a long run, and any other text whole', () => {
    const seen: string[] = [];
    const counter = (text: string) => {
      seen.push(text);
      return text.length;
    };
    const prose = 'A short sentence before it. ';
    const run = 'x'.repeat(1_000);
    expect(countInPieces(prose + run + ' and after.', counter)).toBe(prose.length + 1_000 + ' and after.'.length);
    expect(seen).toEqual([prose, 'x'.repeat(256), 'x'.repeat(256), 'x'.repeat(256), 'x'.repeat(232), ' and after.']);
    seen.length = 0;
    const long = 'words and more words '.repeat(100);
    expect(countInPieces(long, counter)).toBe(long.length);
    expect(seen).toEqual([long]);
  });

  it('counts 100,000 letters in a row as the BPE tokenizer would, and prose exactly as before', async () => {
    const tokenizer = createTokenizer();
    expect(await tokenizer.load()).toBe(true);
    expect(tokenizer.count('x'.repeat(100_000))).toBe(cl100kCount('x'.repeat(4_000)) * 25);
    const prose = 'The quick brown fox jumps over the lazy dog. '.repeat(200);
    expect(tokenizer.count(prose)).toBe(cl100kCount(prose));
  });
});
