import { realpath } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { GeminiCliStorage, defaultConfigDir, encodeCwd, geminiProjectSlug, projectHash } from '../../backends/index.js';
import type { ImportSource } from './session-ids.js';

/** A folder where a native tool keeps a project's sessions. It may not exist yet (the tool never ran there). */
export interface NativeSessionFolder {
  source: Extract<ImportSource, 'claude-code' | 'gemini-cli' | 'codex'>;
  path: string;
  /** The folder holds other projects' sessions too (Codex's): import only those that ran in the project. */
  sharedByProjects?: boolean;
}

/**
 * The folders where Claude Code and the Gemini CLI keep the sessions of a project, named the way
 * those tools name them:
 * - Claude Code: `<CLAUDE_CONFIG_DIR or ~/.claude>/projects/<real path with every non-alphanumeric character as ->`;
 * - Gemini CLI: `<GEMINI_CLI_HOME or HOME>/.gemini/tmp/<slug>/chats`, the slug registered for the
 *   project in `projects.json` (or claimed by a `.project_root` marker); before the CLI has run in
 *   the project, the slug it would claim first (the folder's name); and the older
 *   `tmp/<sha256 of the project root>/chats` as well when it exists;
 * - Codex: `<CODEX_HOME or ~/.codex>/sessions`, one tree for every project (by date), so only the
 *   rollouts whose `session_meta.cwd` is the project (or inside it) are taken from it.
 */
export async function nativeSessionFolders(
  projectRoot: string,
  env: Record<string, string | undefined> = process.env,
): Promise<NativeSessionFolder[]> {
  const root = resolve(projectRoot);
  const real = await realpath(root).catch(() => root);
  const folders: NativeSessionFolder[] = [
    { source: 'claude-code', path: join(defaultConfigDir(env), 'projects', encodeCwd(real)) },
  ];
  const storage = new GeminiCliStorage(env['GEMINI_CLI_HOME'] ?? env['HOME'] ?? homedir());
  const slug = (await storage.findProjectSlug(root)) ?? geminiProjectSlug(basename(root) || 'project');
  folders.push({ source: 'gemini-cli', path: join(storage.geminiDir, 'tmp', slug, 'chats') });
  folders.push({ source: 'gemini-cli', path: join(storage.geminiDir, 'tmp', projectHash(root), 'chats') });
  const codexHome = env['CODEX_HOME'] ?? join(env['HOME'] ?? homedir(), '.codex');
  folders.push({ source: 'codex', path: join(resolve(codexHome), 'sessions'), sharedByProjects: true });
  return folders;
}
