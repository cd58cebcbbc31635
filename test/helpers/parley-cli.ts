import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** Set by the global setup (./compiled-cli.ts) to `main.js` of `src/` compiled for this run. */
export const COMPILED_CLI_VARIABLE = 'PARLEY_TEST_CLI';

const repo = resolve(import.meta.dirname, '..', '..');

/**
 * What node is started with to run `parley` (the CLI's own arguments go after): the CLI compiled
 * for this test run when the global setup made it, else the source through tsx's loader (a bench, or
 * a script run outside Vitest). Either is one process, so a signal sent to it reaches the CLI itself.
 */
export function parleyNodeArguments(): string[] {
  const compiled = process.env[COMPILED_CLI_VARIABLE];
  if (compiled) return [compiled];
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  return ['--import', tsx, join(repo, 'src', 'cli', 'main.ts')];
}
