import { basename } from 'node:path';
import { CodexRolloutParser } from '../../backends/index.js';
import type { CodexSource } from './discover.js';
import {
  DEFAULT_COPY_MAX,
  beginImport,
  finishImport,
  importDeferredSession,
  type ImportContext,
  type ImportedSession,
  type PendingImport,
} from './import-session.js';
import { streamFile } from './read-file.js';
import { sessionIdForFile } from './session-identity.js';

/**
 * A Codex rollout becomes a read-only session `codex-<thread id>`. A thread is one file (a resumed
 * thread appends to it; a fork or a subagent is a rollout of its own), so there is nothing to
 * attach. Like a Claude Code transcript, a new rollout imported into the file store is copied
 * verbatim and scanned for its listing, its blocks built on the session's first read
 * (`deferred-import.ts`); a live import (`--watch`) or an update appends the blocks as they are read.
 */
export async function importCodex(
  source: CodexSource,
  context: ImportContext,
): Promise<ImportedSession | PendingImport> {
  const sessionId = await sessionIdForFile(context.store, {
    source: 'codex',
    nativeSessionId: source.nativeSessionId,
    path: source.main,
    contentId: source.nativeSessionId,
  });
  const deferred = await importCodexDeferred(source, sessionId, context);
  if (deferred !== undefined) return deferred;
  const start = await beginImport(context, sessionId, 'codex', source.main, source.nativeSessionId, [source.main]);
  if (start.unchanged !== undefined) return start.unchanged;
  const writer = start.writer;
  const parser = new CodexRolloutParser({
    emit: writer.add,
    file: basename(source.main),
    ...(context.options.live === true ? { live: true } : {}),
  });
  const size = start.fingerprints[0]!.size;
  const read = await streamFile(source.main, parser, {
    ...(context.options.signal !== undefined ? { signal: context.options.signal } : {}),
    keepText: size <= (context.options.copyTranscriptMaxBytes ?? DEFAULT_COPY_MAX),
    afterChunk: async (bytesRead) => {
      await writer.maybeFlush(bytesRead);
      context.progress({ phase: 'reading', sessionId, file: source.main, bytesRead, totalBytes: size });
    },
  });
  const info = parser.end();
  return finishImport(context, {
    sessionId,
    source: 'codex',
    path: source.main,
    nativeSessionId: info.nativeSessionId ?? source.nativeSessionId,
    info,
    writer,
    start,
    copies: read.text !== undefined ? [{ name: 'main', text: read.text }] : [],
    warnings: [...parser.warnings],
    summaryKind: 'codex',
    contentId: source.nativeSessionId,
    subagentCount: 0,
  });
}

/** The fast path where it applies: a new session, not live, a store that copies files. */
async function importCodexDeferred(
  source: CodexSource,
  sessionId: string,
  context: ImportContext,
): Promise<PendingImport | undefined> {
  const store = context.store;
  if (store.createSessionWithTranscripts === undefined || context.options.live === true) return undefined;
  if ((await store.getSession(sessionId)) !== undefined) return undefined;
  return importDeferredSession(context, {
    source: 'codex',
    sessionId,
    path: source.main,
    nativeSessionId: source.nativeSessionId,
    contentId: source.nativeSessionId,
  });
}
