import { promises as fs } from 'node:fs';
import { basename, resolve, sep } from 'node:path';
import {
  ClaudeCodeParser,
  GeminiTranscriptParser,
  parseSeedLayout,
  type SeedLayoutFiles,
} from '../../backends/index.js';
import {
  MAIN_CONVERSATION,
  createTokenizer,
  isParleyError,
  type UnsequencedEvent,
  type SubagentBlock,
} from '../../conversation/index.js';
import { FORMAT_VERSION, type CheckpointInput } from '../../store/index.js';
import {
  discoverImportSources,
  type ClaudeCodeSource,
  type CodexSource,
  type GeminiSource,
  type SeedLayoutSource,
} from './discover.js';
import { ImportError, importAborted } from './errors.js';
import { readJsonObject } from './import-summary.js';
import { streamFile } from './read-file.js';
import { transcriptName } from './session-ids.js';
import { sessionIdForFile } from './session-identity.js';
import { withImportedSessions } from './imported-store.js';
import {
  DEFAULT_COPY_MAX,
  beginImport,
  finishImport,
  importDeferredSession,
  isBlockEvent,
  nothingImported,
  type ImportContext,
  type ImportOptions,
  type ImportResult,
  type ImportedSession,
  type NothingImported,
  type PendingImport,
} from './import-session.js';
import { importCodex } from './import-codex.js';

export type {
  ImportOptions,
  ImportProgress,
  ImportResult,
  ImportStatus,
  ImportedSession,
  LogIndex,
} from './import-session.js';

/**
 * `parley import <path>`: Claude Code, Gemini CLI and Codex transcripts and seed-layout sessions
 * become read-only Parley sessions. Each file lands under a deterministic id (`cc-<nativeId>`,
 * `gem-<nativeId>`, `codex-<thread id>`, `seed-<nativeId>`, or with a hash of its path when another
 * file of that name has the id: `session-identity.ts`), so importing twice never duplicates: an
 * unchanged source is skipped, a changed one (the user went on in Claude Code) gets only its new or
 * changed blocks appended. Native files are only ever read. Each source has its module of steps
 * between `beginImport` and `finishImport` (`import-session.ts`): Claude Code, the Gemini CLI and
 * the seed layout here, Codex in `import-codex.ts`.
 */

