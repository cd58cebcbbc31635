import { randomUUID, createHash } from 'node:crypto';
import { open, mkdir, readdir, readFile, realpath, rename, stat, unlink } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import type { RawTranscripts } from '../agent-backend.js';

/**
 * Where Claude Code 2.1.x keeps a session, and how Parley reads and restores it:
 * `<config dir>/projects/<encoded cwd>/<sessionId>.jsonl` for the main transcript and
 * `<config dir>/projects/<encoded cwd>/<sessionId>/subagents/agent-<agentId>.jsonl` per subagent.
 * The config dir is `CLAUDE_CONFIG_DIR`, else `~/.claude`. The encoded cwd is the real path with
 * every character that is not a letter or a digit replaced by `-` (measured: `/tmp/work_dir.x-Ab`
 * → `-tmp-work-dir-x-Ab`).
 */

export function defaultConfigDir(env: Record<string, string | undefined> = process.env): string {
  return env['CLAUDE_CONFIG_DIR'] ?? join(env['HOME'] ?? homedir(), '.claude');
}

export function encodeCwd(cwd: string): string {
  return cwd.replace(/[^a-zA-Z0-9]/g, '-');
}

/** The real path of a folder (the CLI resolves symlinks such as macOS's /tmp), or the path itself when it does not exist. */
export async function resolveCwd(cwd: string): Promise<string> {
  try {
    return await realpath(cwd);
  } catch {
    return cwd;
  }
}

