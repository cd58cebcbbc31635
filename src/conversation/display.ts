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
  const flat = flatStart(text, max + 1);
  if (max <= 1) return flat.slice(0, Math.max(0, max));
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/**
 * The first `limit` characters of the text with its white space runs made one space and its ends
 * trimmed (`text.replace(/\s+/g, ' ').trim()`), reading only as far as they need: a tool's output of
 * megabytes made flattening the whole text most of `parley show`'s rendering time, and flattening
 * growing prefixes with the regular expression was still a tenth of a large show's CPU time.
 */
function flatStart(text: string, limit: number): string {
  let flat = '';
  let index = 0;
  while (flat.length < limit) {
    let start = index;
    while (start < text.length && isWhiteSpace(text.charCodeAt(start))) start++;
    if (start >= text.length) break;
    const separator = flat.length > 0 ? ' ' : '';
    const room = limit - flat.length - separator.length;
    let end = start;
    while (end < text.length && end - start < room && !isWhiteSpace(text.charCodeAt(end))) end++;
    flat += separator + text.slice(start, end);
    index = end;
  }
  return flat;
}

/** What `\s` matches (and `trim` removes): ECMAScript's WhiteSpace and LineTerminator code units. */
function isWhiteSpace(code: number): boolean {
  if (code <= 32) return code === 32 || (code >= 9 && code <= 13);
  if (code < 0xa0) return false;
  return (
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

/**
 * `1,234`. Grouped here rather than by `toLocaleString`: a page's first Intl call loads the locale
 * data, and the web UI's first use was in the frame that opens a session.
 */
export function formatCount(value: number): string {
  const rounded = Math.round(value);
  if (!Number.isSafeInteger(rounded)) return rounded.toLocaleString('en-US');
  return String(rounded).replace(/\B(?=(\d{3})+$)/g, ',');
}

/** `34%`; a non-zero share under 1% shows as `<1%` so it never looks empty; unknown is `–`. */
export function formatPercent(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–';
  if (value > 0 && value < 0.5) return '<1%';
  return `${Math.round(value)}%`;
}

/** Words in a text, for "thought for N words". */
export function wordCount(text: string): number {
  return text.trim() === '' ? 0 : text.trim().split(/\s+/).length;
}

/** A tool's input as `key: value, …` on one line. */
export function describeInput(input: unknown, max: number): string {
  if (input === undefined || input === null) return '';
  if (typeof input !== 'object') return oneLine(String(input), max);
  const entries = Object.entries(input as Record<string, unknown>).map(
    ([key, value]) =>
      `${key}: ${typeof value === 'string' ? JSON.stringify(oneLine(value, 60)) : oneLine(JSON.stringify(value) ?? 'null', 60)}`,
  );
  return oneLine(entries.join(', '), max);
}

/** Longest task title `taskTitleFromMessage` derives (a slug of it stays readable in a terminal). */
export const TASK_TITLE_MAX = 60;

/**
 * A short task title for a conversation that starts with `message` (the UIs' "first message"):
 * its first non-empty line, white space collapsed, cut at a word boundary to at most `max`
 * characters (a single longer word is cut), without trailing punctuation. A message with no
 * words at all gets `New task`.
 */
export function taskTitleFromMessage(message: string, max = TASK_TITLE_MAX): string {
  const line = message.split(/\r?\n/).find((candidate) => candidate.trim() !== '') ?? '';
  let title = line.replace(/\s+/g, ' ').trim();
  if (title.length > max) {
    const cut = title.slice(0, max + 1);
    const boundary = cut.lastIndexOf(' ');
    title = boundary > 0 ? cut.slice(0, boundary) : title.slice(0, max);
  }
  title = title.replace(/[\s.,;:!?…-]+$/u, '');
  return /[\p{L}\p{N}]/u.test(title) ? title : 'New task';
}

/**
 * The one line a UI shows when a first message drafted the project's default role, so the terminal
 * and the browser say the same; `undraft` is how that UI undrafts (`/undraft`, `Undraft`).
 */
export function firstDraftNotice(options: {
  role: string;
  taskSlug: string;
  createdTask: boolean;
  undraft: string;
}): string {
  const what = options.createdTask
    ? `Created task ${options.taskSlug} and drafted ${options.role} on it`
    : `Drafted ${options.role} on task ${options.taskSlug}`;
  return `${what} (the project's default role; ${options.undraft} to change).`;
}
