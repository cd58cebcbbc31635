import { promises as fs } from 'node:fs';
import { basename } from 'node:path';
import type { TranscriptInfo, TranscriptWarning } from '../../backends/index.js';
import type { SessionMetrics } from '../../conversation/index.js';
import type { SessionStats } from '../../store/index.js';
import type { ImportSource } from './session-ids.js';

// What an import says about a session besides its events: its title, its stats, and the JSON files
// beside a transcript (a subagent's `.meta.json`).

export function titleOf(info: TranscriptInfo, source: ImportSource, nativeSessionId: string): string {
  const candidates = [info.customTitle, info.firstUserMessage, info.generatedTitle];
  for (const candidate of candidates) {
    const line = candidate === undefined ? '' : firstLine(candidate);
    if (line.length > 0) return line;
  }
  return `Imported ${source} session ${nativeSessionId.slice(0, 8)}`;
}

export function firstLine(text: string, max = 80): string {
  const trimmed = text.trim();
  const newline = trimmed.indexOf('\n');
  const line = (newline === -1 ? trimmed : trimmed.slice(0, newline)).trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

export function statsOf(info: TranscriptInfo, metrics: SessionMetrics): SessionStats {
  const last = info.compactions.at(-1);
  return {
    totalMessages: Math.max(0, info.messageCount),
    // The conversation's size as the model last saw it: the last request plus its answer.
    totalTokens: Math.round(metrics.lastInputTokens + metrics.lastOutputTokens),
    totalCompactions: info.compactions.length,
    ...(last?.at !== undefined ? { lastCompactionAt: new Date(last.at).toISOString() } : {}),
  };
}

export async function readJsonObject(
  path: string,
  warnings: TranscriptWarning[],
): Promise<Record<string, unknown> | undefined> {
  try {
    const value = JSON.parse(await fs.readFile(path, 'utf8')) as unknown;
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // reported below
  }
  warnings.push({
    code: 'INVALID_FILE',
    file: basename(path),
    message: `${basename(path)} is not a JSON object; the subagent is imported without it`,
  });
  return undefined;
}
