/**
 * Text helpers every client shows a conversation with (the TUI, the web UI, `parley show`), so the
 * same duration or cut line reads the same everywhere. Pure.
 */

/** `0s`, `12s`, `3m 04s`, `1h 02m`. */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m ${String(seconds % 60).padStart(2, '0')}s`;
  return `${Math.floor(minutes / 60)}h ${String(minutes % 60).padStart(2, '0')}m`;
}

/** `1 turn`, `2 turns`. */
export function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}

/** The text on one line, cut to `max` characters with an ellipsis. */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (max <= 1) return flat.slice(0, Math.max(0, max));
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
