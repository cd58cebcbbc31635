/**
 * Vitest's global setup: compiles `src/` once per run, file by file, into a temp folder, so the
 * tests that start `parley` as a process start it with plain node.
 *
 * Through tsx, each start spends about 1.2 s more CPU than plain node: its loader hooks resolve and
 * load every module of the command off the main thread. The suite starts the CLI well over a hundred
 * times (chat, fork, import, serve, acp, the TUI in tmux), so on a two-core machine this is minutes.
 * The output is what tsx itself runs (esbuild's transform of each file, with the same tsconfig) and
 * keeps the layout of `src/`: every module keeps its own file, so `import.meta.url` and the packages
 * it resolves (the Claude Code CLI, the Gemini CLI, Codex) are found as from source. `node_modules`,
 * `dist` and `package.json` are linked beside it.
 *
 * The folder's path is passed to the test workers in `PARLEY_TEST_CLI` (the workers are forked after
 * this runs and inherit its environment); `parleyNodeArguments()` (./parley-cli.ts) reads it.
 */
import { copyFile, mkdir, mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { build } from 'esbuild';
import type { TestProject } from 'vitest/node';
import { COMPILED_CLI_VARIABLE } from './parley-cli.js';

const repo = resolve(import.meta.dirname, '..', '..');

async function listFiles(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { withFileTypes: true, recursive: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

const isTypeScript = (file: string) => /\.tsx?$/.test(file) && !file.endsWith('.d.ts');

/** Compiles `src/` into `<out>/src` and links what it resolves beside it; returns `<out>/src/cli/main.js`. */
export async function compileCli(out: string): Promise<string> {
  const source = join(repo, 'src');
  const files = await listFiles(source);
  await build({
    entryPoints: files.filter(isTypeScript),
    outdir: join(out, 'src'),
    outbase: source,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
  });
  // Text beside the code (tool descriptions, the web UI's static files) is read from the module's folder.
  for (const file of files.filter((file) => !isTypeScript(file))) {
    const target = join(out, 'src', relative(source, file));
    await mkdir(dirname(target), { recursive: true });
    await copyFile(file, target);
  }
  await copyFile(join(repo, 'package.json'), join(out, 'package.json'));
  await symlink(join(repo, 'node_modules'), join(out, 'node_modules'), 'dir');
  await symlink(join(repo, 'dist'), join(out, 'dist'), 'dir');
  // The TUI's first-frame modules in one file, as `npm run build` ships them: the TUI tests run
  // what users run, and each start loads one file instead of ~730.
  const { bundleTui } = (await import(join(repo, 'scripts', 'build-tui.mjs'))) as {
    bundleTui: (dist: string) => Promise<void>;
  };
  await bundleTui(join(out, 'src'));
  return join(out, 'src', 'cli', 'main.js');
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const out = await mkdtemp(join(tmpdir(), 'parley-test-cli-'));
  const compile = async () => {
    process.env[COMPILED_CLI_VARIABLE] = await compileCli(out);
  };
  await compile();
  // In watch mode the source may have changed between runs.
  project.onTestsRerun(async () => {
    // rm unlinks the links to node_modules and dist; it does not follow them.
    await rm(out, { recursive: true, force: true });
    await mkdir(out);
    await compile();
  });
  return () => rm(out, { recursive: true, force: true });
}
