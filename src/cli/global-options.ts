import { resolve } from 'node:path';
import type { Command } from 'commander';

/*
 * The global options' values, read by every command. Nothing is imported here at run time, on
 * purpose: `parley` reads the data folder before its first frame, which must not wait for the
 * conversation layer that the rest of options.ts loads.
 */

/** The data folder from `--data-dir`, `PARLEY_DATA_DIR`, or `.parley` in the current folder. */
export function resolveDataDir(command: Command): string {
  const global = command.optsWithGlobals<{ dataDir?: string }>();
  return resolve(global.dataDir ?? process.env['PARLEY_DATA_DIR'] ?? '.parley');
}

/** The environment variable naming the PostgreSQL database when `--store` is not given. */
export const DATABASE_URL_VARIABLE = 'PARLEY_DATABASE_URL';

/** The PostgreSQL URL from `--store` or `PARLEY_DATABASE_URL`; undefined: the file store in the data folder. */
export function resolveStoreUrl(command: Command): string | undefined {
  const global = command.optsWithGlobals<{ store?: string }>();
  // An empty `--store ""` is passed on, to be refused; an empty variable counts as unset.
  if (global.store !== undefined) return global.store;
  const fromEnvironment = process.env[DATABASE_URL_VARIABLE];
  return fromEnvironment === undefined || fromEnvironment === '' ? undefined : fromEnvironment;
}