/** Imports a file or a folder (a `~/.claude/projects/<project>/` tree, a `~/.gemini/tmp/<project>/chats/` folder, a `$CODEX_HOME/sessions` tree, a seed-layout folder). */
export async function importTranscripts(path: string, options: ImportOptions): Promise<ImportResult> {
  const root = resolve(path);
  const discovery = await discoverImportSources(root);
  if (options.projectRoot !== undefined) {
    const project = resolve(options.projectRoot);
    discovery.sources = discovery.sources.filter(
      (source) => source.source !== 'codex' || (source.cwd !== undefined && isInside(resolve(source.cwd), project)),
    );
  }
  if (discovery.sources.length === 0) {
    const reasons = discovery.skipped.slice(0, 3).map((entry) => `${entry.path}: ${entry.reason}`);
    throw new ImportError(
      'NOTHING_TO_IMPORT',
      `No Claude Code, Gemini CLI, Codex or seed-layout session found in ${root}${reasons.length > 0 ? ` (${reasons.join('; ')})` : ''}. Point at a session file or a folder holding sessions.`,
      { fault: 'user', data: { path: root, skipped: discovery.skipped } },
    );
  }
  const result: ImportResult = { path: root, sessions: [], warnings: [], skipped: discovery.skipped };
  const total = discovery.sources.length;
  const done = (imported: ImportedSession): void => {
    result.sessions.push(imported);
    context.progress({ phase: 'session_done', sessionId: imported.sessionId });
  };
  // One deferred session at a time is made durable while the next file is scanned: its fsyncs
  // wait on the disk while this thread reads. Every write waits for it first (`beforeWrite`), so
  // the sessions are written, and listed, in discovery order, and its failure stops the import.
  let inFlight: PendingImport | undefined;
  const settle = async (): Promise<void> => {
    const pending = inFlight;
    if (pending === undefined) return;
    inFlight = undefined;
    done(await pending.finishing);
  };
  const context: ImportContext = {
    // A session imported with its events deferred is built before its log is read or appended to.
    store: withImportedSessions(options.store),
    options,
    now: options.now ?? Date.now,
    warnings: result.warnings,
    progress: (progress) =>
      options.onProgress?.({ ...progress, sessionsTotal: total, sessionsDone: result.sessions.length }),
    tokenizer: createTokenizer(),
    beforeWrite: settle,
  };
  context.progress({ phase: 'discovered' });
  try {
    for (const source of discovery.sources) {
      if (options.signal?.aborted) throw importAborted(root);
      // A file with the in-flight session's native id picks its session id (session-identity.ts) once that session exists.
      if (inFlight !== undefined && 'nativeSessionId' in source && source.nativeSessionId === inFlight.nativeSessionId)
        await settle();
      try {
        const imported =
          source.source === 'claude-code'
            ? await importClaudeCode(source, context)
            : source.source === 'gemini-cli'
              ? await importGemini(source, context)
              : source.source === 'codex'
                ? await importCodex(source, context)
                : await importSeedLayout(source, context);
        await settle();
        if ('finishing' in imported) {
          // Rejections are handled where it is awaited; until then it must not count as unhandled.
          imported.finishing.catch(() => {});
          inFlight = imported;
          continue;
        }
        if ('skipped' in imported) {
          for (const file of imported.files) result.skipped.push({ path: file, reason: imported.skipped });
          continue;
        }
        done(imported);
      } catch (error) {
        // One unreadable source does not stop the others; an abort or a store failure does.
        if (isParleyError(error, 'IMPORT_READ_FAILED')) {
          result.warnings.push({ code: 'IMPORT_READ_FAILED', message: error.message, file: mainPathOf(source) });
          continue;
        }
        throw error;
      }
    }
    await settle();
  } catch (error) {
    // Nothing of this import keeps running once it has failed.
    await inFlight?.finishing.catch(() => {});
    throw error;
  }
  return result;
}

function isInside(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith(sep) ? folder : `${folder}${sep}`);
}

function mainPathOf(source: ClaudeCodeSource | GeminiSource | CodexSource | SeedLayoutSource): string {
  return source.source === 'seed-layout' ? source.folder : source.main;
}

// -----------------------------------------------------------------------------------------------
// Claude Code

