import { parseTimestamp } from './iso-time.js';

/** Small readers for untrusted JSON: every field of a native record is optional and may have any type. */

export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export function numberOf(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

export function objectOf(value: unknown): JsonObject | undefined {
  return isObject(value) ? value : undefined;
}

/** Milliseconds since the epoch from an ISO string, or undefined when absent or unreadable (`Date.parse`'s answer, read fast for the usual shape). */
export function timeOf(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const ms = parseTimestamp(value);
  return Number.isFinite(ms) && ms >= 0 ? Math.floor(ms) : undefined;
}

/** Parses one line; undefined when it is not JSON. */
export function parseJson(text: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return undefined;
  }
}

/** The first line of a text, trimmed and cut to `max` characters (for titles and warnings). */
export function firstLine(text: string, max = 80): string {
  const trimmed = text.trim();
  const newline = trimmed.indexOf('\n');
  const line = (newline === -1 ? trimmed : trimmed.slice(0, newline)).trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

export function isBlank(text: string): boolean {
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code !== 32 && code !== 9 && code !== 13 && code !== 10) return false;
  }
  return true;
}
