import { EventEmitter } from 'node:events';

/**
 * A terminal for Ink to render into inside a bench: it counts the bytes written, keeps the newest
 * `keep` characters, and `until(marker)` resolves once a frame shows the marker (failing with the
 * last output after 10 s: a frame that never came).
 */
export class InkTerminal extends EventEmitter {
  readonly isTTY = true;
  bytes = 0;
  text = '';
  private waiting: { marker: string; resolve: () => void } | undefined;

  constructor(
    readonly columns: number,
    readonly rows = 40,
    private readonly keep = 8_192,
  ) {
    super();
  }

  write(chunk: string | Uint8Array): boolean {
    const value = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    this.bytes += Buffer.byteLength(value);
    this.text = (this.text + value).slice(-this.keep);
    if (this.waiting && this.text.includes(this.waiting.marker)) {
      const { resolve } = this.waiting;
      this.waiting = undefined;
      resolve();
    }
    return true;
  }

  until(marker: string): Promise<void> {
    if (this.text.includes(marker)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`No frame showed ${marker}; last output:\n${this.text.slice(-1_000)}`)),
        10_000,
      );
      this.waiting = {
        marker,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
    });
  }
}
