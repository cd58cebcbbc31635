/**
 * Line splitting for JSONL transcripts that may be hundreds of megabytes: bytes go in chunk by
 * chunk, complete lines come out, and only the unfinished tail of the last chunk is held. Lines are
 * decoded one at a time, so a multi-byte character split across two chunks is never cut.
 */

/** Called once per line, without its line break. `terminated` is false only for a last line with no newline. */
export type LineHandler = (line: string, lineNumber: number, terminated: boolean) => void;

/**
 * The same, for a reader of raw bytes: the line is `buffer[start, end)`, undecoded (a leading BOM
 * and a trailing carriage return already cut). The buffer is valid only during the call.
 */
export type LineBytesHandler = (
  buffer: Buffer,
  start: number,
  end: number,
  lineNumber: number,
  terminated: boolean,
) => void;

const NEWLINE = 10;
const CARRIAGE_RETURN = 13;

export class LineSplitter {
  private lineNumber = 0;
  /** Pieces of a line that spans chunks; joined once, when its newline arrives. */
  private carry: Buffer[] = [];
  private carryBytes = 0;
  private bytes = 0;

  /** `onBytes`, when given, takes every line instead of `onLine`, undecoded. */
  constructor(
    private readonly onLine: LineHandler,
    private readonly onBytes?: LineBytesHandler,
  ) {}

  /** Bytes pushed so far. */
  get bytesRead(): number {
    return this.bytes;
  }

  /** Lines handed out so far. */
  get linesRead(): number {
    return this.lineNumber;
  }

  push(chunk: Uint8Array | string): void {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : toBuffer(chunk);
    this.bytes += buffer.length;
    let start = 0;
    let newline = buffer.indexOf(NEWLINE, start);
    if (newline !== -1 && this.carryBytes > 0) {
      this.carry.push(buffer.subarray(0, newline));
      const joined = Buffer.concat(this.carry, this.carryBytes + newline);
      this.carry = [];
      this.carryBytes = 0;
      this.emit(joined, 0, joined.length, true);
      start = newline + 1;
      newline = buffer.indexOf(NEWLINE, start);
    }
    while (newline !== -1) {
      this.emit(buffer, start, newline, true);
      start = newline + 1;
      newline = buffer.indexOf(NEWLINE, start);
    }
    if (start < buffer.length) {
      // Copy the tail: keeping a view would pin the whole chunk until the line ends.
      const tail = Buffer.from(buffer.subarray(start));
      this.carry.push(tail);
      this.carryBytes += tail.length;
    }
  }

  /** Hands out a last line that has no newline. Call once, after the last chunk. */
  end(): void {
    if (this.carryBytes === 0) return;
    const joined = Buffer.concat(this.carry, this.carryBytes);
    this.carry = [];
    this.carryBytes = 0;
    this.emit(joined, 0, joined.length, false);
  }

  private emit(buffer: Buffer, start: number, end: number, terminated: boolean): void {
    let stop = end;
    if (stop > start && buffer[stop - 1] === CARRIAGE_RETURN) stop--;
    this.lineNumber++;
    if (this.onBytes !== undefined) {
      let from = start;
      if (this.lineNumber === 1 && buffer[from] === 0xef && buffer[from + 1] === 0xbb && buffer[from + 2] === 0xbf)
        from += 3;
      this.onBytes(buffer, from, stop, this.lineNumber, terminated);
      return;
    }
    let line = buffer.toString('utf8', start, stop);
    if (this.lineNumber === 1 && line.charCodeAt(0) === 0xfeff) line = line.slice(1);
    this.onLine(line, this.lineNumber, terminated);
  }
}

function toBuffer(chunk: Uint8Array): Buffer {
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

/** Splits a whole transcript held in memory, with the same numbering and `terminated` flag as `LineSplitter`. */
export function forEachLine(text: string, onLine: LineHandler): void {
  let start = 0;
  let lineNumber = 0;
  if (text.charCodeAt(0) === 0xfeff) start = 1;
  while (start < text.length) {
    const newline = text.indexOf('\n', start);
    const terminated = newline !== -1;
    let end = terminated ? newline : text.length;
    const next = end + 1;
    if (end > start && text.charCodeAt(end - 1) === CARRIAGE_RETURN) end--;
    lineNumber++;
    onLine(text.slice(start, end), lineNumber, terminated);
    start = next;
  }
}

/** Feeds lines from a string, an iterable of lines (already split) or an async iterable of chunks. */
export type TranscriptInput = string | Iterable<string>;
