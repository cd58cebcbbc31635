import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import * as z from 'zod';
import { WorkspaceError } from '../errors.js';
import { projectFiles } from '../project-files.js';
import { confirmInside } from './grep-confirm.js';
import { findOnPath } from '../sandbox.js';
import type { WorkspacePaths } from '../workspace-paths.js';
import { workspaceTool, type WorkspaceTool, type WorkspaceToolContext } from '../workspace-tool.js';

const DESCRIPTION = `Searches the project's files for a regular expression and returns matching lines as "path:line:text" (ripgrep's format; paths relative to the project folder). .git and what .gitignore excludes are skipped, and binary files. Narrow with path (a folder or file) and glob ("*.ts"). Runs ripgrep when it is installed (Rust regex syntax), else a built-in search (JavaScript regex syntax); plain words and common classes (\\w, \\d, [a-z], alternation) mean the same in both.`;

export const GrepInputSchema = z.strictObject({
  pattern: z.string().min(1).describe('A regular expression.'),
  path: z
    .string()
    .min(1)
    .optional()
    .describe('Folder or file to search, relative to the project folder (default ".").'),
  glob: z.string().min(1).optional().describe('Only files whose path matches this glob ("*.ts", "src/**/*.js").'),
  ignore_case: z.boolean().optional().describe('Match without regard to case.'),
  max_results: z
    .number()
    .int()
    .positive()
    .max(10_000)
    .optional()
    .describe('Most matching lines to return (default 1000).'),
});
export type GrepInput = z.infer<typeof GrepInputSchema>;

const MAX_LINE = 500;

export interface GrepMatches {
  lines: string[];
  /** More lines matched than were returned. */
  truncated: boolean;
  engine: 'rg' | 'node';
}

export function grepTool(context: WorkspaceToolContext, options: { engine?: 'rg' | 'node' } = {}): WorkspaceTool {
  return workspaceTool(
    { name: 'grep', description: DESCRIPTION, schema: GrepInputSchema, permission: 'files-read' },
    async (input, signal) => {
      const result = await grepProject(context.paths, input, {
        maxResults: input.max_results ?? context.limits.entries,
        ...(options.engine ? { engine: options.engine } : {}),
        ...(signal ? { signal } : {}),
      });
      const more = result.truncated
        ? `\n[stopped at ${result.lines.length} matching lines; narrow the search with path or glob]`
        : '';
      return {
        content: result.lines.length === 0 ? `No matches for /${input.pattern}/.` : result.lines.join('\n') + more,
        data: { matches: result.lines.length, truncated: result.truncated, engine: result.engine },
      };
    },
  );
}

/** The search itself, exported for the benchmark: `rg` when on PATH (unless told otherwise), else Node. */
export async function grepProject(
  paths: WorkspacePaths,
  input: GrepInput,
  options: { maxResults: number; engine?: 'rg' | 'node'; signal?: AbortSignal },
): Promise<GrepMatches> {
  const target = await paths.resolveForRead(input.path ?? '.');
  const rg = options.engine === 'node' ? undefined : findOnPath('rg');
  if (options.engine === 'rg' && !rg)
    throw new WorkspaceError('NOT_FOUND', 'ripgrep (rg) is not on PATH.', { fault: 'system' });
  const found = rg
    ? await grepWithRipgrep(rg, paths.root, target.relative, input, options)
    : await grepWithNode(paths, target.absolute, input, options);
  return { ...found, lines: await confirmInside(paths.root, found.lines) };
}

