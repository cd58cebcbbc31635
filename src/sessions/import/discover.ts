import { promises as fs } from 'node:fs';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { seedLayoutFileOf, type SeedLayoutFileKind } from '../../backends/index.js';
import { ImportError } from './errors.js';

/**
 * Finds what a path holds: Claude Code sessions (with their subagent files), Gemini CLI sessions
 * (with theirs), Codex rollouts, and seed-layout sessions. A subagent transcript is always attached to its parent
 * session, never listed as a session of its own. Files are only read, never written.
 */

export interface ClaudeCodeSource {
  source: 'claude-code';
  /** The session file; its name (without `.jsonl`) is the native session id. */
  main: string;
  nativeSessionId: string;
  /** The first record's `uuid`: the transcript's own id, which no other conversation has. */
  contentId?: string;
  subagents: Array<{ path: string; agentId: string; metaPath?: string }>;
}

export interface GeminiSource {
  source: 'gemini-cli';
  /** A `session-*.jsonl` log, a legacy `session-*.json` document, or a `checkpoint-<tag>.json`. */
  main: string;
  /** Set for a checkpoint, which carries no session id of its own. */
  checkpointTag?: string;
  subagents: Array<{ path: string }>;
}

export interface CodexSource {
  source: 'codex';
  /** A rollout, `rollout-<time>-<thread id>.jsonl`. */
  main: string;
  /** The thread id: the rollout's `session_meta` id, else the one its name ends with. */
  nativeSessionId: string;
  /** The folder Codex ran in (`session_meta.cwd`): rollouts of all projects share one tree. */
  cwd?: string;
}

export interface SeedLayoutSource {
  source: 'seed-layout';
  folder: string;
  /** The `{id}` of the file names, or the name of the folder holding an old `chat.json`. */
  sessionId: string;
  files: Partial<Record<SeedLayoutFileKind, string>>;
}

export type ImportSourceFiles = ClaudeCodeSource | GeminiSource | CodexSource | SeedLayoutSource;

export interface DiscoveryResult {
  sources: ImportSourceFiles[];
  /** Files that looked relevant but are not imported, with the reason. */
  skipped: Array<{ path: string; reason: string }>;
}

type Sniffed = 'claude-code' | 'gemini-cli' | 'gemini-checkpoint' | 'codex' | 'empty' | 'unknown';

const CLAUDE_RECORD_TYPES = new Set([
  'user',
  'assistant',
  'system',
  'attachment',
  'progress',
  'summary',
  'ai-title',
  'custom-title',
  'agent-name',
  'last-prompt',
  'file-history-snapshot',
  'file-history-delta',
  'queue-operation',
  'permission-mode',
  'mode',
  'cost-state',
]);
const GEMINI_MESSAGE_TYPES = new Set(['user', 'gemini', 'info', 'warning', 'error']);
/** A Codex rollout's record envelopes: `{timestamp, type, payload}`. */
const CODEX_RECORD_TYPES = new Set(['session_meta', 'response_item', 'event_msg', 'turn_context', 'compacted']);
const CODEX_ROLLOUT_NAME = /^rollout-.*?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$/i;
const SNIFF_BYTES = 64 * 1024;
const EMPTY = 'an empty file (0 bytes)';
/** A first line may hold a pasted screenshot: it is read whole up to this size, so its record can be recognised. */
const FIRST_LINE_MAX_BYTES = 64 * 1024 * 1024;

/** The first 64 KiB of a file, extended to the end of its first line when that line is longer. */
async function readHead(path: string): Promise<{ text: string; cut: boolean }> {
  const handle = await fs.open(path, 'r');
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const size = total === 0 ? SNIFF_BYTES : Math.min(Math.max(total, SNIFF_BYTES), FIRST_LINE_MAX_BYTES - total);
      const buffer = Buffer.alloc(size);
      const { bytesRead } = await handle.read(buffer, 0, size, total);
      const chunk = buffer.subarray(0, bytesRead);
      chunks.push(chunk);
      total += bytesRead;
      if (bytesRead < size) return { text: Buffer.concat(chunks).toString('utf8'), cut: false };
      if (chunk.includes(10) || total >= FIRST_LINE_MAX_BYTES)
        return { text: Buffer.concat(chunks).toString('utf8'), cut: true };
    }
  } finally {
    await handle.close();
  }
}

