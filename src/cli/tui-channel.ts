import { randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The file in the data folder holding this project's TUI channel: the draft belongs to it, so a restarted TUI finds its draft again. */
export const CHANNEL_FILE = 'tui-channel';

const CHANNEL_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,199}$/;

/** Whether `channel` may name a channel: 1–200 letters, digits, ".", "_" or "-", not starting with "." or "-". */
export function isValidChannel(channel: string): boolean {
  return CHANNEL_PATTERN.test(channel) && !channel.includes('..');
}

/** What a refused channel name is told. */
export function invalidChannelMessage(channel: string): string {
  return `The channel "${channel}" is not valid: use 1–200 letters, digits, ".", "_" or "-", not starting with "." or "-".`;
}

/**
 * This project's channel, made once and kept in the data folder. The store layer (which prepares
 * the data folder) is loaded only to make it: reading a saved one needs nothing but the file.
 */
export async function stableChannel(dataDir: string): Promise<string> {
  const path = join(dataDir, CHANNEL_FILE);
  try {
    const saved = (await readFile(path, 'utf8')).trim();
    if (isValidChannel(saved)) return saved;
  } catch {
    // Not made yet.
  }
  const channel = `tui-${randomUUID()}`;
  const { prepareDataFolder } = await import('../store/index.js');
  await prepareDataFolder(dataDir);
  await writeFile(path, `${channel}\n`, { mode: 0o600 });
  return channel;
}