async function importClaudeCode(
  source: ClaudeCodeSource,
  context: ImportContext,
): Promise<ImportedSession | PendingImport> {
  const sessionId = await sessionIdForFile(context.store, {
    source: 'claude-code',
    nativeSessionId: source.nativeSessionId,
    path: source.main,
    ...(source.contentId !== undefined ? { contentId: source.contentId } : {}),
  });
  const deferred = await importClaudeCodeDeferred(source, sessionId, context);
  if (deferred !== undefined) return deferred;
  const files = [
    source.main,
    ...source.subagents.flatMap((agent) =>
      agent.metaPath !== undefined ? [agent.path, agent.metaPath] : [agent.path],
    ),
  ];
  const start = await beginImport(context, sessionId, 'claude-code', source.main, source.nativeSessionId, files);
  if (start.unchanged !== undefined) return start.unchanged;
  const copyMax = context.options.copyTranscriptMaxBytes ?? DEFAULT_COPY_MAX;
  const copies: Array<{ name: string; text: string }> = [];
  const writer = start.writer;

  const live = context.options.live === true;
  // Agents no Task call launches (a compaction's, a warmup's) are placed in main where they started.
  const placed = new Map<string, { name: string; at: number; input: string }>();
  for (const agent of source.subagents) {
    const start = await unlaunchedAgent(agent.path, agent.agentId);
    if (start !== undefined) placed.set(agent.agentId, start);
  }
  const main = new ClaudeCodeParser({
    emit: writer.add,
    file: basename(source.main),
    collectMessageIds: source.subagents.length > 0,
    live,
    placeByTime: [...placed].map(([agentId, start]) => ({
      at: start.at,
      block: unlinkedSubagent(agentId, start.name, start.input, start.at).block,
    })),
  });
  const mainSize = start.fingerprints[0]!.size;
  const read = await streamFile(source.main, main, {
    ...(context.options.signal !== undefined ? { signal: context.options.signal } : {}),
    keepText: mainSize <= copyMax,
    afterChunk: async (bytesRead) => {
      await writer.maybeFlush(bytesRead);
      context.progress({ phase: 'reading', sessionId, file: source.main, bytesRead, totalBytes: mainSize });
    },
  });
  // Named as the session manager reads them back: `main`, and each thread's id.
  if (read.text !== undefined) copies.push({ name: 'main', text: read.text });
  const info = main.end();
  const warnings = [...main.warnings];

  for (const agent of source.subagents) {
    if (context.options.signal?.aborted) throw importAborted(source.main);
    const meta = agent.metaPath !== undefined ? await readJsonObject(agent.metaPath, warnings) : undefined;
    const agentType = typeof meta?.['agentType'] === 'string' ? meta['agentType'] : placed.get(agent.agentId)?.name;
    const model = typeof meta?.['model'] === 'string' ? meta['model'] : undefined;
    const parser = new ClaudeCodeParser({
      emit: writer.add,
      conversationId: agent.agentId,
      parentMessageIds: main.messageIds,
      parentUuids: main.uuids,
      file: basename(agent.path),
      live,
    });
    writer.add(subagentStart(agent.agentId, agentType ?? 'subagent', model, meta, info.startedAt ?? 0));
    const size = (await fs.stat(agent.path)).size;
    const subRead = await streamFile(agent.path, parser, {
      ...(context.options.signal !== undefined ? { signal: context.options.signal } : {}),
      keepText: size <= copyMax,
      afterChunk: (bytesRead) => writer.maybeFlush(bytesRead),
    });
    if (subRead.text !== undefined) copies.push({ name: transcriptName(agent.agentId), text: subRead.text });
    const subInfo = parser.end();
    warnings.push(...parser.warnings);
    if (placed.has(agent.agentId)) {
      info.subagents.push({ subagentId: agent.agentId, name: agentType ?? 'subagent', linked: true });
    } else if (!info.subagents.some((link) => link.subagentId === agent.agentId)) {
      // A subagent the main thread does not point at (a background agent, a lost result): still reachable from main.
      const description = typeof meta?.['description'] === 'string' ? meta['description'] : undefined;
      writer.add(
        unlinkedSubagent(
          agent.agentId,
          agentType ?? 'subagent',
          subInfo.firstUserMessage ?? description ?? '',
          subInfo.endedAt ?? info.endedAt ?? 0,
        ),
      );
      info.subagents.push({ subagentId: agent.agentId, name: agentType ?? 'subagent', linked: false });
    }
  }
  for (const link of info.subagents) {
    // Old inline sidechains that no Task call claimed: link them from main too.
    if (!link.linked && link.subagentId.startsWith('sidechain-'))
      writer.add(unlinkedSubagent(link.subagentId, link.name, '', info.endedAt ?? 0));
  }
  return finishImport(context, {
    sessionId,
    source: 'claude-code',
    path: source.main,
    nativeSessionId: source.nativeSessionId,
    info,
    writer,
    start,
    copies,
    warnings,
    summaryKind: 'claude-code',
    ...(source.contentId !== undefined ? { contentId: source.contentId } : {}),
    subagentCount: new Set(info.subagents.map((link) => link.subagentId)).size,
  });
}

/** The fast path (`deferred-import.ts`) where it applies: a new session, no subagent files, not live, a store that copies files. */
async function importClaudeCodeDeferred(
  source: ClaudeCodeSource,
  sessionId: string,
  context: ImportContext,
): Promise<PendingImport | undefined> {
  const store = context.store;
  if (store.createSessionWithTranscripts === undefined || source.subagents.length > 0 || context.options.live === true)
    return undefined;
  if ((await store.getSession(sessionId)) !== undefined) return undefined;
  return importDeferredSession(context, {
    source: 'claude-code',
    sessionId,
    path: source.main,
    nativeSessionId: source.nativeSessionId,
    ...(source.contentId !== undefined ? { contentId: source.contentId } : {}),
  });
}