/** The first lines of a file decide its format; the rest is never read here. */
async function sniff(path: string): Promise<{ kind: Sniffed; sessionId?: string; firstUuid?: string; cwd?: string }> {
  const { text, cut } = await readHead(path);
  if (text.length === 0) return { kind: 'empty' };
  if (/^\s*\{\s*$/m.test(text.split('\n', 1)[0] ?? '') || /^\s*\{\s*\n/.test(text)) {
    // A pretty-printed JSON document: Gemini's legacy session or a checkpoint.
    if (text.includes('"projectHash"') && text.includes('"sessionId"')) return { kind: 'gemini-cli' };
    if (/"history"\s*:\s*\[/.test(text)) return { kind: 'gemini-checkpoint' };
    return { kind: 'unknown' };
  }
  const lines = text.split('\n');
  // The last line of the bytes read may be cut off: only complete lines count.
  if (cut) lines.pop();
  for (const line of lines.slice(0, 50)) {
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      continue;
    }
    if (typeof record !== 'object' || record === null || Array.isArray(record)) continue;
    const fields = record as Record<string, unknown>;
    const payload = fields['payload'];
    if (
      typeof fields['type'] === 'string' &&
      CODEX_RECORD_TYPES.has(fields['type']) &&
      typeof payload === 'object' &&
      payload !== null
    ) {
      const meta = fields['type'] === 'session_meta' ? (payload as Record<string, unknown>) : {};
      const id = meta['id'];
      const cwd = meta['cwd'];
      return {
        kind: 'codex',
        ...(typeof id === 'string' ? { sessionId: id } : {}),
        ...(typeof cwd === 'string' ? { cwd } : {}),
      };
    }
    // The first rollouts: a meta line `{id, timestamp, instructions}` with no envelope.
    if (
      CODEX_ROLLOUT_NAME.test(basename(path)) &&
      fields['type'] === undefined &&
      typeof fields['id'] === 'string' &&
      typeof fields['timestamp'] === 'string'
    )
      return { kind: 'codex', sessionId: fields['id'] };
    if (typeof fields['projectHash'] === 'string' || '$set' in fields || '$rewindTo' in fields)
      return { kind: 'gemini-cli' };
    if (Array.isArray(fields['history'])) return { kind: 'gemini-checkpoint' };
    const type = fields['type'];
    if (
      typeof type === 'string' &&
      CLAUDE_RECORD_TYPES.has(type) &&
      ('uuid' in fields || 'sessionId' in fields || 'leafUuid' in fields || 'messageId' in fields)
    ) {
      const sessionId = typeof fields['sessionId'] === 'string' ? fields['sessionId'] : undefined;
      const firstUuid = firstUuidOf(lines, fields);
      return {
        kind: 'claude-code',
        ...(sessionId !== undefined ? { sessionId } : {}),
        ...(firstUuid !== undefined ? { firstUuid } : {}),
      };
    }
    if (
      typeof fields['id'] === 'string' &&
      typeof type === 'string' &&
      GEMINI_MESSAGE_TYPES.has(type) &&
      'timestamp' in fields
    ) {
      return { kind: 'gemini-cli' };
    }
  }
  return { kind: 'unknown' };
}

/** The `uuid` of the first record that has one, from `first` on (a transcript may open with a `summary` or a snapshot). */
function firstUuidOf(lines: string[], first: Record<string, unknown>): string | undefined {
  if (typeof first['uuid'] === 'string') return first['uuid'];
  for (const line of lines.slice(0, 50)) {
    try {
      const record: unknown = JSON.parse(line);
      if (typeof record === 'object' && record !== null && typeof (record as { uuid?: unknown }).uuid === 'string')
        return (record as { uuid: string }).uuid;
    } catch {
      // Not a record: read on.
    }
  }
  return undefined;
}

async function walk(folder: string, files: string[]): Promise<void> {
  let entries;
  try {
    entries = await fs.readdir(folder, { withFileTypes: true });
  } catch (error) {
    throw new ImportError('IMPORT_READ_FAILED', `Cannot list the folder ${folder}: ${(error as Error).message}.`, {
      fault: 'system',
      cause: error,
    });
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const path = join(folder, entry.name);
    // Symbolic links are not followed: a loop or a link out of the tree must not be walked.
    if (entry.isDirectory()) await walk(path, files);
    else if (entry.isFile() && (entry.name.endsWith('.jsonl') || entry.name.endsWith('.json'))) files.push(path);
  }
}

/** The session folder a Claude Code subagent file belongs to: `<sessionId>/subagents/…/agent-<id>.jsonl`. */
function claudeParentOf(path: string): string | undefined {
  const parts = path.split(sep);
  const index = parts.lastIndexOf('subagents');
  return index > 0 ? parts[index - 1] : undefined;
}

/** Finds the native transcripts under `path` that `importTranscripts` can read. */
export async function discoverImportSources(path: string): Promise<DiscoveryResult> {
  const root = resolve(path);
  let stat;
  try {
    stat = await fs.stat(root);
  } catch {
    throw new ImportError('IMPORT_PATH_NOT_FOUND', `Nothing to import at ${root}: no such file or folder.`, {
      fault: 'user',
      data: { path: root },
    });
  }
  const files: string[] = [];
  if (stat.isDirectory()) await walk(root, files);
  else files.push(root);
  const single = !stat.isDirectory();

  const skipped: DiscoveryResult['skipped'] = [];
  const claude = new Map<string, ClaudeCodeSource>();
  const claudeSubagents: Array<{ path: string; parent: string | undefined; agentId: string }> = [];
  const metaFiles = new Map<string, string>();
  const gemini = new Map<string, GeminiSource>();
  const geminiSubagents: Array<{ path: string; parent: string }> = [];
  const seeds = new Map<string, SeedLayoutSource>();
  const codex = new Map<string, CodexSource>();
  /** Empty `.jsonl` files by native session id: a subagent file whose parent is one of them says so. */
  const emptyClaude = new Map<string, string>();
  const jsonlStems = new Set(
    files.filter((file) => file.endsWith('.jsonl')).map((file) => file.slice(0, -'.jsonl'.length)),
  );

  for (const file of files) {
    const name = basename(file);
    const seedFile = seedLayoutFileOf(name);
    if (seedFile !== undefined) {
      const key = `${dirname(file)}\u0000${seedFile.sessionId}`;
      let source = seeds.get(key);
      if (source === undefined) {
        source = { source: 'seed-layout', folder: dirname(file), sessionId: seedFile.sessionId, files: {} };
        seeds.set(key, source);
      }
      source.files[seedFile.kind] = file;
      continue;
    }
    if (name === 'chat.json') {
      // Seed 002's old per-feature chat file: the session is named after its feature folder.
      const folder = dirname(file);
      const owner = basename(folder) === '.dagent' ? basename(dirname(folder)) : basename(folder);
      seeds.set(`${folder}\u0000chat.json`, {
        source: 'seed-layout',
        folder,
        sessionId: `chat-${owner}`,
        files: { chat: file },
      });
      continue;
    }
    if (name.endsWith('.meta.json') && name.startsWith('agent-')) {
      metaFiles.set(file.slice(0, -'.meta.json'.length), file);
      continue;
    }
    if (name.endsWith('.json') && jsonlStems.has(file.slice(0, -'.json'.length))) {
      skipped.push({ path: file, reason: 'a legacy Gemini CLI session already converted to the .jsonl beside it' });
      continue;
    }
    const claudeAgent = /^agent-(.+)\.jsonl$/.exec(name);
    if (claudeAgent !== null) {
      const sniffed = await sniff(file);
      if (sniffed.kind !== 'claude-code') {
        skipped.push({ path: file, reason: sniffed.kind === 'empty' ? EMPTY : 'not a Claude Code transcript' });
        continue;
      }
      claudeSubagents.push({ path: file, parent: claudeParentOf(file) ?? sniffed.sessionId, agentId: claudeAgent[1]! });
      continue;
    }
    if (name === 'journal.jsonl' && file.split(sep).includes('subagents')) {
      skipped.push({
        path: file,
        reason: 'a Claude Code workflow journal (its agents are imported with their session)',
      });
      continue;
    }
    if (file.split(sep).includes('subagents') && name.endsWith('.jsonl')) {
      skipped.push({ path: file, reason: 'a Claude Code subagent file of an unknown kind' });
      continue;
    }
    const sniffed = await sniff(file);
    if (sniffed.kind === 'empty') {
      if (name.endsWith('.jsonl')) emptyClaude.set(name.slice(0, -'.jsonl'.length), file);
      if (single)
        throw new ImportError('NOTHING_TO_IMPORT', `${file} is empty (0 bytes); nothing was imported.`, {
          fault: 'user',
          data: { path: file },
        });
      skipped.push({ path: file, reason: EMPTY });
      continue;
    }
    if (sniffed.kind === 'codex') {
      const nativeSessionId = sniffed.sessionId ?? CODEX_ROLLOUT_NAME.exec(name)?.[1] ?? name.replace(/\.jsonl?$/, '');
      codex.set(file, {
        source: 'codex',
        main: file,
        nativeSessionId,
        ...(sniffed.cwd !== undefined ? { cwd: sniffed.cwd } : {}),
      });
      continue;
    }
    if (sniffed.kind === 'claude-code' && name.endsWith('.jsonl')) {
      const nativeSessionId = name.slice(0, -'.jsonl'.length);
      // Keyed by path: two folders may each hold a session file of the same name, and both are sessions.
      claude.set(file, {
        source: 'claude-code',
        main: file,
        nativeSessionId,
        ...(sniffed.firstUuid !== undefined ? { contentId: sniffed.firstUuid } : {}),
        subagents: [],
      });
    } else if (sniffed.kind === 'gemini-cli' || sniffed.kind === 'gemini-checkpoint') {
      const parentFolder = basename(dirname(file));
      const isSubagent =
        name.endsWith('.jsonl') && !name.startsWith('session-') && basename(dirname(dirname(file))) === 'chats';
      if (isSubagent) {
        geminiSubagents.push({ path: file, parent: parentFolder });
      } else {
        const source: GeminiSource = { source: 'gemini-cli', main: file, subagents: [] };
        const tag = /^checkpoint-(.+)\.json$/.exec(name)?.[1];
        if (sniffed.kind === 'gemini-checkpoint')
          source.checkpointTag = `${parentFolder}-${tag ?? name.replace(/\.json$/, '')}`;
        gemini.set(file, source);
      }
    } else if (!single || sniffed.kind !== 'unknown') {
      skipped.push({ path: file, reason: 'not a Claude Code, Gemini CLI, Codex or seed-layout session file' });
    } else {
      throw new ImportError(
        'NOTHING_TO_IMPORT',
        `${file} is not a Claude Code, Gemini CLI, Codex or seed-layout session file; nothing was imported.`,
        { fault: 'user', data: { path: file } },
      );
    }
  }

  // A subagent file given on its own: import the session it belongs to.
  if (single && claudeSubagents.length === 1 && claude.size === 0) {
    const agent = claudeSubagents[0]!;
    const candidates =
      agent.parent === undefined
        ? []
        : [
            join(dirname(dirname(dirname(agent.path))), `${agent.parent}.jsonl`),
            join(dirname(agent.path), `${agent.parent}.jsonl`),
          ];
    for (const candidate of candidates) {
      if (!(await exists(candidate))) continue;
      if ((await fs.stat(candidate)).size === 0)
        throw new ImportError(
          'NOTHING_TO_IMPORT',
          `${agent.path} is a subagent transcript; its parent session's transcript ${candidate} is empty (0 bytes), so there is no session to attach it to. Nothing was imported.`,
          { fault: 'user', data: { path: agent.path, parent: candidate } },
        );
      return discoverImportSources(candidate);
    }
    throw new ImportError(
      'NOTHING_TO_IMPORT',
      `${agent.path} is a subagent transcript; its parent session ${agent.parent ?? '(unknown)'} was not found beside it. Import the project folder that holds the parent session.`,
      { fault: 'user', data: { path: agent.path } },
    );
  }
  if (single && claude.size === 1) {
    // A session file given on its own brings its subagent files along.
    const source = [...claude.values()][0]!;
    const folder = dirname(source.main);
    const extra: string[] = [];
    await walkIfExists(join(folder, source.nativeSessionId, 'subagents'), extra);
    for (const entry of await fs.readdir(folder)) if (/^agent-.+\.jsonl$/.test(entry)) extra.push(join(folder, entry));
    for (const file of extra) {
      const name = basename(file);
      if (name.endsWith('.meta.json')) {
        metaFiles.set(file.slice(0, -'.meta.json'.length), file);
        continue;
      }
      const match = /^agent-(.+)\.jsonl$/.exec(name);
      if (match === null) continue;
      const sniffed = await sniff(file);
      if (sniffed.kind === 'claude-code')
        claudeSubagents.push({ path: file, parent: claudeParentOf(file) ?? sniffed.sessionId, agentId: match[1]! });
    }
  }

  for (const agent of claudeSubagents) {
    const parent = parentOf(agent, claude);
    if (parent === undefined) {
      const empty = agent.parent === undefined ? undefined : emptyClaude.get(agent.parent);
      skipped.push({
        path: agent.path,
        reason:
          empty !== undefined
            ? `a subagent transcript whose parent session's transcript ${empty} is empty (0 bytes)`
            : `a subagent transcript whose parent session ${agent.parent ?? '(unknown)'} is not in ${root}`,
      });
      continue;
    }
    if (parent.subagents.some((existing) => existing.agentId === agent.agentId)) continue;
    const metaPath = metaFiles.get(agent.path.slice(0, -'.jsonl'.length));
    parent.subagents.push(
      metaPath !== undefined
        ? { path: agent.path, agentId: agent.agentId, metaPath }
        : { path: agent.path, agentId: agent.agentId },
    );
  }
  for (const agent of geminiSubagents) {
    const parent = [...gemini.values()].find(
      (source) =>
        basename(source.main).includes(agent.parent.slice(0, 8)) &&
        dirname(source.main) === dirname(dirname(agent.path)),
    );
    if (parent === undefined) {
      skipped.push({
        path: agent.path,
        reason: `a Gemini CLI subagent recording whose parent session ${agent.parent} is not in ${root}`,
      });
      continue;
    }
    parent.subagents.push({ path: agent.path });
  }

  const sources: ImportSourceFiles[] = [...claude.values(), ...gemini.values(), ...codex.values(), ...seeds.values()];
  return { sources, skipped };
}

/**
 * The session a subagent file belongs to: the session file its folder names
 * (`<folder>/<id>.jsonl` for `<folder>/<id>/subagents/…`, or the one beside an old `agent-*.jsonl`),
 * else the only session of that id found.
 */
function parentOf(
  agent: { path: string; parent: string | undefined },
  claude: Map<string, ClaudeCodeSource>,
): ClaudeCodeSource | undefined {
  if (agent.parent === undefined) return undefined;
  const parts = agent.path.split(sep);
  const index = parts.lastIndexOf('subagents');
  const candidates = [
    ...(index > 0 ? [`${parts.slice(0, index).join(sep)}.jsonl`] : []),
    join(dirname(agent.path), `${agent.parent}.jsonl`),
  ];
  for (const candidate of candidates) {
    const source = claude.get(candidate);
    if (source !== undefined && source.nativeSessionId === agent.parent) return source;
  }
  const named = [...claude.values()].filter((source) => source.nativeSessionId === agent.parent);
  return named.length === 1 ? named[0] : undefined;
}

async function exists(path: string): Promise<boolean> {
  try {
    await fs.access(path);
    return true;
  } catch {
    return false;
  }
}

async function walkIfExists(folder: string, files: string[]): Promise<void> {
  if (await exists(folder)) await walk(folder, files);
}
