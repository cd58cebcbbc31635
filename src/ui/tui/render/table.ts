/** A Markdown table drawn with box characters, its columns fitted to the terminal's width. */
import chalk from 'chalk';
import { columns, pad, wrapLines } from './terminal-text.js';

export type CellAlign = 'left' | 'right' | 'center' | null;

export interface TableCells {
  /** Styled header cells. */
  header: string[];
  /** Styled body cells, row by row (rows may be shorter than the header while a table streams in). */
  rows: string[][];
  align: CellAlign[];
}

/** Narrowest a column gets before the table is shown as a list instead. */
const MIN_COLUMN = 3;

const border = chalk.gray;

/**
 * Rows of the table, none wider than `width`. Columns keep their natural width when the table fits;
 * otherwise the widest give up room first and their cells wrap. A table with too many columns for
 * the screen even at `MIN_COLUMN` each is shown as one "header: value" block per row.
 */
export function renderTable(cells: TableCells, width: number): string[] {
  const count = cells.header.length;
  if (count === 0) return [];
  const rows = cells.rows.map((row) => Array.from({ length: count }, (_, index) => row[index] ?? ''));
  // Each column takes its cells plus one space either side and one border; the table one more border.
  const chrome = count * 3 + 1;
  if (width - chrome < count * MIN_COLUMN) return asList(cells.header, rows, width);
  const natural = Array.from({ length: count }, (_, index) =>
    Math.max(1, ...[cells.header[index]!, ...rows.map((row) => row[index]!)].map(widestLine)),
  );
  const widths = fit(natural, width - chrome);
  const out = [line('┌', '┬', '┐', widths)];
  out.push(
    ...rowLines(
      cells.header.map((cell) => chalk.bold(cell)),
      widths,
      cells.align,
    ),
  );
  out.push(line('├', '┼', '┤', widths));
  rows.forEach((row, index) => {
    if (index > 0 && rows.length > 1 && row.some((cell, column) => wrapLines(cell, widths[column]!).length > 1))
      out.push(line('├', '┼', '┤', widths));
    out.push(...rowLines(row, widths, cells.align));
  });
  out.push(line('└', '┴', '┘', widths));
  return out;
}

function widestLine(cell: string): number {
  return Math.max(0, ...cell.split('\n').map(columns));
}

/** Shrinks the widest columns one column at a time until the total fits `room`. */
function fit(natural: readonly number[], room: number): number[] {
  const widths = [...natural];
  let total = widths.reduce((sum, value) => sum + value, 0);
  while (total > room) {
    let widest = 0;
    for (let index = 1; index < widths.length; index++) if (widths[index]! > widths[widest]!) widest = index;
    if (widths[widest]! <= MIN_COLUMN) break;
    widths[widest]! -= 1;
    total -= 1;
  }
  return widths;
}

function line(left: string, middle: string, right: string, widths: readonly number[]): string {
  return border(left + widths.map((width) => '─'.repeat(width + 2)).join(middle) + right);
}

function rowLines(row: readonly string[], widths: readonly number[], align: readonly CellAlign[]): string[] {
  const wrapped = row.map((cell, index) => wrapLines(cell, widths[index]!));
  const height = Math.max(1, ...wrapped.map((lines) => lines.length));
  const out: string[] = [];
  for (let rowLine = 0; rowLine < height; rowLine++) {
    const parts = wrapped.map(
      (lines, index) => ` ${pad(lines[rowLine] ?? '', widths[index]!, align[index] ?? 'left')} `,
    );
    out.push(border('│') + parts.join(border('│')) + border('│'));
  }
  return out;
}

function asList(header: readonly string[], rows: readonly string[][], width: number): string[] {
  const out: string[] = [];
  rows.forEach((row, rowIndex) => {
    if (rowIndex > 0) out.push(border('─'.repeat(Math.min(width, 20))));
    row.forEach((cell, index) => out.push(...wrapLines(`${chalk.bold(`${header[index] ?? ''}:`)} ${cell}`, width)));
  });
  return out;
}
