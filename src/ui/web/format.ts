/** Number, time and text formatting for the web UI. Pure: every clock reading is a parameter. */
import { formatDuration, oneLine, plural } from '../../conversation/index.js';

/** `$12.30`; under a dollar four decimals (`$0.0421`), where a turn's cost lives; a lower bound gets a `+`. */
export function formatCost(usd: number, unknown = false): string {
  const digits = usd !== 0 && Math.abs(usd) < 1 ? 4 : 2;
  return `$${usd.toFixed(digits)}${unknown ? '+' : ''}`;
}

/** `1,234` */
export function formatCount(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

/** `950`, `12.3k`, `1.2M`: token counts in a narrow column. */
export function formatCompact(value: number): string {
  const abs = Math.abs(value);
  if (abs < 1_000) return String(Math.round(value));
  if (abs < 1_000_000) return `${trimZero((value / 1_000).toFixed(abs < 10_000 ? 1 : 0))}k`;
  return `${trimZero((value / 1_000_000).toFixed(1))}M`;
}

function trimZero(text: string): string {
  return text.endsWith('.0') ? text.slice(0, -2) : text;
}

/** `34%`; a non-zero share under 1% shows as `<1%` so it never looks empty; unknown is `–`. */
export function formatPercent(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–';
  if (value > 0 && value < 0.5) return '<1%';
  return `${Math.round(value)}%`;
}

/** `just now`, `42s ago`, `5 min ago`, `3 h ago`, `2 d ago`; a time in the future reads as now. */
export function formatAgo(at: number, now: number): string {
  const seconds = Math.floor((now - at) / 1000);
  if (seconds < 5) return 'just now';
  if (seconds < 60) return `${seconds}s ago`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.floor(hours / 24)} d ago`;
}

/** `2026-01-17 12:30:05` in the browser's time zone (or UTC when asked, for tests). */
export function formatTime(at: number | string, options: { utc?: boolean } = {}): string {
  const date = typeof at === 'number' ? new Date(at) : new Date(at);
  if (Number.isNaN(date.getTime())) return String(at);
  const pad = (value: number) => String(value).padStart(2, '0');
  const [year, month, day, hours, minutes, seconds] = options.utc
    ? [date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate(), date.getUTCHours(), date.getUTCMinutes(), date.getUTCSeconds()]
    : [date.getFullYear(), date.getMonth() + 1, date.getDate(), date.getHours(), date.getMinutes(), date.getSeconds()];
  return `${year}-${pad(month)}-${pad(day)} ${pad(hours)}:${pad(minutes)}:${pad(seconds)}`;
}




/** Words in a text, for "thought for N words". */
export function wordCount(text: string): number {
  return text.trim() === '' ? 0 : text.trim().split(/\s+/).length;
}

/** A tool's input as `key: value, …` on one line (the TUI's format). */
export function describeInput(input: unknown, max: number): string {
  if (input === undefined || input === null) return '';
  if (typeof input !== 'object') return oneLine(String(input), max);
  const entries = Object.entries(input as Record<string, unknown>).map(
    ([key, value]) => `${key}: ${typeof value === 'string' ? JSON.stringify(oneLine(value, 60)) : oneLine(JSON.stringify(value) ?? 'null', 60)}`,
  );
  return oneLine(entries.join(', '), max);
}

/** A value as indented JSON for a details pane; text stays text. */
export function prettyJson(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

export { formatDuration, oneLine, plural };
