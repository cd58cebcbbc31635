import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CodexTotals } from './event-mapper.js';

/**
 * Codex keeps each thread as a JSONL "rollout" under
 * `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`. The back end reads it to know
 * whether a thread can be resumed and what the thread's token total was before a turn.
 */

/** The rollout file of a thread, or undefined when Codex no longer has it. */
export async function findRollout(codexHome: string, threadId: string): Promise<string | undefined> {
  const suffix = `-${threadId}.jsonl`;
  const root = join(codexHome, 'sessions');
  // Newest folders first: a resumed thread is usually recent.
  for (const year of await listDescending(root))
    for (const month of await listDescending(join(root, year)))
      for (const day of await listDescending(join(root, year, month))) {
        const folder = join(root, year, month, day);
        const match = (await listDescending(folder)).find(
          (name) => name.startsWith('rollout-') && name.endsWith(suffix),
        );
        if (match) return join(folder, match);
      }
  return undefined;
}

/** The thread's last reported running total (`token_count` events), or undefined. */
export async function readRolloutTotals(path: string): Promise<CodexTotals | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
  const lines = text.split('\n');
  for (let index = lines.length - 1; index >= 0; index -= 1) {
    const line = lines[index]!;
    if (!line.includes('"token_count"')) continue;
    try {
      const record = JSON.parse(line) as {
        payload?: { type?: string; info?: { total_token_usage?: Partial<CodexTotals> } };
      };
      const total = record.payload?.type === 'token_count' ? record.payload.info?.total_token_usage : undefined;
      if (total)
        return {
          input_tokens: total.input_tokens ?? 0,
          cached_input_tokens: total.cached_input_tokens ?? 0,
          output_tokens: total.output_tokens ?? 0,
        };
    } catch {
      // A torn last line (a turn cut by a kill): look further back.
    }
  }
  return undefined;
}

async function listDescending(folder: string): Promise<string[]> {
  try {
    return (await readdir(folder)).sort().reverse();
  } catch {
    return [];
  }
}
