import { ClaudeCodeParser } from '../../backends/index.js';
import { createTokenizer, type ConversationBlock } from '../../conversation/index.js';
import { StoreError, type SessionStore } from '../../store/index.js';
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
 * Returns whether anything was built.
 */
export async function materializeImportedSession(store: SessionStore, sessionId: string): Promise<boolean> {
  const manifest = await readManifest(store, sessionId);
  const pending = manifest?.pendingEvents;
  if (manifest === undefined || pending === undefined) return false;
  const chunks = store.streamTranscript !== undefined ? await store.streamTranscript(sessionId, pending.transcript) : await wholeTranscript(store, sessionId, pending.transcript);
  if (chunks === undefined) {
    throw new StoreError(
      'CORRUPT_FILE',
      `Session "${sessionId}" was imported with its blocks to be built from its copy of ${pending.file}, but that copy (transcript "${pending.transcript}") is missing. Import ${pending.file} again with \`parley import\`.`,
      { fault: 'system', data: { sessionId, transcript: pending.transcript } },
    );
  }
  // What an interrupted earlier run wrote is a prefix of the events: the writer skips it. With an
  // empty log (the usual case) there is nothing to skip, and hashing every block would cost a
  // seventh of the build.
  const index = await indexLog(store, sessionId);
  const watch = (block: ConversationBlock): boolean => block.type === 'system' && block.subtype === 'compaction';
  const resumed = index.known.size > 0;
  const writer = new LogWriter(store, sessionId, resumed ? { known: index.known, metrics: index.metrics, watch } : { watch });
  const parser = new ClaudeCodeParser({ emit: writer.add, file: pending.file });
  await streamChunks(chunks, parser, `${pending.transcript} of session ${sessionId}`, { afterChunk: (bytesRead) => writer.maybeFlush(bytesRead) });
  const info = parser.end();
  await writer.close();

  const compaction = [...info.compactions].reverse().find((entry) => entry.summary !== undefined && entry.blockId !== undefined);
  let checkpointBlockId: string | undefined;
  if (compaction !== undefined) {
    const seq = writer.watchedSeqs.get(compaction.blockId!) ?? index.compactionSeqs.get(compaction.blockId!);
    const newest = await store.readCheckpoint(sessionId);
    // A run cut after writing the checkpoint wrote this one already: versions are never written twice.
    const written = newest?.trigger === 'import' && newest.covers.throughSeq === seq;
    if (seq !== undefined && !written) await store.writeCheckpoint(sessionId, await checkpointFromCompaction(createTokenizer(), Date.now, compaction, seq, info, 'claude-code'));
    if (seq !== undefined) checkpointBlockId = compaction.blockId;
  }
  const metrics = writer.metrics;
  // The parser's numbers replace the import's scan (they differ only for records written out of order).
  await store.updateSession(sessionId, (current) => ({ ...current, stats: statsOf(info, metrics), metrics }));
  const { pendingEvents: _built, ...rest } = manifest;
  await writeManifest(store, sessionId, { ...rest, blocks: info.blockCount, ...(checkpointBlockId !== undefined ? { checkpointBlockId } : {}) });
  return true;
}

async function wholeTranscript(store: SessionStore, sessionId: string, name: string): Promise<AsyncIterable<string> | undefined> {
  const text = await store.readTranscript(sessionId, name);
  if (text === undefined) return undefined;
  return (async function* () {
    yield text;
  })();
}
