/**
 * Token estimation. A real BPE tokenizer (gpt-tokenizer with cl100k_base: the fastest exact counter
 * measured here, 10–15 % faster than its o200k_base with half the cold start and counts within 1.5 %
 * of it; see bench/tokens.bench.ts) loaded lazily on first use; characters / 4 only until it has
 * loaded, or when it cannot load. No model's own tokenizer is available offline, so the
 * counts are calibrated per session against the input tokens a back end reports (`TokenCalibration`).
 *
 * Pure apart from loading the tokenizer module.
 */

/** Counts the tokens of a text. */
export type CountTokens = (text: string) => number;

export type TokenizerStatus = 'idle' | 'loading' | 'ready' | 'failed';

export interface TokenizerState {
  status: TokenizerStatus;
  /** The BPE encoding in use once ready (`cl100k_base`), or `chars/4` while falling back. */
  encoding: string;
  /** Why loading failed, when it did. */
  error?: string;
  /** Milliseconds from the first request to a ready tokenizer. */
  loadMs?: number;
}

/** Counts the tokens of a text: exact once the BPE tokenizer has loaded, characters / 4 until then. */
export interface Tokenizer {
  /** Exact when the BPE tokenizer is ready; characters / 4 until then (and the first call starts loading it). */
  count(text: string): number;
  /** Resolves true once the BPE tokenizer is ready, false when it could not load (counts stay characters / 4). */
  load(): Promise<boolean>;
  /** True when `count` returns BPE counts. */
  readonly ready: boolean;
  state(): TokenizerState;
}

/** Options of `createTokenizer`: how to load the exact counter, and its encoding's name. */
export interface TokenizerOptions {
  /** Loads the exact counter; the default imports gpt-tokenizer's cl100k_base encoding. */
  load?: () => Promise<CountTokens>;
  /** Name reported in `state().encoding` once ready. */
  encoding?: string;
}

export const DEFAULT_TOKEN_ENCODING = 'cl100k_base';
export const FALLBACK_ENCODING = 'chars/4';

/** Characters / 4, rounded up: the fallback before the tokenizer has loaded. */
export function fallbackTokenCount(text: string): number {
  return Math.ceil(text.length / 4);
}

/**
 * Special-token strings (`<|endoftext|>`) in user content are ordinary text to us: counting must
 * never throw on what a user typed. An empty disallowed set makes gpt-tokenizer encode them as text.
 */
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

async function loadGptTokenizer(): Promise<CountTokens> {
  const module = await import('gpt-tokenizer/encoding/cl100k_base');
  const countTokens = module.countTokens;
  const count: CountTokens = (text) => (text.length === 0 ? 0 : countTokens(text, PLAIN_TEXT));
  return (text) => countInPieces(text, count);
}

/** Runs of non-space characters at least this long are counted a slice at a time. */
const LONG_RUN = 512;
const SLICE = 256;

/**
 * BPE merges within one pre-tokenized piece take time quadratic in its length: a run of 100,000
 * letters with no space (a model gone wrong, a minified line) took about 14 s to count, which stalls
 * the server. Such runs are counted in 256-character slices; a merge across a slice's edge is lost,
 * so the count can be a token or so high per slice, and other text is counted whole.
 */
export function countInPieces(text: string, count: CountTokens): number {
  if (text.length < LONG_RUN) return count(text);
  const runs = new RegExp(`\\S{${LONG_RUN},}`, 'g');
  let total = 0;
  let from = 0;
  for (let match = runs.exec(text); match !== null; match = runs.exec(text)) {
    if (match.index > from) total += count(text.slice(from, match.index));
    for (let at = 0; at < match[0].length; at += SLICE) total += count(match[0].slice(at, at + SLICE));
    from = match.index + match[0].length;
  }
  if (from === 0) return count(text);
  if (from < text.length) total += count(text.slice(from));
  return total;
}

