import { basename } from 'node:path';
import type { TranscriptInfo, TranscriptWarning } from '../../backends/index.js';
import {
  emptyConversation,
  type ConversationBlock,
  type Tokenizer,
  type UnsequencedEvent,
} from '../../conversation/index.js';
import { FORMAT_VERSION, type SessionRecord, type SessionStore } from '../../store/index.js';
import { statsOf, titleOf } from './import-summary.js';
import { checkpointFromCompaction } from './import-checkpoint.js';
import { LogWriter, indexLog } from './log-writer.js';
import { fingerprintFile, sameFingerprints, type FileFingerprint } from './read-file.js';
import type { ImportSource } from './session-ids.js';
import { IMPORT_FORMAT, readManifest, writeManifest, type ImportManifest } from './manifest.js';
import { scanForDeferredImport, type DeferredImportInput } from './deferred-import.js';
import type { DeferredSource } from './deferred-parsers.js';

/**
 * What every source's import shares: the options and results of `importTranscripts`, and the
 * steps that create or update an imported session (`beginImport`), then record what was read
 * (`finishImport`: the raw copies, a checkpoint from the last native compaction, the title, stats
 * and metrics, and the manifest, written last). Each source's module reads its files between them.
 */

/**
 * How `importTranscripts` runs: the store to import into, progress, cancellation, the size up to
 * which native files are copied, and, for a watcher, whether the files are still being written.
 */
export interface ImportOptions {
  store: SessionStore;
  onProgress?: (progress: ImportProgress) => void;
  signal?: AbortSignal;
  /**
   * Native transcripts up to this size are copied into the store (`writeTranscript`); larger ones
   * are referenced by path (`native.transcriptPath`) — a copy would hold the whole file in memory
   * and double its disk use. Default 8 MiB. A deferred import (`deferred-import.ts`) copies every
   * size, in the kernel; this limit then only decides whether the copy is the raw transcript `main`
   * (read whole with the session) or `native-main.jsonl` beside it.
   */
  copyTranscriptMaxBytes?: number;
  /** Milliseconds since the epoch; injectable for tests. */
  now?: () => number;
  /**
   * The files are still being written (`importTranscripts` run by a watcher): an API message with no
   * stop reason yet keeps its usage back until the message is over, and a tool call with no result yet
   * stays running. Such an import is not final: the next import without `live` reads the files again
   * even when they did not change, so what was held back is counted.
   */
  live?: boolean;
  /**
   * What each session's log holds, kept between imports by a caller that is the only writer of
   * these sessions (a watcher): a re-import then need not read the log again. Filled and kept up to
   * date by the import.
   */
  logIndexes?: Map<string, LogIndex>;
  /**
   * Only this project's sessions: a Codex rollout is imported when the folder it ran in
   * (`session_meta.cwd`) is this one or inside it. Codex keeps every project's rollouts in one tree
   * (`$CODEX_HOME/sessions`); the other sources' folders are already per project.
   */
  projectRoot?: string;
}

/** What an imported session's log holds, for a re-import (see `indexLog`). */
export type LogIndex = Awaited<ReturnType<typeof indexLog>>;

/** How far an import has got: its phase and the sessions done out of all. */
export interface ImportProgress {
  phase: 'discovered' | 'reading' | 'session_done';
  sessionsTotal: number;
  sessionsDone: number;
  sessionId?: string;
  file?: string;
  bytesRead?: number;
  totalBytes?: number;
}

/** `imported`: new; `updated`: it existed and the source changed; `unchanged`: skipped. */
export type ImportStatus = 'imported' | 'updated' | 'unchanged';

export interface ImportedSession {
  sessionId: string;
  source: ImportSource;
  path: string;
  nativeSessionId: string;
  title: string;
  status: ImportStatus;
  /** Blocks of the main thread in the source. */
  blocks: number;
  /** Blocks written by this import (all of them when new, the new and changed ones on an update). */
  appendedBlocks: number;
  subagents: number;
  warnings: number;
  /** The raw native transcript is copied into the store, or referenced by its path. */
  transcript: 'copied' | 'referenced';
  /** A checkpoint was written from the source's compaction summary or checkpoint file. */
  checkpoint: boolean;
  /**
   * The transcript was copied verbatim and only scanned: its blocks (and a checkpoint from its
   * compaction) are built on the session's first read (`deferred-import.ts`). `appendedBlocks` is 0.
   */
  deferred?: boolean;
}

/** What an import did: the path, each session it imported, and its warnings. */
export interface ImportResult {
  path: string;
  sessions: ImportedSession[];
  warnings: TranscriptWarning[];
  skipped: Array<{ path: string; reason: string }>;
}

export const DEFAULT_COPY_MAX = 8 * 1024 * 1024;

export const RECORD_TYPE: Record<ImportSource, string> = {
  'claude-code': 'claude-code-import',
  'gemini-cli': 'gemini-cli-import',
  'seed-layout': 'seed-layout',
  codex: 'codex-import',
};

