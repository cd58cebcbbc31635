import type { TokenCounter } from '../conversation/index.js';
import type { ProjectedMessage } from './projection.js';

/** Counting ahead gives the event loop back this often, so other clients are answered meanwhile. */
const SLICE_MS = 10;

/**
 * The token counts of one session's projected units, by unit key (which changes whenever a unit's
 * text does), kept as long as the session's projection is. A long session is counted once, not per
 * request: through the counter's shared cache (50,000 entries) a conversation of more units than
 * that missed on every unit of every request, and counted each one twice (measure, then assemble).
 * Only exact counts are kept: an estimate made before the tokenizer loaded is never remembered.
 */
export class UnitTokens {
  private readonly counts = new Map<string, number>();

  constructor(private readonly counter: TokenCounter) {}

  /** The tokens of `unit`'s content, counted now (and kept) when they are not known yet. */
  readonly of = (unit: ProjectedMessage): number => this.countKeyed(unit.key, unit.content);

  /** The tokens of `text` kept under `key` (a unit's key, or one made from it for a text derived from the unit, such as its pruned form). */
  countKeyed(key: string, text: string): number {
    const known = this.counts.get(key);
    if (known !== undefined) return known;
    const counted = this.counter.count(text);
    if (this.counter.tokenizer.ready) this.counts.set(key, counted);
    return counted;
  }

  /**
   * Counts every unit of `units` not counted yet, a slice at a time, giving the event loop back
   * between slices: the first request of a session of a million events counts for seconds, and the
   * server must go on answering everyone else. Rejects with the signal's reason when it aborts.
   */
  async countAhead(units: readonly ProjectedMessage[], signal?: AbortSignal): Promise<void> {
    await this.counter.tokenizer.load();
    let sliceStarted = performance.now();
    for (let index = 0; index < units.length; index++) {
      this.of(units[index]!);
      if ((index & 255) === 255 && performance.now() - sliceStarted >= SLICE_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        signal?.throwIfAborted();
        sliceStarted = performance.now();
      }
    }
  }

  /**
   * Lets go of the counts of units no longer in `units` (the session's new projection), once they
   * outnumber them; a unit's derived counts (keys that start with its key and a NUL) go with it.
   */
  retainOnly(units: readonly ProjectedMessage[]): void {
    if (this.counts.size <= 4 * units.length + 1_000) return;
    const live = new Set(units.map((unit) => unit.key));
    for (const key of this.counts.keys()) {
      const nul = key.indexOf('\0');
      if (!live.has(nul === -1 ? key : key.slice(0, nul))) this.counts.delete(key);
    }
  }

  /** How many counts are kept. */
  get size(): number {
    return this.counts.size;
  }
}