function subagentStart(
  agentId: string,
  name: string,
  model: string | undefined,
  meta: Record<string, unknown> | undefined,
  at: number,
): UnsequencedEvent {
  return {
    type: 'block_complete',
    conversationId: agentId,
    at,
    block: {
      type: 'system',
      id: `subagent-start-${agentId}`,
      createdAt: at,
      completedAt: at,
      subtype: 'subagent_start',
      content: `Subagent ${name}${model !== undefined ? ` (${model})` : ''}`,
      ...(meta !== undefined ? { data: meta } : {}),
    },
  };
}

/**
 * A subagent file of an agent that no Task call launched, read from its first record: Claude Code's
 * compaction agent (`agent-acompact-*`, one per automatic compaction) and 2.0.x's "Warmup" agents.
 */
async function unlaunchedAgent(
  path: string,
  agentId: string,
): Promise<{ name: string; at: number; input: string } | undefined> {
  const compaction = agentId.startsWith('acompact');
  let first: Record<string, unknown> | undefined;
  const handle = await fs.open(path, 'r');
  try {
    const buffer = Buffer.alloc(64 * 1024);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    for (const line of buffer.toString('utf8', 0, bytesRead).split('\n')) {
      try {
        const record: unknown = JSON.parse(line);
        if (typeof record === 'object' && record !== null && 'timestamp' in record) {
          first = record as Record<string, unknown>;
          break;
        }
      } catch {
        continue;
      }
    }
  } finally {
    await handle.close();
  }
  const at = typeof first?.['timestamp'] === 'string' ? Date.parse(first['timestamp']) : Number.NaN;
  if (Number.isNaN(at)) return undefined;
  const message = first?.['message'] as { content?: unknown } | undefined;
  const content = message?.['content'];
  const prompt =
    typeof content === 'string'
      ? content
      : Array.isArray(content)
        ? content
            .map((part: unknown) => (part as { text?: unknown } | null)?.text)
            .filter((text): text is string => typeof text === 'string')
            .join('\n')
        : '';
  if (compaction) return { name: 'compaction', at, input: 'Automatic compaction of the conversation' };
  if (prompt.trim() === 'Warmup') return { name: 'warmup', at, input: prompt };
  return undefined;
}

function unlinkedSubagent(
  subagentId: string,
  name: string,
  input: string,
  at: number,
): UnsequencedEvent & { block: SubagentBlock } {
  return {
    type: 'block_complete',
    conversationId: MAIN_CONVERSATION,
    at,
    block: {
      type: 'subagent',
      id: `subagent-${subagentId}`,
      createdAt: at,
      completedAt: at,
      subagentId,
      name,
      input,
      status: 'success',
    },
  };
}

// -----------------------------------------------------------------------------------------------
// Gemini CLI

