import { basename } from 'node:path';
import type { TranscriptInfo, TranscriptWarning } from '../../backends/index.js';
import { applyEvents, emptyConversation, type StreamEvent } from '../../conversation/index.js';
import { FORMAT_VERSION, type SessionRecord, type SessionStore } from '../../store/index.js';
import { summaryScan, type DeferredSource } from './deferred-parsers.js';
import { forgetImportedSession } from './imported-store.js';
import { statsOf, titleOf } from './import-summary.js';
import { IMPORT_FORMAT, MANIFEST, manifestText, writeManifest, type ImportManifest } from './manifest.js';
import { fingerprintFile, streamChunks, streamFile } from './read-file.js';

/**
 * The fast import of a Claude Code transcript or a Codex rollout: the native file is scanned once
 * for what the listing shows — title, message and turn counts, usage, cost — without building a
 * block, then copied verbatim into the session (by the kernel) as the session is created, whole,
 * with its record and manifest in one atomic step. The session's events are built from the copy
 * on its first read (`materialize.ts`), so the import neither re-serializes the transcript's
 * content nor fsyncs a log of it.
 *
 * The copy is the imported session's source of truth until then; the manifest names it
 * (`pendingEvents`). Taken only for a new session, on a store that creates a session with copied
 * files (`SessionStore.createSessionWithTranscripts`: the file store), for a transcript without
 * subagent files, and not by a live import (`--watch` appends as the file grows, so it needs the
 * events in the log).
 */

/** The copy's name when the file is small enough to be the session's raw transcript (`main`, read whole with the session). */
const RAW_TRANSCRIPT = 'main';
/** The copy's name otherwise: kept beside the session's files, streamed, never read whole. */
const NATIVE_COPY = 'native-main.jsonl';

export interface DeferredImportInput {
  /** Default `claude-code`. */
  source?: DeferredSource;
  store: SessionStore & Required<Pick<SessionStore, 'createSessionWithTranscripts'>>;
  sessionId: string;
  path: string;
  nativeSessionId: string;
  recordType: string;
  /** The file's own id in its content, kept in the manifest (`session-identity.ts`). */
  contentId?: string;
  /** Copies up to this size are named `main` (the session's raw transcript). */
  rawTranscriptMaxBytes: number;
  now: () => number;
  signal?: AbortSignal;
  onBytes?: (bytesRead: number, totalBytes: number) => void;
}

export interface DeferredImport {
  title: string;
  info: TranscriptInfo;
  warnings: TranscriptWarning[];
  /** The copy was named `main`. */
  raw: boolean;
}

/**
 * The import in two steps: this scans the file (reading only) and resolves with `commit`, which
 * writes the session. The caller may scan the next file while a commit is made durable.
 */
export async function scanForDeferredImport(
  input: DeferredImportInput,
): Promise<{ commit: () => Promise<DeferredImport> }> {
  const { store, sessionId, path } = input;
  const source = input.source ?? 'claude-code';
  const fingerprint = await fingerprintFile(path);
  const now = input.now();
  const record: SessionRecord = {
    formatVersion: FORMAT_VERSION,
    sessionId,
    type: input.recordType,
    agentProfileReference: 'imported',
    status: 'active',
    agentType: 'imported',
    scope: { kind: 'imported', source, path, nativeSessionId: input.nativeSessionId },
    title: `Importing ${basename(path)}`,
    readOnly: true,
    createdAt: Math.floor(Math.min(fingerprint.mtimeMs, now)),
    updatedAt: now,
    settings: {},
    stats: { totalMessages: 0, totalTokens: 0, totalCompactions: 0 },
    native: { backend: source, nativeSessionId: input.nativeSessionId, transcriptPath: path },
  };
  const name = fingerprint.size <= input.rawTranscriptMaxBytes ? RAW_TRANSCRIPT : NATIVE_COPY;
  // The file is scanned first, then the session is created whole (record, copy, manifest) in one
  // atomic step: one fsync of each file, all at once, and one rename (the reading rows of
  // bench/peers.bench.ts). Nothing is written for a file that cannot be read.
  const scan = summaryScan(source, basename(path));
  const read = await streamFile(path, scan, {
    ...(input.signal !== undefined ? { signal: input.signal } : {}),
    afterChunk: (bytesRead) => input.onBytes?.(bytesRead, fingerprint.size),
  });
  const summary = summarize(scan, record, input, now);
  const manifest: ImportManifest = {
    importFormat: IMPORT_FORMAT,
    source,
    importedAt: new Date(now).toISOString(),
    files: [fingerprint],
    copied: name === RAW_TRANSCRIPT ? [RAW_TRANSCRIPT] : [],
    blocks: summary.info.blockCount,
    subagents: 0,
    ...(input.contentId !== undefined ? { contentId: input.contentId } : {}),
    pendingEvents: { transcript: name, file: basename(path) },
  };
  return { commit: () => commitDeferred(input, { record, summary, manifest, name, scannedBytes: read.bytes }) };
}

async function commitDeferred(
  input: DeferredImportInput,
  scanned: {
    record: SessionRecord;
    summary: ReturnType<typeof summarize>;
    manifest: ImportManifest;
    name: string;
    scannedBytes: number;
  },
): Promise<DeferredImport> {
  const { store, sessionId, path } = input;
  const { record, manifest, name } = scanned;
  const source = input.source ?? 'claude-code';
  let summary = scanned.summary;
  let warnings = summary.warnings;
  const { copiedBytes } = await store.createSessionWithTranscripts(summary.record, [
    { name, sourcePath: path },
    // A session without its manifest is an import that did not finish; here both appear at once.
    { name: MANIFEST, content: manifestText(manifest) },
  ]);
  if (copiedBytes[name] !== scanned.scannedBytes) {
    // The file changed between the scan and the copy (Claude Code still writing): the copy is the truth, scan it.
    const scan = summaryScan(source, basename(path));
    const chunks = await store.streamTranscript?.(sessionId, name);
    if (chunks !== undefined) await streamChunks(chunks, scan, `${name} of session ${sessionId}`);
    summary = summarize(scan, record, input, record.updatedAt);
    warnings = summary.warnings;
    const { record: updated } = summary;
    await store.updateSession(sessionId, () => updated);
    await writeManifest(store, sessionId, { ...manifest, blocks: summary.info.blockCount });
  }
  forgetImportedSession(store, sessionId);
  return {
    title: summary.title,
    info: summary.info,
    warnings,
    raw: name === RAW_TRANSCRIPT,
  };
}

/** The session's record once its file is scanned: title, times, counts and metrics from what the scan found. */
function summarize(
  scan: ReturnType<typeof summaryScan>,
  record: SessionRecord,
  input: DeferredImportInput,
  now: number,
): { record: SessionRecord; info: TranscriptInfo; title: string; warnings: TranscriptWarning[] } {
  const info = scan.end();
  const title = titleOf(info, input.source ?? 'claude-code', input.nativeSessionId);
  // Folded as the log's metadata events would be (the reducer's rules, in the same order).
  const events = scan.metadata.map(
    (event, seq) => Object.assign({}, event, { sessionId: input.sessionId, seq, at: event.at ?? now }) as StreamEvent,
  );
  const metrics = applyEvents(emptyConversation(input.sessionId), events).metrics;
  return {
    info,
    title,
    warnings: [...scan.warnings],
    record: {
      ...record,
      title,
      updatedAt: now,
      ...(info.endedAt !== undefined ? { lastActivity: info.endedAt } : {}),
      ...(info.startedAt !== undefined ? { createdAt: info.startedAt } : {}),
      stats: statsOf(info, metrics),
      metrics,
    },
  };
}
