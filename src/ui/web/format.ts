/** Number, time and text formatting for the web UI. Pure: every clock reading is a parameter. */
import {
  describeInput,
  formatCount,
  formatDuration,
  formatPercent,
  oneLine,
  plural,
  wordCount,
} from '../../conversation/index.js';

/**
 * `$12.30`; under a dollar four decimals (`$0.0421`), where a turn's cost lives; a lower bound gets
 * a `+`, an estimate from the price table (an imported transcript that recorded no cost) a `~`.
 */
export function formatCost(usd: number, unknown = false, estimated = false): string {
  const digits = usd !== 0 && Math.abs(usd) < 1 ? 4 : 2;
  return `${estimated ? '~' : ''}$${usd.toFixed(digits)}${unknown ? '+' : ''}`;
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
    ? [
        date.getUTCFullYear(),
        date.getUTCMonth() + 1,
        date.getUTCDate(),
        date.getUTCHours(),
        date.getUTCMinutes(),
        date.getUTCSeconds(),
      ]
    : [date.getFullYear(), date.getMonth() + 1, date.getDate(), date.getHours(), date.getMinutes(), date.getSeconds()];
  return `${year}-${pad(month)}-${pad(day)} ${pad(hours)}:${pad(minutes)}:${pad(seconds)}`;
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

export { describeInput, formatCount, formatDuration, formatPercent, oneLine, plural, wordCount };