async function importGemini(source: GeminiSource, context: ImportContext): Promise<ImportedSession | NothingImported> {
  // A Gemini log is a replay (rewinds and checkpoints rewrite it): parse it whole, then write.
  const events: UnsequencedEvent[] = [];
  const stat = await fs.stat(source.main);
  const parser = new GeminiTranscriptParser({
    emit: (event) => events.push(event),
    file: basename(source.main),
    fallbackTime: Math.floor(stat.mtimeMs),
  });
  const copyMax = context.options.copyTranscriptMaxBytes ?? DEFAULT_COPY_MAX;
  const read = await streamFile(source.main, parser, {
    ...(context.options.signal !== undefined ? { signal: context.options.signal } : {}),
    keepText: stat.size <= copyMax,
  });
  const info = parser.end();
  const warnings = [...parser.warnings];
  if (!events.some(isBlockEvent)) return nothingImported([source.main], 'Gemini CLI file', parser.warnings);
  const nativeSessionId =
    source.checkpointTag ?? info.nativeSessionId ?? basename(source.main).replace(/\.jsonl?$/, '');
  // A session file's id is its content's own; a checkpoint has none.
  const contentId = source.checkpointTag === undefined ? info.nativeSessionId : undefined;
  const sessionId = await sessionIdForFile(context.store, {
    source: 'gemini-cli',
    nativeSessionId,
    path: source.main,
    ...(contentId !== undefined ? { contentId } : {}),
  });
  const start = await beginImport(context, sessionId, 'gemini-cli', source.main, nativeSessionId, [
    source.main,
    ...source.subagents.map((agent) => agent.path),
  ]);
  if (start.unchanged !== undefined) return start.unchanged;
  const copies: Array<{ name: string; text: string }> = [];
  if (read.text !== undefined) copies.push({ name: 'main', text: read.text });
  for (const event of events) start.writer.add(event);

  for (const agent of source.subagents) {
    const subEvents: UnsequencedEvent[] = [];
    const subStat = await fs.stat(agent.path);
    const subParser = new GeminiTranscriptParser({
      emit: (event) => subEvents.push(event),
      file: basename(agent.path),
      fallbackTime: Math.floor(subStat.mtimeMs),
    });
    const subRead = await streamFile(agent.path, subParser, { keepText: subStat.size <= copyMax });
    const subInfo = subParser.end();
    warnings.push(...subParser.warnings);
    const subagentId = subInfo.nativeSessionId ?? basename(agent.path, '.jsonl');
    start.writer.add(subagentStart(subagentId, 'subagent', subInfo.model, undefined, subInfo.startedAt ?? 0));
    for (const event of subEvents) start.writer.add({ ...event, conversationId: subagentId });
    start.writer.add(unlinkedSubagent(subagentId, 'subagent', subInfo.firstUserMessage ?? '', subInfo.startedAt ?? 0));
    info.subagents.push({ subagentId, name: 'subagent', linked: false });
    if (subRead.text !== undefined) copies.push({ name: transcriptName(subagentId), text: subRead.text });
  }
  return finishImport(context, {
    sessionId,
    source: 'gemini-cli',
    path: source.main,
    nativeSessionId,
    info,
    writer: start.writer,
    start,
    copies,
    warnings,
    summaryKind: 'gemini-cli',
    ...(contentId !== undefined ? { contentId } : {}),
    subagentCount: source.subagents.length,
  });
}

// -----------------------------------------------------------------------------------------------
// Seed layout

