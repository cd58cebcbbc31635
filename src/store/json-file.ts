import { promises as fs } from 'node:fs';
import type { z } from 'zod';
import { describeIssues } from '../conversation/index.js';
import { StoreError } from './errors.js';
import { FORMAT_VERSION } from './record-format.js';
import { isErrno } from './atomic-file.js';

/** Files are human-readable: two-space JSON and a final newline. */
export function formatJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/**
 * Reads and validates a versioned JSON file; undefined when it does not exist. `advice` tells the
 * user what to do when the file is damaged (it is appended to the CORRUPT_FILE message).
 */
export async function readJsonFile<Schema extends z.ZodType>(
  path: string,
  schema: Schema,
  advice: string,
): Promise<z.infer<Schema> | undefined> {
  let text: string;
  try {
    text = await fs.readFile(path, 'utf8');
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return undefined;
    throw corruptFile(
      path,
      `it cannot be read (${error instanceof Error ? error.message : String(error)})`,
      advice,
      error,
    );
  }
  return parseJsonDocument(text, path, schema, advice);
}

export function parseJsonDocument<Schema extends z.ZodType>(
  text: string,
  path: string,
  schema: Schema,
  advice: string,
): z.infer<Schema> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw corruptFile(
      path,
      `it is not valid JSON (${error instanceof Error ? error.message : String(error)})`,
      advice,
      error,
    );
  }
  checkFormatVersion(value, path);
  const result = schema.safeParse(value);
  if (!result.success)
    throw corruptFile(path, `it does not have the expected shape (${describeIssues(result.error.issues)})`, advice);
  return result.data;
}

/** A file written by a newer Parley is refused, never guessed at. */
export function checkFormatVersion(value: unknown, path: string): void {
  const version =
    typeof value === 'object' && value !== null ? (value as { formatVersion?: unknown }).formatVersion : undefined;
  if (typeof version === 'number' && version > FORMAT_VERSION) {
    throw new StoreError(
      'UNSUPPORTED_FORMAT_VERSION',
      `${path} has format version ${version}, but this Parley reads format version ${FORMAT_VERSION} at most. ` +
        'It was written by a newer Parley: upgrade Parley to open it, and do not edit the file by hand.',
      { fault: 'user', data: { file: path, formatVersion: version, supported: FORMAT_VERSION } },
    );
  }
}

export function corruptFile(path: string, problem: string, advice: string, cause?: unknown): StoreError {
  return new StoreError('CORRUPT_FILE', `${path} is damaged: ${problem}. ${advice}`, {
    fault: 'system',
    data: { file: path },
    cause,
  });
}
