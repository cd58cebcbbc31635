import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Bytes held in memory before the text goes to a temporary file. */
const DEFAULT_MEMORY_BYTES = 8 * 1024 * 1024;
/** Bytes read from the file at once when a line is not in the window read last. */
const READ_WINDOW_BYTES = 256 * 1024;

/**
 * Append-only text kept by position, in memory up to `memoryBytes`, past that in a temporary file
 * (removed by `close`): `parley show` of an imported session keeps each rendered line here, so a
 * session of any size holds a few numbers per line rather than the text (the first `parley show`
 * of a 1 GB transcript held 1.4 GB). A line is appended whole and read back whole by its offset
 * and length, as UTF-8 bytes (what the terminal gets).
 */
export class SpillText {
  private buffer: Buffer;
  private used = 0;
  /** Bytes already in the file: offsets below this are read from it. */
  private fileBytes = 0;
  private folder: string | undefined;
  private fd: number | undefined;
  /** The bytes of the file read last, for the lines after it. */
  private window = Buffer.alloc(0);
  private windowStart = 0;
  private windowLength = 0;

  constructor(private readonly memoryBytes = DEFAULT_MEMORY_BYTES) {
    this.buffer = Buffer.allocUnsafe(Math.min(64 * 1024, memoryBytes));
  }

  /** Appends `text`; returns its offset (its length is `Buffer.byteLength(text)`, also returned). */
  append(text: string): { offset: number; length: number } {
    const most = text.length * 3;
    if (this.buffer.length - this.used < most) this.makeRoom(most);
    if (this.buffer.length - this.used < most) {
      // Longer than what memory holds: straight to the file.
      const bytes = Buffer.from(text, 'utf8');
      const offset = this.fileBytes;
      this.writeFile(bytes);
      return { offset, length: bytes.length };
    }
    const offset = this.fileBytes + this.used;
    const length = this.buffer.write(text, this.used, 'utf8');
    this.used += length;
    return { offset, length };
  }

  /** Copies the bytes at `offset` into `target` at `at`. */
  copy(offset: number, length: number, target: Buffer, at: number): void {
    if (offset >= this.fileBytes) {
      const start = offset - this.fileBytes;
      this.buffer.copy(target, at, start, start + length);
      return;
    }
    if (offset < this.windowStart || offset + length > this.windowStart + this.windowLength) {
      const size = Math.max(READ_WINDOW_BYTES, length);
      if (this.window.length < size) this.window = Buffer.allocUnsafe(size);
      this.windowStart = offset;
      this.windowLength = 0;
      const wanted = Math.min(size, this.fileBytes - offset);
      while (this.windowLength < wanted) {
        const read = readSync(
          this.fd!,
          this.window,
          this.windowLength,
          wanted - this.windowLength,
          offset + this.windowLength,
        );
        if (read === 0)
          throw new Error(`the temporary file of \`parley show\` ended at ${offset + this.windowLength} bytes`);
        this.windowLength += read;
      }
    }
    const start = offset - this.windowStart;
    this.window.copy(target, at, start, start + length);
  }

  /** Whether the text went to a file (past `memoryBytes`). */
  get spilled(): boolean {
    return this.fd !== undefined;
  }

  /** Removes the temporary file, if there is one. */
  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    if (this.folder !== undefined) rmSync(this.folder, { recursive: true, force: true });
    this.folder = undefined;
  }

  private makeRoom(needed: number): void {
    const wanted = this.used + needed;
    if (wanted <= this.memoryBytes) {
      let size = this.buffer.length;
      while (size < wanted) size *= 2;
      const larger = Buffer.allocUnsafe(Math.min(size, this.memoryBytes));
      this.buffer.copy(larger, 0, 0, this.used);
      this.buffer = larger;
      return;
    }
    // Memory is full: what it holds goes to the file, and the buffer starts again empty.
    if (this.used > 0) this.writeFile(this.buffer.subarray(0, this.used));
    this.used = 0;
    if (this.buffer.length < Math.min(needed, this.memoryBytes))
      this.buffer = Buffer.allocUnsafe(Math.min(Math.max(needed, this.buffer.length * 2), this.memoryBytes));
  }

  private writeFile(bytes: Uint8Array): void {
    if (this.fd === undefined) {
      this.folder = mkdtempSync(join(tmpdir(), 'parley-show-'));
      this.fd = openSync(join(this.folder, 'lines'), 'w+');
    }
    let written = 0;
    while (written < bytes.length)
      written += writeSync(this.fd, bytes, written, bytes.length - written, this.fileBytes + written);
    this.fileBytes += bytes.length;
  }
}
