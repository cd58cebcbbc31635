/**
 * How the terminal shows the tools people read differently from JSON (`fileEditOf`, `commandOf`
 * in conversation/tool-views): a file edit as a coloured diff with line numbers, a shell command as
 * a terminal block with its output. Long ones are folded to `maxRows`; details on (Ctrl+O) shows
 * them in full.
 */
import chalk from 'chalk';
import type { CommandView, FileEditView } from '../../../conversation/index.js';
import { hardWrapLines, sanitize } from './terminal-text.js';

export interface FoldedRows {
  rows: string[];
  /** Rows left out by the fold. */
  hidden: number;
}

/** `Updated src/app.ts (+3 −1)` / `Wrote notes.md (12 lines)`. */
export function fileEditSummary(view: FileEditView): string {
  const path = view.path || 'a file';
  if (view.kind === 'write' && view.removed === 0)
    return `Wrote ${path} (${view.added} ${view.added === 1 ? 'line' : 'lines'})`;
  return `Updated ${path} (${chalk.green(`+${view.added}`)} ${chalk.red(`−${view.removed}`)})`;
}

/**
 * The edit's hunks as rows no wider than `width`: each line with its number (the old file's for a
 * removed line, the new file's otherwise), `+` green, `-` red, context grey, `⋯` between hunks.
 */
export function diffRows(view: FileEditView, width: number, maxRows = Number.POSITIVE_INFINITY): FoldedRows {
  const highest = Math.max(
    1,
    ...view.hunks.map((hunk) => Math.max(hunk.oldStart + hunk.oldLines, hunk.newStart + hunk.newLines)),
  );
  const numberWidth = String(highest).length;
  const gutter = numberWidth + 3;
  const rows: string[] = [];
  view.hunks.forEach((hunk, index) => {
    if (index > 0) rows.push(chalk.gray(`${' '.repeat(numberWidth)} ⋯`));
    let oldLine = hunk.oldStart;
    let newLine = hunk.newStart;
    for (const line of hunk.lines) {
      const number = line.kind === '-' ? oldLine : newLine;
      if (line.kind !== '+') oldLine++;
      if (line.kind !== '-') newLine++;
      const colour = line.kind === '+' ? chalk.green : line.kind === '-' ? chalk.red : chalk.gray;
      const pieces = hardWrapLines(sanitize(line.text), Math.max(4, width - gutter));
      pieces.forEach((piece, pieceIndex) => {
        const head = pieceIndex === 0 ? `${String(number).padStart(numberWidth)} ${line.kind} ` : ' '.repeat(gutter);
        rows.push(colour(`${head}${piece}`));
      });
    }
  });
  return fold(rows, maxRows, 'head');
}

/**
 * A shell command as a terminal block: `$ command` then its output (the last rows when folded:
 * that is where a build or a test run says how it went), then a red `exit N` when it failed.
 */
export function commandRows(view: CommandView, width: number, maxRows = Number.POSITIVE_INFINITY): FoldedRows {
  const inner = Math.max(4, width - 2);
  const command = hardWrapLines(sanitize(view.command), Math.max(4, inner - 2)).map(
    (line, index) => `${chalk.gray(index === 0 ? '$ ' : '  ')}${chalk.bold(line)}`,
  );
  const outputText = sanitize(view.output ?? '').replace(/\n+$/, '');
  const output =
    outputText === '' ? [] : hardWrapLines(outputText, inner).map((line) => (view.isError ? chalk.red(line) : line));
  const failed = (view.exitCode !== undefined && view.exitCode !== 0) || view.isError === true;
  const exit = failed ? [chalk.red(`exit ${view.exitCode ?? 'error'}`)] : [];
  const folded = fold(output, Math.max(1, maxRows - command.length - exit.length), 'tail');
  const bar = chalk.gray('│ ');
  return { rows: [...command, ...folded.rows.map((row) => `${bar}${row}`), ...exit], hidden: folded.hidden };
}

function fold(rows: string[], maxRows: number, keep: 'head' | 'tail'): FoldedRows {
  if (rows.length <= maxRows) return { rows, hidden: 0 };
  const shown = Math.max(1, maxRows - 1);
  const hidden = rows.length - shown;
  const note = chalk.gray(
    `… ${hidden} more ${hidden === 1 ? 'line' : 'lines'}${keep === 'tail' ? ' above' : ''} · Ctrl+O shows them in full`,
  );
  return keep === 'head'
    ? { rows: [...rows.slice(0, shown), note], hidden }
    : { rows: [note, ...rows.slice(rows.length - shown)], hidden };
}