function grepWithRipgrep(
  rg: string,
  root: string,
  target: string,
  input: GrepInput,
  options: { maxResults: number; signal?: AbortSignal },
): Promise<GrepMatches> {
  const args = [
    '--line-number',
    '--no-heading',
    '--with-filename',
    '--color',
    'never',
    '--no-require-git',
    '--hidden',
    '--glob',
    '!.git',
    '--max-columns',
    String(MAX_LINE),
    '--max-columns-preview',
  ];
  if (input.ignore_case) args.push('--ignore-case');
  if (input.glob) args.push('--glob', input.glob);
  args.push('--regexp', input.pattern, '--', target);
  return new Promise((resolve, reject) => {
    const child = spawn(rg, args, {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const lines: string[] = [];
    let truncated = false;
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const reader = createInterface({ input: child.stdout });
    reader.on('line', (line) => {
      if (lines.length >= options.maxResults) {
        truncated = true;
        child.kill();
        return;
      }
      lines.push(line.startsWith('./') ? line.slice(2) : line);
    });
    child.on('error', (error) => reject(error));
    child.on('close', (code) => {
      // A file or folder that vanished or changed during the walk is an I/O error of that path
      // ("<path>: … (os error 2)"), not a failed search, and its path may name something a swapped
      // link showed outside the project: such lines are dropped, not quoted.
      const problems = stderr
        .trim()
        .split('\n')
        .filter((problem) => problem !== '' && !/\(os error \d+\)$/.test(problem));
      if (code === 2 && lines.length === 0 && problems.length > 0) {
        reject(
          new WorkspaceError('INVALID_INPUT', `grep failed: ${problems.slice(0, 6).join('\n')}`, {
            data: { pattern: input.pattern },
          }),
        );
        return;
      }
      resolve({ lines, truncated, engine: 'rg' });
    });
  });
}

async function grepWithNode(
  paths: WorkspacePaths,
  target: string,
  input: GrepInput,
  options: { maxResults: number; signal?: AbortSignal },
): Promise<GrepMatches> {
  let regex: RegExp;
  let anyLine: RegExp;
  try {
    regex = new RegExp(input.pattern, input.ignore_case ? 'i' : '');
    // The whole-file check that skips most files at once needs `^` and `$` to mean line ends.
    anyLine = new RegExp(input.pattern, input.ignore_case ? 'im' : 'm');
  } catch (error) {
    throw new WorkspaceError(
      'INVALID_INPUT',
      `grep: "${input.pattern}" is not a valid regular expression: ${(error as Error).message}`,
      { data: { pattern: input.pattern } },
    );
  }
  const stats = await fs.stat(target).catch(() => undefined);
  if (!stats)
    throw new WorkspaceError('NOT_FOUND', `"${paths.relativeOf(target)}" does not exist.`, {
      data: { path: paths.relativeOf(target) },
    });
  const files = stats.isDirectory()
    ? await projectFiles(paths, {
        base: target,
        patterns: [input.glob ? (input.glob.includes('/') ? input.glob : `**/${input.glob}`) : '**/*'],
        ...(options.signal ? { signal: options.signal } : {}),
      })
    : [paths.relativeOf(target)];
  const lines: string[] = [];
  const perFile = new Array<string[] | undefined>(files.length);
  // Reads run a few at a time (I/O overlaps), results are kept in file order, as rg sorts nothing but a person reads better.
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < files.length && !options.signal?.aborted) {
      const index = next++;
      perFile[index] = await matchFile(paths.root, files[index]!, regex, anyLine);
    }
  };
  await Promise.all(Array.from({ length: Math.min(16, files.length) }, worker));
  let truncated = false;
  for (const found of perFile) {
    if (!found) continue;
    for (const line of found) {
      if (lines.length >= options.maxResults) {
        truncated = true;
        break;
      }
      lines.push(line);
    }
    if (truncated) break;
  }
  return { lines, truncated, engine: 'node' };
}

async function matchFile(
  root: string,
  relative: string,
  regex: RegExp,
  anyLine: RegExp,
): Promise<string[] | undefined> {
  const absolute = path.join(root, relative);
  const link = await fs.lstat(absolute).catch(() => undefined);
  // Symbolic links are not followed (as rg does not): one could lead out of the project.
  if (!link || !link.isFile()) return undefined;
  const buffer = await fs.readFile(absolute).catch(() => undefined);
  if (!buffer || buffer.subarray(0, 8_192).includes(0)) return undefined;
  const text = buffer.toString('utf8');
  if (!anyLine.test(text)) return undefined;
  const found: string[] = [];
  const lines = text.split('\n');
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!.replace(/\r$/, '');
    if (!regex.test(line)) continue;
    found.push(`${relative}:${index + 1}:${line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)} [...]` : line}`);
  }
  return found;
}
