import { promises as fs } from 'node:fs';
import path from 'node:path';
import ignore, { type Ignore } from 'ignore';
import { glob } from 'tinyglobby';
import { filesStillInside } from './confined-folders.js';
import type { WorkspacePaths } from './workspace-paths.js';

/**
 * The project's files as `glob`, `grep` (without rg) and `list_files` see them: `.git/` is never
 * listed, and what the project's `.gitignore` files exclude (the root's and nested ones, with git's
 * rules via the `ignore` package) is left out. Paths are relative to the project folder, sorted.
 */
export async function projectFiles(
  paths: WorkspacePaths,
  options: { base: string; patterns: readonly string[]; signal?: AbortSignal },
): Promise<string[]> {
  const rootRules = await readRules(path.join(paths.root, '.gitignore'));
  const found = await glob([...options.patterns], {
    cwd: options.base,
    dot: true,
    onlyFiles: true,
    followSymbolicLinks: false,
    ignore: ['**/.git/**', ...prunePatterns(rootRules)],
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const relative = found.map((file) => paths.relativeOf(path.join(options.base, file)));
  // Nested .gitignore files apply whatever the pattern: found by a walk of their own unless the
  // pattern lists every file from the root anyway.
  const everything = options.patterns.length === 1 && options.patterns[0] === '**/*' && options.base === paths.root;
  const nested = everything
    ? relative
    : (
        await glob(['**/.gitignore'], {
          cwd: paths.root,
          dot: true,
          onlyFiles: true,
          followSymbolicLinks: false,
          ignore: ['**/.git/**', ...prunePatterns(rootRules)],
        })
      ).map((file) => file.split(path.sep).join('/'));
  const filter = await GitignoreFilter.load(paths, rootRules, nested);
  // A folder swapped for a link to the outside during the walk was walked through: only files that are inside now are kept.
  return filesStillInside(paths.root, relative.filter((file) => !filter.ignores(file)).sort());
}

/** Whether a root-relative path (file or folder) is ignored by the project's `.gitignore` files. */
export class GitignoreFilter {
  private constructor(private readonly byFolder: ReadonlyMap<string, Ignore>) {}

  static async load(
    paths: WorkspacePaths,
    rootRules: string | undefined,
    files: readonly string[],
  ): Promise<GitignoreFilter> {
    const byFolder = new Map<string, Ignore>();
    if (rootRules !== undefined) byFolder.set('', ignore().add(rootRules));
    for (const file of files) {
      if (path.posix.basename(file) !== '.gitignore' || !file.includes('/')) continue;
      const rules = await readRules(path.join(paths.root, file));
      if (rules !== undefined) byFolder.set(path.posix.dirname(file), ignore().add(rules));
    }
    return new GitignoreFilter(byFolder);
  }

  ignores(file: string, isFolder = false): boolean {
    if (file === '.git' || file.startsWith('.git/')) return true;
    for (const [folder, rules] of this.byFolder) {
      if (folder !== '' && !file.startsWith(`${folder}/`)) continue;
      const inner = folder === '' ? file : file.slice(folder.length + 1);
      if (inner !== '' && rules.ignores(isFolder ? `${inner}/` : inner)) return true;
    }
    return false;
  }
}

export async function readRules(file: string): Promise<string | undefined> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * Folder names a root `.gitignore` excludes outright (`node_modules/`, `dist`), as patterns that
 * stop the walk from entering them: only an optimisation, the filter above decides. A file with
 * any `!` negation gets none (a negation can re-include something inside).
 */
function prunePatterns(rules: string | undefined): string[] {
  if (rules === undefined) return [];
  const lines = rules
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  if (lines.some((line) => line.startsWith('!'))) return [];
  return lines
    .map((line) => line.replace(/\/+$/, ''))
    .filter((line) => /^[\w.-]+$/.test(line) && line !== '.' && line !== '..')
    .map((name) => `**/${name}/**`);
}
