import { createTokenizer, type ConversationBlock, type StreamEvent } from '../../conversation/index.js';
import { StoreError, type SessionStore } from '../../store/index.js';
import { eventParser, summaryKind } from './deferred-parsers.js';
import { checkpointFromCompaction } from './import-checkpoint.js';
import { statsOf } from './import-summary.js';
import { LogWriter, indexLog } from './log-writer.js';
import { readManifest, writeManifest } from './manifest.js';
import { streamChunks } from './read-file.js';

/**
 * Builds the events of a session imported with its events deferred (`deferred-import.ts`) from the
 * native copy kept with it, exactly as an eager import would have written them: the same parser,
 * the same log writer and batches, the compaction's checkpoint, the parser's own numbers in the
 * record. Then the manifest drops `pendingEvents`, in one atomic write, and the session is like
 * any other: its log is the truth and grows by appends.
 *
 * Crash safety: every batch is durable before the next is written, and the manifest is rewritten
 * only after the last, so a crash leaves a log that holds a prefix of the events and a manifest
 * that still says they are pending. The next call indexes that prefix and appends only what it
 * lacks (as a re-import does), so the log is never read as complete before it is, and nothing is
 * written twice. Callers must not append to the session before this has run (`withImportedSessions`
 * makes every read and write of the log wait for it).
 *
 * Memory is bounded by the batch (`BUILD_BATCH`), whatever the file's size, unless `keepEvents`.
 * Returns what was built: nothing (`built: false`) when the session had nothing pending; with
 * `keepEvents`, the whole log as built (so the caller that asked to read it need not read it back),
 * unless the build resumed a crashed one or the file is larger than `KEEP_EVENTS_MAX_BYTES`.
 */
export async function materializeImportedSession(
  store: SessionStore,
  sessionId: string,
  options: MaterializeOptions = {},
): Promise<{ built: boolean; events?: StreamEvent[] }> {
  const manifest = await readManifest(store, sessionId);
  const pending = manifest?.pendingEvents;
  if (manifest === undefined || pending === undefined) return { built: false };
  const chunks = await copyChunks(store, sessionId, pending);
  // What an interrupted earlier run wrote is a prefix of the events: the writer skips it. With an
  // empty log (the usual case) there is nothing to skip, and hashing every block would cost a
  // seventh of the build.
  const index = await indexLog(store, sessionId);
  const watch = (block: ConversationBlock): boolean => block.type === 'system' && block.subtype === 'compaction';
  const resumed = index.known.size > 0;
  // Kept only for a copy small enough that holding its events costs little: a larger one is built
  // in bounded batches and read back from the log by its reader (a 1 GB transcript's events held
  // whole were 2 GB of RSS; bench/README.md, "A 1 GB transcript").
  const small = (manifest.files[0]?.size ?? Number.POSITIVE_INFINITY) <= KEEP_EVENTS_MAX_BYTES;
  const kept: StreamEvent[] | undefined = options.keepEvents === true && small && !resumed ? [] : undefined;
  const writer = new LogWriter(store, sessionId, {
    ...(resumed ? { known: index.known, metrics: index.metrics } : {}),
    watch,
    batch: options.batch ?? BUILD_BATCH,
    ...(kept !== undefined
      ? { onWritten: (events: readonly StreamEvent[]) => events.forEach((event) => kept.push(event)) }
      : {}),
  });
  const parser = eventParser(manifest.source, writer.add, pending.file);
  await streamChunks(chunks, parser, `${pending.transcript} of session ${sessionId}`, {
    afterChunk: (bytesRead) => writer.maybeFlush(bytesRead),
  });
  const info = parser.end();
  await writer.close();

  const compaction = [...info.compactions]
    .reverse()
    .find((entry) => entry.summary !== undefined && entry.blockId !== undefined);
  let checkpointBlockId: string | undefined;
  if (compaction !== undefined) {
    const seq = writer.watchedSeqs.get(compaction.blockId!) ?? index.compactionSeqs.get(compaction.blockId!);
    const newest = await store.readCheckpoint(sessionId);
    // A run cut after writing the checkpoint wrote this one already: versions are never written twice.
    const written = newest?.trigger === 'import' && newest.covers.throughSeq === seq;
    if (seq !== undefined && !written)
      await store.writeCheckpoint(
        sessionId,
        await checkpointFromCompaction(
          createTokenizer(),
          Date.now,
          compaction,
          seq,
          info,
          summaryKind(manifest.source),
        ),
      );
    if (seq !== undefined) checkpointBlockId = compaction.blockId;
  }
  const metrics = writer.metrics;
  // The parser's numbers replace the import's scan (they differ only for records written out of order).
  await store.updateSession(sessionId, (current) => ({ ...current, stats: statsOf(info, metrics), metrics }));
  const { pendingEvents: _built, ...rest } = manifest;
  await writeManifest(store, sessionId, {
    ...rest,
    blocks: info.blockCount,
    ...(checkpointBlockId !== undefined ? { checkpointBlockId } : {}),
  });
  return kept !== undefined ? { built: true, events: kept } : { built: true };
}

export interface MaterializeOptions {
  /**
   * Return the built events (the caller is about to read the whole log) when the native file is
   * at most `KEEP_EVENTS_MAX_BYTES`; a larger one's are not held (the caller reads the log).
   */
  keepEvents?: boolean;
  /** Events and input bytes per durable append; default `BUILD_BATCH`. */
  batch?: { events: number; inputBytes: number };
}

/**
 * Largest native file whose built events are handed to the reader that started the build, saving
 * it a read of the log: 32 MB of transcript is about 100 MB of events held at once.
 */
export const KEEP_EVENTS_MAX_BYTES = 32 * 1024 * 1024;

/**
 * A build's batches: twice an import's (1 MiB). Measured on a 50 MB transcript's first show (CPU
 * ms / peak RSS MB, three runs each; `PARLEY_BENCH_IMPORT_MB=50 npm run bench import`, first-show
 * row): 1 MiB 1,900 / 167; 2 MiB 1,740 / 175; 8 MiB 1,850 / 205 (a larger batch saves fdatasyncs
 * but holds more objects, and the garbage collector gives it back).
 */
const BUILD_BATCH = { events: 8192, inputBytes: 2 * 1024 * 1024 };

/**
 * The native copy a deferred session is built from, as chunks (streamed where the store can). A
 * missing copy fails with `CORRUPT_FILE`, saying to import the native file again.
 */
export async function copyChunks(
  store: SessionStore,
  sessionId: string,
  pending: { transcript: string; file: string },
): Promise<AsyncIterable<Uint8Array | string>> {
  const chunks =
    store.streamTranscript !== undefined
      ? await store.streamTranscript(sessionId, pending.transcript)
      : await wholeTranscript(store, sessionId, pending.transcript);
  if (chunks === undefined) {
    throw new StoreError(
      'CORRUPT_FILE',
      `Session "${sessionId}" was imported with its blocks to be built from its copy of ${pending.file}, but that copy (transcript "${pending.transcript}") is missing. Import ${pending.file} again with \`parley import\`.`,
      { fault: 'system', data: { sessionId, transcript: pending.transcript } },
    );
  }
  return chunks;
}

async function wholeTranscript(
  store: SessionStore,
  sessionId: string,
  name: string,
): Promise<AsyncIterable<string> | undefined> {
  const text = await store.readTranscript(sessionId, name);
  if (text === undefined) return undefined;
  return (async function* () {
    yield text;
  })();
}