/** A tokenizer that loads its BPE counter on first use. `createTokenizer()` with no options is the default one. */
export function createTokenizer(options: TokenizerOptions = {}): Tokenizer {
  const loader = options.load ?? loadGptTokenizer;
  const encoding = options.encoding ?? DEFAULT_TOKEN_ENCODING;
  let exact: CountTokens | undefined;
  let loading: Promise<boolean> | undefined;
  let current: TokenizerState = { status: 'idle', encoding: FALLBACK_ENCODING };

  const load = (): Promise<boolean> => {
    loading ??= (async () => {
      const started = performance.now();
      current = { status: 'loading', encoding: FALLBACK_ENCODING };
      try {
        const counter = await loader();
        // A loader that returns something unusable is a failed load, not a crash on first count.
        if (typeof counter !== 'function' || typeof counter('probe') !== 'number')
          throw new Error('the loaded tokenizer does not count');
        exact = counter;
        current = { status: 'ready', encoding, loadMs: performance.now() - started };
        return true;
      } catch (error) {
        current = {
          status: 'failed',
          encoding: FALLBACK_ENCODING,
          error: error instanceof Error ? error.message : String(error),
        };
        return false;
      }
    })();
    return loading;
  };

  return {
    count(text: string): number {
      if (exact) return exact(text);
      if (!loading) void load();
      return fallbackTokenCount(text);
    },
    load,
    get ready() {
      return exact !== undefined;
    },
    state: () => ({ ...current }),
  };
}

const defaultTokenizer = createTokenizer();

/** The process-wide tokenizer. */
export function getTokenizer(): Tokenizer {
  return defaultTokenizer;
}

/** Tokens in a text: BPE (cl100k_base) once loaded, characters / 4 before (the first call starts loading). */
export function estimateTokens(text: string): number {
  return defaultTokenizer.count(text);
}

/** Loads the process-wide tokenizer; resolves false when only the characters / 4 fallback is available. */
export function loadTokenizer(): Promise<boolean> {
  return defaultTokenizer.load();
}

export interface TokenCounterOptions {
  tokenizer?: Tokenizer;
  /** Most cached counts kept (least recently used go first). Default 50,000. */
  maxEntries?: number;
  /** Most characters of text-keyed entries kept, so big texts do not pin memory. Default 16 million. */
  maxKeyChars?: number;
}

export interface TokenCounterStats {
  hits: number;
  misses: number;
  entries: number;
}

/**
 * Counts with a cache. Messages are counted once (keyed by block id and content length: blocks only
 * grow while streaming and are final once complete); other texts are keyed by the text itself.
 * Only exact counts are cached, so a fallback estimate made before the tokenizer loaded never sticks.
 */
export class TokenCounter {
  readonly tokenizer: Tokenizer;
  private readonly maxEntries: number;
  private readonly maxKeyChars: number;
  private readonly cache = new Map<string, number>();
  /**
   * One iterator over the cache, kept: a Map iterator stays live as keys are deleted and re-inserted,
   * so it always yields the least recently used key, and it passes each deleted slot once. A fresh
   * `keys().next()` per eviction walked every slot deleted since the table was last rehashed: at the
   * bound, counting a 400,000-unit conversation spent 19 s there (bench/soak-huge-session.ts).
   */
  private oldest: Iterator<string> = this.cache.keys();
  private keyChars = 0;
  private hits = 0;
  private misses = 0;

  constructor(options: TokenCounterOptions = {}) {
    this.tokenizer = options.tokenizer ?? defaultTokenizer;
    this.maxEntries = options.maxEntries ?? 50_000;
    this.maxKeyChars = options.maxKeyChars ?? 16_000_000;
  }

  /** Uncached count. */
  count(text: string): number {
    return this.tokenizer.count(text);
  }

  /** Count of `text` cached under `key` (a block id plus something that changes when the text does). */
  countKeyed(key: string, text: string): number {
    const cached = this.cache.get(key);
    if (cached !== undefined) {
      this.hits++;
      // Re-insert: Map keeps insertion order, so the first key is the least recently used.
      this.cache.delete(key);
      this.cache.set(key, cached);
      return cached;
    }
    this.misses++;
    const counted = this.tokenizer.count(text);
    if (this.tokenizer.ready) this.remember(key, counted);
    return counted;
  }