/** What every source's import shares while one `importTranscripts` runs. */
export interface ImportContext {
  store: SessionStore;
  options: ImportOptions;
  now: () => number;
  warnings: TranscriptWarning[];
  progress: (progress: Omit<ImportProgress, 'sessionsTotal' | 'sessionsDone'>) => void;
  tokenizer: Tokenizer;
  /**
   * Waits until the session still being made durable (a deferred import's commit, see
   * `PendingImport`) is, and rethrows its failure: every write of an import comes after it.
   */
  beforeWrite: () => Promise<void>;
}

/**
 * A deferred import whose file is scanned and whose session is being written: `importTranscripts`
 * scans the next file meanwhile, and lists this one once `finishing` resolves.
 */
export interface PendingImport {
  nativeSessionId: string;
  finishing: Promise<ImportedSession>;
}

/** A source that yields no blocks is not a session: it is listed as skipped with this reason. */
export interface NothingImported {
  files: string[];
  skipped: string;
}

export function nothingImported(
  files: string[],
  kind: string,
  warnings: readonly TranscriptWarning[],
): NothingImported {
  const why = warnings.length > 0 ? ` (${warnings.map((warning) => warning.message).join('; ')})` : '';
  return { files, skipped: `named like a ${kind} but holds no messages${why}; not made a session` };
}

export function isBlockEvent(event: UnsequencedEvent): boolean {
  return event.type === 'block_complete';
}

export interface Started {
  writer: LogWriter;
  fingerprints: FileFingerprint[];
  status: 'imported' | 'updated';
  manifest: ImportManifest | undefined;
  /** `seq` of compaction blocks already in the log (a re-import). */
  compactionSeqs: Map<string, number>;
  unchanged?: undefined;
}

export async function beginImport(
  context: ImportContext,
  sessionId: string,
  source: ImportSource,
  path: string,
  nativeSessionId: string,
  files: string[],
  extra: { agentType?: string; createdAt?: number } = {},
): Promise<Started | { unchanged: ImportedSession }> {
  await context.beforeWrite();
  const fingerprints = await Promise.all(files.map((file) => fingerprintFile(file)));
  const store = context.store;
  const existing = await store.getSession(sessionId);
  const watch = (block: ConversationBlock): boolean => block.type === 'system' && block.subtype === 'compaction';
  if (existing === undefined) {
    const now = context.now();
    const createdAt = extra.createdAt ?? Math.floor(Math.min(...fingerprints.map((print) => print.mtimeMs), now));
    const record: SessionRecord = {
      formatVersion: FORMAT_VERSION,
      sessionId,
      type: RECORD_TYPE[source],
      agentProfileReference: 'imported',
      status: 'active',
      agentType: extra.agentType ?? 'imported',
      scope: { kind: 'imported', source, path, nativeSessionId },
      title: `Importing ${basename(path)}`,
      readOnly: true,
      createdAt,
      updatedAt: now,
      settings: {},
      stats: { totalMessages: 0, totalTokens: 0, totalCompactions: 0 },
      native: { backend: source, nativeSessionId, transcriptPath: path },
    };
    await store.createSession(record);
    const index = {
      known: new Map<string, string>(),
      metrics: emptyConversation(sessionId).metrics,
      compactionSeqs: new Map<string, number>(),
    };
    context.options.logIndexes?.set(sessionId, index);
    // With an index kept between imports, the writer records what it appends in it.
    const known = context.options.logIndexes !== undefined ? { known: index.known } : {};
    return {
      writer: new LogWriter(store, sessionId, { watch, ...known }),
      fingerprints,
      status: 'imported',
      manifest: undefined,
      compactionSeqs: index.compactionSeqs,
    };
  }
  const manifest = await readManifest(store, sessionId);
  const final = manifest?.live !== true || context.options.live === true;
  if (
    manifest !== undefined &&
    manifest.importFormat === IMPORT_FORMAT &&
    final &&
    sameFingerprints(manifest.files, fingerprints)
  ) {
    return {
      unchanged: {
        sessionId,
        source,
        path,
        nativeSessionId,
        title: existing.title ?? sessionId,
        status: 'unchanged',
        blocks: manifest.blocks,
        appendedBlocks: 0,
        subagents: manifest.subagents,
        warnings: 0,
        transcript: manifest.copied.length > 0 ? 'copied' : 'referenced',
        checkpoint: false,
      },
    };
  }
  // Changed since the last import, or that import never finished: append what the log lacks.
  const cached = context.options.logIndexes?.get(sessionId);
  const index = cached ?? (await indexLog(store, sessionId));
  context.options.logIndexes?.set(sessionId, index);
  const { known, metrics, compactionSeqs } = index;
  return {
    writer: new LogWriter(store, sessionId, { known, metrics, watch }),
    fingerprints,
    status: 'updated',
    manifest,
    compactionSeqs,
  };
}

