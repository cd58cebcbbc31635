import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import type { FileLayout } from './file-layout.js';
import { corruptFile, parseJsonDocument } from '../json-file.js';
import { SessionRecordSchema, type SessionRecord } from './records.js';
import { StoreError } from '../errors.js';

/** Files read between two yields to the event loop. */
const CHUNK = 500;

export interface SessionRecordsRead {
  records: SessionRecord[];
  failures: Array<{ sessionId: string; error: StoreError }>;
}

/**
 * Reads and validates the `session.json` of many sessions (a cold listing). Synchronous reads in
 * chunks: a small file costs one system call this way, not several thread-pool round trips through
 * `fs.promises`, and yielding between chunks keeps the event loop responsive.
 */
export async function readSessionRecords(
  layout: FileLayout,
  sessionIds: readonly string[],
): Promise<SessionRecordsRead> {
  const result: SessionRecordsRead = { records: [], failures: [] };
  for (let start = 0; start < sessionIds.length; start += CHUNK) {
    if (start > 0) await new Promise((resolve) => setImmediate(resolve));
    for (const sessionId of sessionIds.slice(start, start + CHUNK)) {
      try {
        result.records.push(readSessionRecord(layout, sessionId));
      } catch (error) {
        if (!(error instanceof StoreError)) throw error;
        result.failures.push({ sessionId, error });
      }
    }
  }
  return result;
}

export function sessionAdvice(layout: FileLayout, sessionId: string): string {
  return `Restore session.json from a backup, or remove the folder ${layout.sessionDir(sessionId)} to drop the session.`;
}

function readSessionRecord(layout: FileLayout, sessionId: string): SessionRecord {
  const path = layout.sessionFile(sessionId);
  const advice = sessionAdvice(layout, sessionId);
  let text: string;
  try {
    text = readSmallFile(path);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const problem =
      code === 'ENOENT'
        ? 'the file is missing'
        : code === 'ENOTDIR'
          ? 'its session folder is not a folder'
          : `it cannot be read (${String(error)})`;
    throw corruptFile(path, problem, advice, error);
  }
  const record = parseJsonDocument(text, path, SessionRecordSchema, advice);
  if (record.sessionId !== sessionId)
    throw corruptFile(path, `it names session "${record.sessionId}" but lives in the folder of "${sessionId}"`, advice);
  return record;
}

const buffer = Buffer.allocUnsafe(64 * 1024);

/** open + one read + close into a shared buffer: less CPU than readFileSync (no fstat, no new buffer) for small files. */
function readSmallFile(path: string): string {
  const fd = openSync(path, 'r');
  try {
    const length = readSync(fd, buffer, 0, buffer.length, 0);
    if (length < buffer.length) return buffer.toString('utf8', 0, length);
    // A large record: read it whole (the positional read left the file offset at 0).
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}