async function importSeedLayout(
  source: SeedLayoutSource,
  context: ImportContext,
): Promise<ImportedSession | NothingImported> {
  const files: SeedLayoutFiles = { sessionId: source.sessionId };
  const paths = Object.values(source.files)
    .filter((path): path is string => path !== undefined)
    .sort();
  for (const [kind, path] of Object.entries(source.files) as Array<
    [keyof SeedLayoutSource['files'], string | undefined]
  >) {
    if (path === undefined) continue;
    try {
      files[kind] = await fs.readFile(path, 'utf8');
    } catch (error) {
      throw new ImportError('IMPORT_READ_FAILED', `Cannot read ${path}: ${(error as Error).message}.`, {
        fault: 'system',
        cause: error,
        data: { path },
      });
    }
  }
  const parsed = parseSeedLayout(files);
  // A session file alone is only a record about a conversation; with no chat, checkpoint, context or description it holds none.
  const holdsNothing =
    parsed.checkpoint === undefined && parsed.context === undefined && parsed.agentDescription === undefined;
  if (!parsed.events.some(isBlockEvent) && holdsNothing)
    return nothingImported(paths, 'seed-layout file', parsed.warnings);
  const nativeSessionId = parsed.nativeSessionId ?? source.sessionId;
  const sessionId = await sessionIdForFile(context.store, {
    source: 'seed-layout',
    nativeSessionId,
    path: source.folder,
  });
  const agentType = parsed.session?.agentType ?? parsed.agentDescription?.agentType ?? 'imported';
  const start = await beginImport(context, sessionId, 'seed-layout', source.folder, nativeSessionId, paths, {
    agentType,
    ...(parsed.session?.createdAt !== undefined ? { createdAt: parsed.session.createdAt } : {}),
  });
  if (start.unchanged !== undefined) return start.unchanged;
  for (const event of parsed.events) start.writer.add(event);
  // The chat file is the session's raw transcript (`main`); the other files are kept under their own names.
  const copies = paths.map((path) => {
    const kind = kindOf(source, path);
    return { name: kind === 'chat' ? 'main' : transcriptName(basename(path)), text: files[kind] ?? '' };
  });

  const now = context.now();
  const iso = new Date(now).toISOString();
  const needsTokens =
    parsed.checkpoint?.tokens.checkpoint === undefined ||
    parsed.context?.tokens === undefined ||
    parsed.agentDescription?.tokens === undefined;
  if (needsTokens) await context.tokenizer.load();
  const count = (text: string): number => context.tokenizer.count(text);

  let checkpointWritten = false;
  if (parsed.checkpoint !== undefined) {
    const checkpoint = parsed.checkpoint;
    const previous = await context.store.readCheckpoint(sessionId);
    if (previous === undefined || JSON.stringify(previous.summary) !== JSON.stringify(checkpoint.summary)) {
      const input: CheckpointInput = {
        createdAt: checkpoint.createdAt ?? iso,
        trigger: 'import',
        summary: checkpoint.summary,
        pinned: [],
        liveHandles: [],
        ...(checkpoint.ralphLoop !== undefined ? { ralphLoop: checkpoint.ralphLoop } : {}),
        covers: {
          // The seed cleared compacted messages from its chat file: none of them is in this log.
          throughSeq: -1,
          messageCount: Math.max(0, Math.round(checkpoint.messageCount)),
          ...(checkpoint.oldestMessageTimestamp !== undefined
            ? { oldestMessageTimestamp: checkpoint.oldestMessageTimestamp }
            : {}),
          ...(checkpoint.newestMessageTimestamp !== undefined
            ? { newestMessageTimestamp: checkpoint.newestMessageTimestamp }
            : {}),
        },
        tokens: {
          checkpoint: Math.round(checkpoint.tokens.checkpoint ?? count(JSON.stringify(checkpoint.summary))),
          lastCompactionInput: Math.round(checkpoint.tokens.lastCompactionInput ?? 0),
          totalSaved: Math.round(checkpoint.tokens.totalSaved ?? 0),
        },
      };
      await context.store.writeCheckpoint(sessionId, input);
      checkpointWritten = true;
    }
  }
  if (parsed.context !== undefined) {
    const text = Object.values(parsed.context.sections).join('\n');
    await context.store.writeContext({
      formatVersion: FORMAT_VERSION,
      sessionId,
      updatedAt: parsed.context.updatedAt ?? iso,
      sections: parsed.context.sections,
      tokens: Math.round(parsed.context.tokens ?? count(text)),
    });
  }
  if (parsed.agentDescription !== undefined) {
    const description = parsed.agentDescription;
    await context.store.writeAgentDescription({
      formatVersion: FORMAT_VERSION,
      sessionId,
      agentType: description.agentType ?? agentType,
      role: description.role,
      instructions: description.instructions,
      allowedTools: description.allowedTools,
      ...(description.toolInstructions !== undefined ? { toolInstructions: description.toolInstructions } : {}),
      createdAt: description.createdAt ?? iso,
      tokens: Math.round(
        description.tokens ??
          count([description.role, ...description.instructions, description.toolInstructions ?? ''].join('\n')),
      ),
    });
  }
  const imported = await finishImport(context, {
    sessionId,
    source: 'seed-layout',
    path: source.folder,
    nativeSessionId,
    info: parsed.info,
    writer: start.writer,
    start,
    copies,
    warnings: parsed.warnings,
    summaryKind: undefined,
    subagentCount: 0,
  });
  return checkpointWritten ? { ...imported, checkpoint: true } : imported;
}

function kindOf(source: SeedLayoutSource, path: string): keyof SeedLayoutSource['files'] {
  const entry = Object.entries(source.files).find(([, candidate]) => candidate === path);
  return (entry?.[0] ?? 'chat') as keyof SeedLayoutSource['files'];
}
