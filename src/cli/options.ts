import { resolve } from 'node:path';
import type { Command } from 'commander';

/** The data folder from `--data-dir`, `PARLEY_DATA_DIR`, or `.parley` in the current folder. */
export function resolveDataDir(command: Command): string {
  const global = command.optsWithGlobals<{ dataDir?: string }>();
  return resolve(global.dataDir ?? process.env['PARLEY_DATA_DIR'] ?? '.parley');
}