  /** Count of a text cached by the text itself (context sections, rendered checkpoints). */
  countText(text: string): number {
    if (text.length < 64) return this.tokenizer.count(text);
    return this.countKeyed(text, text);
  }

  stats(): TokenCounterStats {
    return { hits: this.hits, misses: this.misses, entries: this.cache.size };
  }

  clear(): void {
    this.cache.clear();
    this.oldest = this.cache.keys();
    this.keyChars = 0;
  }

  private remember(key: string, count: number): void {
    this.cache.set(key, count);
    this.keyChars += key.length;
    while (this.cache.size > this.maxEntries || this.keyChars > this.maxKeyChars) {
      let oldest = this.oldest.next();
      if (oldest.done) {
        this.oldest = this.cache.keys();
        oldest = this.oldest.next();
        if (oldest.done) break;
      }
      this.cache.delete(oldest.value);
      this.keyChars -= oldest.value.length;
    }
  }
}

export interface TokenCalibrationSnapshot {
  /** Real / estimated input tokens, applied to later estimates (1 until a back end reported real numbers). */
  ratio: number;
  samples: number;
  /** The last request's estimate and the real count the back end reported for it. */
  lastEstimated?: number;
  lastReal?: number;
}

export interface TokenCalibrationOptions {
  /** Samples whose ratio is averaged (by token sums, so big requests weigh more). Default 8. */
  window?: number;
  /** Bounds of the applied ratio, against absurd reports. Default 0.5 to 3. */
  minRatio?: number;
  maxRatio?: number;
  /** Requests smaller than this are too noisy to calibrate on. Default 200 tokens. */
  minSampleTokens?: number;
}

/**
 * The ratio between what a back end counted and what Parley estimated for the same requests. No
 * tokenizer here is the model's own; the back end's usage is the ground truth, so later estimates
 * are scaled by it. One per session (sessions may run on different models).
 */
export class TokenCalibration {
  private readonly samples: Array<{ estimated: number; real: number }> = [];
  private readonly window: number;
  private readonly minRatio: number;
  private readonly maxRatio: number;
  private readonly minSampleTokens: number;
  private total = 0;
  private last: { estimated: number; real: number } | undefined;

  constructor(options: TokenCalibrationOptions = {}) {
    this.window = options.window ?? 8;
    this.minRatio = options.minRatio ?? 0.5;
    this.maxRatio = options.maxRatio ?? 3;
    this.minSampleTokens = options.minSampleTokens ?? 200;
  }

  /** Records one request: Parley's raw estimate and the input tokens the back end reported. Returns whether it was used. */
  record(estimated: number, real: number): boolean {
    if (!Number.isFinite(estimated) || !Number.isFinite(real) || estimated < this.minSampleTokens || real <= 0)
      return false;
    this.last = { estimated, real };
    this.samples.push({ estimated, real });
    if (this.samples.length > this.window) this.samples.shift();
    this.total++;
    return true;
  }

  get ratio(): number {
    if (this.samples.length === 0) return 1;
    let estimated = 0;
    let real = 0;
    for (const sample of this.samples) {
      estimated += sample.estimated;
      real += sample.real;
    }
    return Math.min(this.maxRatio, Math.max(this.minRatio, real / estimated));
  }

  /** A raw estimate scaled by the ratio, rounded up. */
  apply(estimate: number): number {
    return Math.ceil(estimate * this.ratio);
  }

  /** The largest raw estimate whose calibrated value stays within `tokens`. */
  invert(tokens: number): number {
    return Math.floor(tokens / this.ratio);
  }

  snapshot(): TokenCalibrationSnapshot {
    return {
      ratio: this.ratio,
      samples: this.total,
      ...(this.last ? { lastEstimated: this.last.estimated, lastReal: this.last.real } : {}),
    };
  }
}
