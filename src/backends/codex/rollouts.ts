import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
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

/**
 * Puts a rollout Parley wrote where Codex looks for the thread: over the thread's own file when
 * Codex has one (a rewrite on the fallback ladder), else under today's folder. Write-temp and
 * rename, so Codex never reads half a file.
 */
export async function writeRollout(
  codexHome: string,
  threadId: string,
  text: string,
  now: Date = new Date(),
): Promise<string> {
  // Codex's state database keeps the path a thread was created at and will not look elsewhere.
  let path = (await findRollout(codexHome, threadId)) ?? (await rememberedRollout(codexHome, threadId));
  if (path) await mkdir(dirname(path), { recursive: true });
  else {
    const iso = now.toISOString();
    const folder = join(codexHome, 'sessions', iso.slice(0, 4), iso.slice(5, 7), iso.slice(8, 10));
    await mkdir(folder, { recursive: true });
    path = join(folder, `rollout-${iso.slice(0, 19).replace(/:/g, '-')}-${threadId}.jsonl`);
  }
  await writeAtomic(path, text);
  await rememberRollout(codexHome, threadId, path);
  return path;
}

/**
 * Keeps the path of a thread's rollout beside Codex's files, once. Codex's state database
 * (`state_5.sqlite`) records the path a thread was created at, and a resume fails ("failed to
 * resolve rollout path") when the file is gone, even if the thread is written again elsewhere: a
 * rollout rewritten on the fallback ladder must go back to that path. Reading the database would
 * need SQLite, so Parley keeps its own note of the path.
 */
export async function rememberRollout(codexHome: string, threadId: string, path: string): Promise<void> {
  const note = notePath(codexHome, threadId);
  if (!note) return;
  try {
    if ((await readFile(note, 'utf8')) === path) return;
  } catch {
    // Not noted yet.
  }
  await mkdir(dirname(note), { recursive: true });
  await writeAtomic(note, path);
}

/** The path noted for a thread by `rememberRollout`, or undefined. */
export async function rememberedRollout(codexHome: string, threadId: string): Promise<string | undefined> {
  const note = notePath(codexHome, threadId);
  if (!note) return undefined;
  try {
    const path = (await readFile(note, 'utf8')).trim();
    return path.startsWith(join(codexHome, 'sessions')) ? path : undefined;
  } catch {
    return undefined;
  }
}

function notePath(codexHome: string, threadId: string): string | undefined {
  // Thread ids are UUIDs; anything else is not made into a file name.
  return /^[0-9A-Za-z-]{1,100}$/.test(threadId) ? join(codexHome, 'parley', 'rollouts', threadId) : undefined;
}

async function writeAtomic(path: string, text: string): Promise<void> {
  const temporary = `${path}.${randomUUID()}.tmp`;
  await writeFile(temporary, text, { mode: 0o600 });
  await rename(temporary, path);
}

/** The text of a thread's rollout, or undefined when Codex no longer has it. */
export async function readRollout(codexHome: string, threadId: string): Promise<string | undefined> {
  const path = await findRollout(codexHome, threadId);
  if (!path) return undefined;
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
}

async function listDescending(folder: string): Promise<string[]> {
  try {
    return (await readdir(folder)).sort().reverse();
  } catch {
    return [];
  }
}