export async function projectDir(configDir: string, cwd: string): Promise<string> {
  return join(configDir, 'projects', encodeCwd(await resolveCwd(cwd)));
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/**
 * The native session id for a Parley session: the Parley id itself when it is a UUID (the CLI
 * requires one), else a name-based UUID (version 5 layout over SHA-1) derived from it, so the
 * same Parley session always maps to the same native session, even after a restart that lost the mapping.
 */
export function nativeIdFor(sessionId: string): string {
  if (isUuid(sessionId)) return sessionId.toLowerCase();
  const hash = createHash('sha1').update(`parley:${sessionId}`).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/**
 * Finds a session's main transcript: under the cwd's project folder first, then in any project
 * folder (the CLI finds a session resumed from another cwd the same way).
 */
export async function findTranscript(
  configDir: string,
  nativeSessionId: string,
  cwd: string,
  options: { searchAllProjects?: boolean } = {},
): Promise<string | undefined> {
  const expected = join(await projectDir(configDir, cwd), `${nativeSessionId}.jsonl`);
  if (await isFile(expected)) return expected;
  if (options.searchAllProjects === false) return undefined;
  let projects: string[];
  try {
    projects = await readdir(join(configDir, 'projects'));
  } catch {
    return undefined;
  }
  for (const project of projects) {
    const candidate = join(configDir, 'projects', project, `${nativeSessionId}.jsonl`);
    if (await isFile(candidate)) return candidate;
  }
  return undefined;
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/** What the CLI will continue counting from when it resumes: the last `cost-state` line of the transcript. */
export interface CostState {
  totalCostUsd: number;
  totalApiDurationMs: number;
}

/**
 * Reads the last `cost-state` record. The CLI restores its running totals (`total_cost_usd`,
 * `duration_api_ms`) from exactly this record on resume, so subtracting it from the next result
 * gives that turn's own numbers, on any machine the transcript was restored to.
 */
export async function readCostState(transcriptPath: string): Promise<CostState | undefined> {
  // The CLI writes a cost-state at the end of every turn, so the file's tail almost always holds
  // the last one; long transcripts (megabytes) are not read whole on every turn.
  let handle;
  try {
    handle = await open(transcriptPath, 'r');
  } catch {
    return undefined;
  }
  try {
    const { size } = await handle.stat();
    for (let window = COST_STATE_TAIL_BYTES; ; window *= 4) {
      const start = Math.max(0, size - window);
      const buffer = Buffer.alloc(size - start);
      await handle.read(buffer, 0, buffer.length, start);
      const text = buffer.toString('utf8');
      // The first line of a tail window may be cut; lastCostState skips a line that does not parse.
      const found = lastCostState(start === 0 ? text : text.slice(text.indexOf('\n') + 1));
      if (found || start === 0) return found;
    }
  } catch {
    return undefined;
  } finally {
    await handle.close();
  }
}

const COST_STATE_TAIL_BYTES = 256 * 1024;

export function lastCostState(transcript: string): CostState | undefined {
  let end = transcript.length;
  while (end > 0) {
    const start = transcript.lastIndexOf('\n', end - 1) + 1;
    const line = transcript.slice(start, end);
    end = start - 1;
    if (!line.includes('"cost-state"')) continue;
    try {
      const record = JSON.parse(line) as { type?: unknown; totalCostUSD?: unknown; totalAPIDuration?: unknown };
      if (record.type !== 'cost-state') continue;
      return {
        totalCostUsd: typeof record.totalCostUSD === 'number' ? record.totalCostUSD : 0,
        totalApiDurationMs: typeof record.totalAPIDuration === 'number' ? record.totalAPIDuration : 0,
      };
    } catch {
      // A torn last line: look further back.
    }
  }
  return undefined;
}

/** Reads a session's transcripts as the CLI wrote them. */
export async function readTranscripts(
  configDir: string,
  nativeSessionId: string,
  cwd: string,
): Promise<RawTranscripts | undefined> {
  const mainPath = await findTranscript(configDir, nativeSessionId, cwd);
  if (!mainPath) return undefined;
  const main = await readFile(mainPath, 'utf8');
  const subagentDir = join(dirname(mainPath), nativeSessionId, 'subagents');
  let names: string[] = [];
  try {
    names = (await readdir(subagentDir)).filter((name) => name.startsWith('agent-') && name.endsWith('.jsonl')).sort();
  } catch {
    names = [];
  }
  const subagents = await Promise.all(
    names.map(async (name) => ({
      id: name.slice('agent-'.length, -'.jsonl'.length),
      rawTranscript: await readFile(join(subagentDir, name), 'utf8'),
    })),
  );
  return subagents.length > 0 ? { main, subagents } : { main };
}

/**
 * Writes saved transcripts where the CLI will look for them. A local copy that already holds the
 * saved one and more (turns run here since it was saved) is kept; a local copy that differs is
 * moved aside (`.replaced-<time>`), never deleted, before the saved one is written.
 */
export async function restoreTranscripts(
  configDir: string,
  nativeSessionId: string,
  cwd: string,
  transcripts: RawTranscripts,
): Promise<{ path: string; kept: boolean }> {
  const dir = await projectDir(configDir, cwd);
  const mainPath = join(dir, `${nativeSessionId}.jsonl`);
  const kept = await restoreFile(mainPath, transcripts.main);
  for (const subagent of transcripts.subagents ?? []) {
    if (!/^[\w-]+$/.test(subagent.id)) throw new Error(`Subagent id "${subagent.id}" is not a safe file name.`);
    await restoreFile(join(dir, nativeSessionId, 'subagents', `agent-${subagent.id}.jsonl`), subagent.rawTranscript);
  }
  return { path: mainPath, kept };
}

async function restoreFile(path: string, content: string): Promise<boolean> {
  let existing: string | undefined;
  try {
    existing = await readFile(path, 'utf8');
  } catch {
    existing = undefined;
  }
  if (existing !== undefined && existing.startsWith(content)) return true;
  await mkdir(dirname(path), { recursive: true });
  if (existing !== undefined) await rename(path, `${path}.replaced-${Date.now()}`);
  await writeAtomically(path, content);
  return false;
}

/** write-temp, fsync, rename: a crash leaves the old file or the new one, never half of one. */
async function writeAtomically(path: string, content: string): Promise<void> {
  const temporary = `${path}.${randomUUID()}.tmp`;
  const handle = await open(temporary, 'w', 0o600);
  try {
    await handle.writeFile(content, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temporary, path);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
}
