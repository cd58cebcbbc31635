import { closeSync, fdatasyncSync, fstatSync, ftruncateSync, openSync, promises as fs, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { ValidationError, type StreamEvent, type UnsequencedEvent } from '../../conversation/index.js';
import { isErrno, ioError, syncDirectory, writeDurably } from '../atomic-file.js';
import { StoreError, type StoreWarning } from '../errors.js';
import { checkFormatVersion, corruptFile } from '../json-file.js';
import { FORMAT_VERSION } from '../record-format.js';
import type { ReadLogOptions } from './session-store.js';

/**
 * A session's append-only log, `log.jsonl`: a header line, then one StreamEvent per line, with
 * `seq` 0, 1, 2… in order. Appends are group-committed: every append that arrives before the
 * next flush goes into one write + fdatasync, in call order, and resolves only after it.
 */

const NEWLINE = 0x0a;
const READ_CHUNK = 1 << 20;
/** The encode buffer shared by every log's flush (flushes are synchronous); larger ones are let go after use. */
const KEPT_BUFFER_BYTES = 8 << 20;
let encoded: Buffer = Buffer.allocUnsafe(1 << 20);

/** `buffer`, or a larger copy of its first `used` bytes, with room for `needed` more. */
function capacityFor(buffer: Buffer, used: number, needed: number): Buffer {
  if (buffer.length - used >= needed) return buffer;
  const larger = Buffer.allocUnsafe(Math.max(buffer.length * 2, used + needed));
  buffer.copy(larger, 0, 0, used);
  return larger;
}

/**
 * The header of a log. A fork's log numbers its events from one past its fork point (the history
 * before it is its source's), and says so in `firstSeq`; a log without it starts at 0.
 */
export function logHeaderLine(sessionId: string, firstSeq = 0): string {
  const header = {
    formatVersion: FORMAT_VERSION,
    kind: 'parley-log',
    sessionId,
    ...(firstSeq > 0 ? { firstSeq } : {}),
  };
  return `${JSON.stringify(header)}\n`;
}

interface PendingAppend {
  events: readonly UnsequencedEvent[];
  resolve: (events: StreamEvent[]) => void;
  reject: (error: unknown) => void;
}

export class SessionLog {
  /** Byte offset of each event's line; index = seq - firstSeq. */
  private readonly offsets: number[];
  /** Bytes known durable: the end of the last complete, fsynced line. */
  private size: number;
  private fd: number | undefined;
  private pending: PendingAppend[] = [];
  private scheduled = false;
  private releaseAfterFlush = false;
  private closed = false;
  /**
   * Set when the file may hold bytes past `size` that were never acknowledged (a failed write whose
   * undo failed too, or a torn tail that could not be set aside at open): they are cut off before
   * the next write, and that write is refused while the cut fails.
   */
  private needsRepair = false;

  private constructor(
    readonly path: string,
    readonly sessionId: string,
    /** The seq of the first line (the header's `firstSeq`, 0 unless the session is a fork). */
    readonly firstSeq: number,
    offsets: number[],
    size: number,
  ) {
    this.offsets = offsets;
    this.size = size;
  }

  /**
   * Opens a log: checks its header, indexes its lines, and sets a torn last line (a crash in the
   * middle of a write) aside to `log.jsonl.torn-<time>` with a warning, truncating the log to its
   * last complete line. Lines that were acknowledged were complete and fsynced, so none is lost.
   */
  static async open(path: string, sessionId: string, warn: (warning: StoreWarning) => void): Promise<SessionLog> {
    let content: Buffer;
    try {
      content = await fs.readFile(path);
    } catch (error) {
      const problem = isErrno(error, 'ENOENT') ? 'the file is missing' : `it cannot be read (${String(error)})`;
      throw corruptFile(
        path,
        problem,
        'Restore log.jsonl from a backup; without it the session has no history.',
        error,
      );
    }
    const scan = scanLog(content, path, sessionId);
    let needsRepair = false;
    if (scan.tornFrom < content.length) {
      const tornPath = `${path}.torn-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      const torn = content.subarray(scan.tornFrom);
      try {
        await setTornTailAside(path, tornPath, torn, scan.tornFrom);
        warn({
          code: 'TORN_LOG_TAIL',
          sessionId,
          file: tornPath,
          message:
            `The last line of ${path} was incomplete (${torn.length} bytes, left by a crash in the middle of a write). ` +
            `It was moved to ${tornPath} and the log now ends at seq ${scan.firstSeq + scan.offsets.length - 1}. It had never been acknowledged, so nothing saved was lost.`,
        });
      } catch (error) {
        // A full disk must not keep the session from loading: the torn bytes (never acknowledged)
        // are left in place, ignored by reads, and cut off before the next append writes.
        needsRepair = true;
        warn({
          code: 'TORN_LOG_TAIL',
          sessionId,
          file: path,
          message:
            `The last line of ${path} is incomplete (${torn.length} bytes, left by a crash or a failed write) and could not be set aside: ` +
            `${ioError('copy the torn tail of', path, error, sessionId).message} The session loads without it (the log ends at seq ${scan.firstSeq + scan.offsets.length - 1}); ` +
            'it had never been acknowledged, and it is cut off before the next append.',
        });
      }
    }
    const log = new SessionLog(path, sessionId, scan.firstSeq, scan.offsets, scan.tornFrom);
    log.needsRepair = needsRepair;
    return log;
  }

  /** The newest `seq`, -1 when the log is empty. */
  get lastSeq(): number {
    return this.firstSeq + this.offsets.length - 1;
  }

  append(events: readonly UnsequencedEvent[]): Promise<StreamEvent[]> {
    return new Promise((resolve, reject) => {
      if (this.closed) {
        reject(new StoreError('STORE_CLOSED', `The log ${this.path} is closed; open the store again to append.`));
        return;
      }
      this.pending.push({ events, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        // Everything appended in this turn of the event loop joins the same write + fdatasync.
        // setImmediate, not a microtask: the flush is synchronous, and a caller that awaits appends
        // in a loop would otherwise never let the event loop run (sockets, timers, stdout starve).
        setImmediate(() => this.flush());
      }
    });
  }

  /**
   * Writes every pending append in one write + fdatasync. Synchronous on purpose: a held fd and
   * the sync calls cost about one physical flush, where the thread-pool round trips of `fs.promises`
   * add half as much again (bench/store.bench.ts measures the append against the bare fdatasync floor).
   */
  private flush(): void {
    try {
      this.flushPending();
    } finally {
      this.scheduled = false;
      if (this.releaseAfterFlush) {
        this.releaseAfterFlush = false;
        this.releaseHandle();
      }
    }
  }

  private flushPending(): void {
    const batch = this.pending;
    this.pending = [];
    if (this.needsRepair) {
      try {
        this.cutBackToDurable();
      } catch (error) {
        const failure = this.repairFailure(error);
        for (const item of batch) item.reject(failure);
        return;
      }
    }
    const now = Date.now();
    let seq = this.firstSeq + this.offsets.length;
    const lineOffsets: number[] = [];
    const accepted: Array<{ item: PendingAppend; events: StreamEvent[] }> = [];
    // Each line is encoded once, straight into a reused buffer, and its offset read off it: a
    // byte-length pass, a join and a Buffer.from of the joined text cost 6× as much.
    let length = 0;
    for (const item of batch) {
      // The events handed back are the objects just serialized, not a parse of the written lines:
      // parsing the text back would cost a large share of an import (bench/import.bench.ts). They
      // share nested values with the unsequenced events, which the store contract allows (both are
      // treated as immutable).
      // Object.assign, not a spread: same keys in the same order, 6× faster on an import's events.
      const events = item.events.map(
        (unsequenced, index) =>
          Object.assign({}, unsequenced, {
            sessionId: this.sessionId,
            seq: seq + index,
            at: unsequenced.at ?? now,
          }) as StreamEvent,
      );
      let lines: string[];
      try {
        lines = events.map((event) => JSON.stringify(event));
      } catch (error) {
        item.reject(
          new ValidationError(
            `Cannot append to session "${this.sessionId}": an event is not serializable (${String(error)}).`,
            { cause: error },
          ),
        );
        continue;
      }
      for (const line of lines) {
        // A UTF-16 code unit takes at most 3 bytes in UTF-8.
        encoded = capacityFor(encoded, length, line.length * 3 + 1);
        lineOffsets.push(this.size + length);
        length += encoded.write(line, length);
        encoded[length++] = NEWLINE;
      }
      seq += lines.length;
      accepted.push({ item, events });
    }
    if (lineOffsets.length > 0) {
      try {
        this.fd ??= openSync(this.path, 'a');
        writeAll(this.fd, encoded.subarray(0, length));
        fdatasyncSync(this.fd);
      } catch (error) {
        const failure = ioError('append to', this.path, error, this.sessionId);
        try {
          this.cutBackToDurable();
        } catch {
          // Retried before the next write; until it succeeds, appends are refused (repairFailure).
        }
        for (const { item } of accepted) item.reject(failure);
        return;
      } finally {
        if (encoded.length > KEPT_BUFFER_BYTES) encoded = Buffer.allocUnsafe(KEPT_BUFFER_BYTES);
      }
      this.size += length;
      for (const lineOffset of lineOffsets) this.offsets.push(lineOffset);
    }
    for (const { item, events } of accepted) item.resolve(events);
  }

  /**
   * Undoes a failed write: the file is cut back to `size`, the end of the last acknowledged line,
   * so no partial line stays in the middle of the log and no rejected event comes back at the next
   * open. Used after a failed write (ENOSPC leaves a partial batch) and after a failed fdatasync.
   *
   * Why a fresh descriptor and a truncate, not a second fdatasync: after a failed fsync, Linux may
   * have dropped the dirty pages or marked them clean, and reports the error once per open file, so
   * a retried fdatasync on the same descriptor can succeed while the bytes never reached the disk
   * (the "fsyncgate" lesson PostgreSQL learned). What the page cache holds past `size` is unknown,
   * so it is thrown away: `size` is the only offset known to be durable. The old descriptor is
   * closed (its error state is spent), a new one truncates and fdatasyncs, which makes the new
   * length durable, and fstat confirms it. Any step failing throws, and `needsRepair` stays set.
   */
  private cutBackToDurable(): void {
    this.needsRepair = true;
    if (this.fd !== undefined) {
      const stale = this.fd;
      this.fd = undefined;
      try {
        closeSync(stale);
      } catch {
        // close can report the same write error again; the descriptor is released either way.
      }
    }
    const fd = openSync(this.path, 'a');
    try {
      ftruncateSync(fd, this.size);
      fdatasyncSync(fd);
      const length = fstatSync(fd).size;
      if (length !== this.size) throw new Error(`the file is ${length} bytes after truncating it to ${this.size}`);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
    this.fd = fd;
    this.needsRepair = false;
  }

  private repairFailure(cause: unknown): StoreError {
    const failure = ioError('cut back to its last saved line', this.path, cause, this.sessionId);
    return new StoreError(
      failure.code,
      `${failure.message} An earlier write to this log failed and its partial data could not be removed, so appends are refused until it can (each append retries).`,
      { fault: 'system', data: failure.data, cause },
    );
  }

  /** Events in `seq` order within the window; reads only the bytes of that window. */
  async *read(options: ReadLogOptions = {}): AsyncGenerator<StreamEvent> {
    // Indexes into `offsets`: a line's seq is its index plus `firstSeq`.
    const count = this.offsets.length;
    const base = this.firstSeq;
    const first = options.afterSeq === undefined ? 0 : Math.max(0, Math.floor(options.afterSeq) + 1 - base);
    const last =
      options.throughSeq === undefined ? count - 1 : Math.min(count - 1, Math.floor(options.throughSeq) - base);
    if (first > last) return;
    // A snapshot: lines appended while we read are not part of this read.
    const end = last + 1 < count ? this.offsets[last + 1]! : this.size;
    const handle = await fs.open(this.path, 'r');
    try {
      let buffer = Buffer.alloc(0);
      let bufferStart = 0;
      for (let seq = first; seq <= last; seq += 1) {
        const lineStart = this.offsets[seq]!;
        const lineEnd = (seq + 1 <= last ? this.offsets[seq + 1]! : end) - 1;
        if (lineEnd + 1 > bufferStart + buffer.length) {
          const length = Math.min(end - lineStart, Math.max(READ_CHUNK, lineEnd + 1 - lineStart));
          buffer = Buffer.allocUnsafe(length);
          await readFully(handle, buffer, lineStart);
          bufferStart = lineStart;
        }
        yield parseEventLine(
          buffer.toString('utf8', lineStart - bufferStart, lineEnd - bufferStart),
          seq + base,
          this.path,
          base,
        );
      }
    } finally {
      await handle.close();
    }
  }

  /** Closes the file handle now, or right after the pending flush; the next append reopens it. */
  releaseHandle(): void {
    if (this.scheduled) {
      this.releaseAfterFlush = true;
      return;
    }
    if (this.fd !== undefined) {
      closeSync(this.fd);
      this.fd = undefined;
    }
  }

  /** Lets pending appends flush, then refuses new ones and closes the file. */
  async close(): Promise<void> {
    while (this.scheduled) await new Promise((resolve) => setImmediate(resolve));
    this.closed = true;
    this.releaseHandle();
  }
}

/** Copies the torn tail to `tornPath` durably, then truncates the log to `tornFrom`. */
async function setTornTailAside(path: string, tornPath: string, torn: Buffer, tornFrom: number): Promise<void> {
  try {
    await writeDurably(tornPath, torn, 'w');
    await syncDirectory(dirname(path));
  } catch (error) {
    // A partial copy (a full disk) is no copy: the torn bytes stay in the log instead.
    await fs.rm(tornPath, { force: true }).catch(() => undefined);
    throw error;
  }
  const handle = await fs.open(path, 'r+');
  try {
    await handle.truncate(tornFrom);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

interface LogScan {
  firstSeq: number;
  offsets: number[];
  /** Where the intact part of the file ends; bytes from here on are a torn tail. */
  tornFrom: number;
}

function scanLog(content: Buffer, path: string, sessionId: string): LogScan {
  const advice = 'Restore log.jsonl from a backup; its first line must be the Parley log header.';
  const headerEnd = content.indexOf(NEWLINE);
  if (headerEnd === -1) throw corruptFile(path, 'its header line is missing or incomplete', advice);
  let header: unknown;
  try {
    header = JSON.parse(content.toString('utf8', 0, headerEnd));
  } catch (error) {
    throw corruptFile(path, 'its header line is not valid JSON', advice, error);
  }
  checkFormatVersion(header, path);
  const fields = header as { formatVersion?: unknown; kind?: unknown; sessionId?: unknown; firstSeq?: unknown };
  if (fields.kind !== 'parley-log' || fields.formatVersion !== FORMAT_VERSION || fields.sessionId !== sessionId) {
    throw corruptFile(path, `its header line is not a Parley log header for session "${sessionId}"`, advice);
  }
  const firstSeq = fields.firstSeq ?? 0;
  if (typeof firstSeq !== 'number' || !Number.isInteger(firstSeq) || firstSeq < 0) {
    throw corruptFile(path, `its header's firstSeq is ${JSON.stringify(firstSeq)}, not a whole number from 0`, advice);
  }
  const offsets: number[] = [];
  let position = headerEnd + 1;
  while (position < content.length) {
    const newline = content.indexOf(NEWLINE, position);
    if (newline === -1) break;
    offsets.push(position);
    position = newline + 1;
  }
  let tornFrom = position;
  // A complete last line that does not parse is the tail of a torn write too (a crash can leave a
  // partial batch whose cut happens to fall on a newline, or zeros after a power loss).
  const lastStart = offsets.at(-1);
  if (lastStart !== undefined) {
    const lastText = content.toString('utf8', lastStart, tornFrom - 1);
    let parsed: unknown;
    try {
      parsed = JSON.parse(lastText);
    } catch {
      parsed = undefined;
    }
    if (parsed === undefined || typeof parsed !== 'object' || parsed === null) {
      offsets.pop();
      tornFrom = lastStart;
    } else if ((parsed as { seq?: unknown }).seq !== firstSeq + offsets.length - 1) {
      throw corruptFile(
        path,
        `its last line (line ${offsets.length + 1}) has seq ${String((parsed as { seq?: unknown }).seq)} where ${firstSeq + offsets.length - 1} was expected`,
        'Lines were removed or edited by hand; restore log.jsonl from a backup.',
      );
    }
  }
  return { firstSeq, offsets, tornFrom };
}

/** Our own lines get a structural check, not a schema parse: reading 10,000 events must stay cheap. */
function parseEventLine(text: string, seq: number, path: string, firstSeq: number): StreamEvent {
  const line = seq - firstSeq + 2;
  let event: unknown;
  try {
    event = JSON.parse(text);
  } catch (error) {
    throw corruptLine(
      path,
      line,
      `it is not valid JSON (${error instanceof Error ? error.message : String(error)})`,
      error,
    );
  }
  if (typeof event !== 'object' || event === null) throw corruptLine(path, line, 'it is not an event object');
  const fields = event as { seq?: unknown; type?: unknown };
  if (fields.seq !== seq) throw corruptLine(path, line, `it has seq ${String(fields.seq)} where ${seq} was expected`);
  if (typeof fields.type !== 'string') throw corruptLine(path, line, 'it has no event type');
  return event as StreamEvent;
}

function corruptLine(path: string, line: number, problem: string, cause?: unknown): StoreError {
  const error = corruptFile(
    `${path} line ${line}`,
    problem,
    `The lines before it are intact. Restore log.jsonl from a backup, or move line ${line} out of the file (keep a copy) to load the rest.`,
    cause,
  );
  Object.assign(error.data, { file: path, line });
  return error;
}

function writeAll(fd: number, buffer: Buffer): void {
  let written = 0;
  while (written < buffer.length) written += writeSync(fd, buffer, written, buffer.length - written);
}

async function readFully(handle: fs.FileHandle, buffer: Buffer, position: number): Promise<void> {
  let filled = 0;
  while (filled < buffer.length) {
    const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, position + filled);
    if (bytesRead === 0)
      throw new StoreError('CORRUPT_FILE', `Log file ended early while reading at byte ${position + filled}`);
    filled += bytesRead;
  }
}