export async function finishImport(
  context: ImportContext,
  input: {
    sessionId: string;
    source: ImportSource;
    path: string;
    nativeSessionId: string;
    info: TranscriptInfo;
    writer: LogWriter;
    start: Started;
    copies: Array<{ name: string; text: string }>;
    warnings: TranscriptWarning[];
    summaryKind: 'claude-code' | 'gemini-cli' | 'codex' | undefined;
    contentId?: string;
    subagentCount: number;
  },
): Promise<ImportedSession> {
  const { store } = context;
  const { sessionId, info, writer, start } = input;
  await writer.close();
  for (const copy of input.copies) await store.writeTranscript(sessionId, copy.name, copy.text);

  const compaction = [...info.compactions]
    .reverse()
    .find((entry) => entry.summary !== undefined && entry.blockId !== undefined);
  let checkpoint = false;
  if (
    compaction !== undefined &&
    input.summaryKind !== undefined &&
    start.manifest?.checkpointBlockId !== compaction.blockId
  ) {
    const seq = writer.watchedSeqs.get(compaction.blockId!) ?? start.compactionSeqs.get(compaction.blockId!);
    if (seq !== undefined) {
      await store.writeCheckpoint(
        sessionId,
        await checkpointFromCompaction(context.tokenizer, context.now, compaction, seq, info, input.summaryKind),
      );
      checkpoint = true;
    }
  }

  const title = titleOf(info, input.source, input.nativeSessionId);
  const metrics = writer.metrics;
  const index = context.options.logIndexes?.get(sessionId);
  if (index !== undefined) {
    index.metrics = metrics;
    for (const [blockId, seq] of writer.watchedSeqs) index.compactionSeqs.set(blockId, seq);
  }
  const stats = statsOf(info, metrics);
  const now = context.now();
  await store.updateSession(sessionId, (current) => ({
    ...current,
    title,
    updatedAt: now,
    ...(info.endedAt !== undefined ? { lastActivity: info.endedAt } : {}),
    ...(info.startedAt !== undefined && start.status === 'imported' ? { createdAt: info.startedAt } : {}),
    stats,
    metrics,
    native: { backend: input.source, nativeSessionId: input.nativeSessionId, transcriptPath: input.path },
    // A moved file's session follows it (`session-identity.ts`).
    ...(current.scope.kind === 'imported' ? { scope: { ...current.scope, path: input.path } } : {}),
  }));

  const manifest: ImportManifest = {
    importFormat: IMPORT_FORMAT,
    source: input.source,
    importedAt: new Date(now).toISOString(),
    files: start.fingerprints,
    copied: input.copies.map((copy) => copy.name),
    blocks: info.blockCount,
    subagents: input.subagentCount,
    ...(compaction?.blockId !== undefined && (checkpoint || start.manifest?.checkpointBlockId === compaction.blockId)
      ? { checkpointBlockId: compaction.blockId }
      : {}),
    ...(input.contentId !== undefined ? { contentId: input.contentId } : {}),
    ...(context.options.live === true ? { live: true } : {}),
  };
  // Written last: a session without its manifest is an import that did not finish, and is completed by the next one.
  await writeManifest(store, sessionId, manifest);
  context.warnings.push(...input.warnings);
  return {
    sessionId,
    source: input.source,
    path: input.path,
    nativeSessionId: input.nativeSessionId,
    title,
    status: start.status,
    blocks: info.blockCount,
    appendedBlocks: writer.appendedBlocks,
    subagents: input.subagentCount,
    warnings: input.warnings.length,
    transcript: input.copies.length >= expectedCopies(input) ? 'copied' : 'referenced',
    checkpoint,
  };
}

/** Every native file was copied (else at least one is only referenced by path). */
function expectedCopies(input: { start: Started }): number {
  return input.start.fingerprints.filter((print) => !print.path.endsWith('.meta.json')).length;
}

/**
 * The fast path shared by the sources that have one (`deferred-import.ts`): the transcript is
 * copied and scanned, and its log is built on the first read. The caller checked that it applies.
 */
export async function importDeferredSession(
  context: ImportContext,
  input: {
    source: DeferredSource;
    sessionId: string;
    path: string;
    nativeSessionId: string;
    contentId?: string;
  },
): Promise<PendingImport> {
  const { source, sessionId, path, nativeSessionId } = input;
  const scanned = await scanForDeferredImport({
    store: context.store as DeferredImportInput['store'],
    source,
    sessionId,
    path,
    nativeSessionId,
    recordType: RECORD_TYPE[source],
    ...(input.contentId !== undefined ? { contentId: input.contentId } : {}),
    rawTranscriptMaxBytes: context.options.copyTranscriptMaxBytes ?? DEFAULT_COPY_MAX,
    now: context.now,
    ...(context.options.signal !== undefined ? { signal: context.options.signal } : {}),
    onBytes: (bytesRead, totalBytes) =>
      context.progress({ phase: 'reading', sessionId, file: path, bytesRead, totalBytes }),
  });
  await context.beforeWrite();
  const finishing = scanned.commit().then((imported): ImportedSession => {
    context.warnings.push(...imported.warnings);
    return {
      sessionId,
      source,
      path,
      nativeSessionId,
      title: imported.title,
      status: 'imported',
      blocks: imported.info.blockCount,
      appendedBlocks: 0,
      subagents: 0,
      warnings: imported.warnings.length,
      transcript: 'copied',
      checkpoint: false,
      deferred: true,
    };
  });
  return { nativeSessionId, finishing };
}
