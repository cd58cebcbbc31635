import { createReadStream, promises as fs } from 'node:fs';
import { createHash } from 'node:crypto';
import { LineSplitter, type TranscriptParser } from '../../backends/index.js';
import { isParleyError } from '../../conversation/index.js';
import { ImportError, importAborted } from './errors.js';

/** Bytes read per chunk: large enough that per-chunk overhead vanishes, small enough to stay far below the memory target. */
const CHUNK_BYTES = 1024 * 1024;

export interface StreamFileOptions {
  signal?: AbortSignal;
  /** Called after each chunk, once the parser has taken its lines; awaiting it applies back pressure (the store writes here). */
  afterChunk?: (bytesRead: number) => Promise<void> | void;
  /** Keep the raw text (only for files small enough to copy into the store). */
  keepText?: boolean;
}

/**
 * Streams a file through a line parser, one chunk at a time: the file is never held whole, only
 * the unfinished last line of a chunk. Returns the text only when asked to keep it.
 */
export async function streamFile(
  path: string,
  parser: TranscriptParser,
  options: StreamFileOptions = {},
): Promise<{ bytes: number; text?: string }> {
  const splitter = splitterFor(parser);
  const kept: Buffer[] | undefined = options.keepText ? [] : undefined;
  const stream = createReadStream(path, { highWaterMark: CHUNK_BYTES });
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (options.signal?.aborted) throw importAborted(path);
      splitter.push(chunk);
      kept?.push(chunk);
      if (options.afterChunk) await options.afterChunk(splitter.bytesRead);
    }
  } catch (error) {
    if (error instanceof ImportError) throw error;
    throw new ImportError('IMPORT_READ_FAILED', `Cannot read ${path}: ${(error as Error).message}.`, {
      fault: 'system',
      cause: error,
      data: { path },
    });
  } finally {
    stream.destroy();
  }
  splitter.end();
  return kept === undefined
    ? { bytes: splitter.bytesRead }
    : { bytes: splitter.bytesRead, text: Buffer.concat(kept).toString('utf8') };
}

/**
 * Streams chunks from anywhere (a stored transcript) through a line parser, as `streamFile` does
 * a file. `label` names the source in errors.
 */
export async function streamChunks(
  chunks: AsyncIterable<Uint8Array | string>,
  parser: TranscriptParser,
  label: string,
  options: Omit<StreamFileOptions, 'keepText'> = {},
): Promise<{ bytes: number }> {
  const splitter = splitterFor(parser);
  const { signal, afterChunk } = options;
  await forEachChunk(chunks, label, (chunk) => splitter.push(chunk), {
    ...(signal !== undefined ? { signal } : {}),
    ...(afterChunk !== undefined ? { afterChunk: () => afterChunk(splitter.bytesRead) } : {}),
  });
  splitter.end();
  return { bytes: splitter.bytesRead };
}

/**
 * Hands each chunk to `take`, then awaits `afterChunk` (back pressure); a failed read becomes
 * `IMPORT_READ_FAILED` naming `label`, and a Parley error from `take` passes through unchanged.
 */
export async function forEachChunk(
  chunks: AsyncIterable<Uint8Array | string>,
  label: string,
  take: (chunk: Uint8Array | string) => void,
  options: { signal?: AbortSignal; afterChunk?: () => Promise<void> | void } = {},
): Promise<void> {
  try {
    for await (const chunk of chunks) {
      if (options.signal?.aborted) throw importAborted(label);
      take(chunk);
      if (options.afterChunk) await options.afterChunk();
    }
  } catch (error) {
    if (error instanceof ImportError || isParleyError(error)) throw error;
    throw new ImportError('IMPORT_READ_FAILED', `Cannot read ${label}: ${(error as Error).message}.`, {
      fault: 'system',
      cause: error,
      data: { path: label },
    });
  }
}

/** Lines go to the parser as bytes when it reads bytes (no decoding of what it skips), else as text. */
export function splitterFor(parser: TranscriptParser): LineSplitter {
  const onLine = (line: string, lineNumber: number, terminated: boolean): void =>
    parser.line(line, lineNumber, terminated);
  if (parser.lineBytes === undefined) return new LineSplitter(onLine);
  const lineBytes = parser.lineBytes.bind(parser);
  return new LineSplitter(onLine, lineBytes);
}

/** What tells a re-import whether a native file changed: size, modification time and hashes of its first and last 64 KiB. */
export interface FileFingerprint {
  path: string;
  size: number;
  mtimeMs: number;
  head: string;
  tail: string;
}

const EDGE_BYTES = 64 * 1024;

export async function fingerprintFile(path: string): Promise<FileFingerprint> {
  const handle = await fs.open(path, 'r');
  try {
    const stat = await handle.stat();
    const read = async (position: number, length: number): Promise<string> => {
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, position);
      return createHash('sha256').update(buffer.subarray(0, bytesRead)).digest('hex');
    };
    const head = await read(0, Math.min(EDGE_BYTES, stat.size));
    const tail = await read(Math.max(0, stat.size - EDGE_BYTES), Math.min(EDGE_BYTES, stat.size));
    return { path, size: stat.size, mtimeMs: stat.mtimeMs, head, tail };
  } finally {
    await handle.close();
  }
}

export function sameFingerprints(a: readonly FileFingerprint[], b: readonly FileFingerprint[]): boolean {
  if (a.length !== b.length) return false;
  const byPath = new Map(a.map((print) => [print.path, print]));
  return b.every((print) => {
    const other = byPath.get(print.path);
    return (
      other !== undefined &&
      other.size === print.size &&
      other.mtimeMs === print.mtimeMs &&
      other.head === print.head &&
      other.tail === print.tail
    );
  });
}
