/** Number, time and text formatting for the terminal UI. Pure. */
import {
  describeInput,
  formatCount,
  formatDuration,
  formatPercent,
  oneLine,
  plural,
  wordCount,
} from '../../conversation/index.js';

/** `$0.23`; a cost with an unpriced turn in it is a lower bound: `$0.23+`. */
export function formatCost(usd: number, unknown = false): string {
  return `$${usd.toFixed(2)}${unknown ? '+' : ''}`;
}

/**
 * Splits text into the rows a terminal of `width` columns shows: word-wrapped like Ink wraps text,
 * a word longer than a row cut hard (one column per code point).
 */
export function wrapRows(text: string, width: number): string[] {
  const columns = Math.max(1, width);
  const rows: string[] = [];
  for (const line of text.split('\n')) {
    let rest = Array.from(line);
    if (rest.length === 0) rows.push('');
    while (rest.length > 0) {
      if (rest.length <= columns) {
        rows.push(rest.join(''));
        break;
      }
      const space = rest.lastIndexOf(' ', columns);
      const cut = space > 0 ? space : columns;
      rows.push(rest.slice(0, cut).join('').trimEnd());
      rest = rest.slice(space > 0 ? cut + 1 : cut);
    }
  }
  return rows;
}

/**
 * The last `maxRows` rows of text at `width` columns, and how many rows were left out above.
 * The block in flight is shown this way so the live area never outgrows the screen: when it does,
 * Ink clears the terminal and redraws the whole history on every frame (the flicker users hate).
 */
export function tailRows(text: string, width: number, maxRows: number): { rows: string[]; hidden: number } {
  const rows = wrapRows(text, width);
  const keep = Math.max(1, maxRows);
  if (rows.length <= keep) return { rows, hidden: 0 };
  return { rows: rows.slice(rows.length - keep), hidden: rows.length - keep };
}

/** A tool result in one short line: its first line, and how many more there are. */
export function shortResult(content: string, max: number): string {
  const lines = content.trim().split('\n');
  const first = oneLine(lines[0] ?? '', max);
  if (lines.length <= 1) return first || '(empty)';
  // JSON answers read better flattened than as their first line (`{`).
  if (/^[[{]$/.test(first)) return oneLine(content, max);
  return `${first} (+${lines.length - 1} lines)`;
}

export { describeInput, formatCount, formatDuration, formatPercent, oneLine, plural, wordCount };
