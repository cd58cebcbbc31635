/**
 * Long output is cut in the middle, and the cut is marked: the start (what ran, the first error)
 * and the end (the summary, the exit) are what a model and a person need.
 */
export function capMiddle(text: string, maxChars: number): { text: string; cut: number } {
  if (text.length <= maxChars) return { text, cut: 0 };
  const head = Math.ceil(maxChars / 2);
  const tail = maxChars - head;
  const cut = text.length - head - tail;
  return {
    text: `${text.slice(0, head)}\n[… ${cut} characters cut from the middle …]\n${text.slice(text.length - tail)}`,
    cut,
  };
}

/**
 * Collects a stream's text while keeping memory bounded: the first half of the cap and a rolling
 * last half, counting what falls between. The result is what `capMiddle` would give on the whole.
 */
export class MiddleCutBuffer {
  private head = '';
  private tail = '';
  private dropped = 0;
  private readonly headLimit: number;
  private readonly tailLimit: number;

  constructor(private readonly maxChars: number) {
    this.headLimit = Math.ceil(maxChars / 2);
    this.tailLimit = maxChars - this.headLimit;
  }

  push(chunk: string): void {
    if (this.head.length < this.headLimit) {
      const room = this.headLimit - this.head.length;
      this.head += chunk.slice(0, room);
      chunk = chunk.slice(room);
    }
    if (chunk === '') return;
    this.tail += chunk;
    // Trim in batches, not on every chunk, so a chatty command costs little.
    if (this.tail.length > this.tailLimit * 2) this.trimTail();
  }

  text(): { text: string; cut: number } {
    this.trimTail();
    if (this.dropped === 0) return { text: this.head + this.tail, cut: 0 };
    return {
      text: `${this.head}\n[… ${this.dropped} characters cut from the middle …]\n${this.tail}`,
      cut: this.dropped,
    };
  }

  private trimTail(): void {
    if (this.tail.length <= this.tailLimit) return;
    const excess = this.tail.length - this.tailLimit;
    this.dropped += excess;
    this.tail = this.tail.slice(excess);
  }

  get limit(): number {
    return this.maxChars;
  }
}
