/**
 * Word wrap for styled (SGR) text in one pass. wrap-ansi does the same job but re-measures the
 * row for every character, which made a long answer slow to print; this walks each line once
 * (bench/tui-markdown.bench.ts times printing a long answer). Styles open at a break are closed at
 * the row's end and opened again at the next row's start, so every row stands alone (Ink tokenizes rows one
 * by one, and the live area shows only the last rows).
 */
import stringWidth from 'string-width';

export interface WrapOptions {
  /** Break between words (default), or fill every row and cut anywhere (code, output). */
  words: boolean;
  /** Drop spaces at the start and end of rows (paragraphs), or keep them (code). */
  trim: boolean;
}

const ESCAPE = /\u001b\[[0-9;:]*m/y;

interface Piece {
  /** A character (a code point) or an escape sequence. */
  text: string;
  /** Columns: 0 for an escape. */
  width: number;
  escape: boolean;
}

/** Rows of at most `width` columns; a word longer than a row is cut. */
export function wrapStyled(text: string, width: number, options: WrapOptions): string[] {
  const columns = Math.max(1, width);
  const rows: string[] = [];
  const styles = new StyleState();
  for (const line of text.split('\n')) {
    const start = styles.opening();
    if (start === '' && !line.includes('\u001b') && isNarrow(line) && line.length <= columns) {
      rows.push(options.trim ? line.trim() : line);
      continue;
    }
    wrapLine(pieces(line), columns, options, styles, start, rows);
  }
  return rows;
}

/** Printable ASCII only: one column per character. */
function isNarrow(line: string): boolean {
  return /^[\x20-\x7e]*$/.test(line);
}

function pieces(line: string): Piece[] {
  const out: Piece[] = [];
  for (let index = 0; index < line.length;) {
    if (line.charCodeAt(index) === 0x1b) {
      ESCAPE.lastIndex = index;
      const match = ESCAPE.exec(line);
      if (match) {
        out.push({ text: match[0], width: 0, escape: true });
        index += match[0].length;
        continue;
      }
    }
    const code = line.codePointAt(index)!;
    const character = String.fromCodePoint(code);
    index += character.length;
    // Combining marks and variation selectors join the character before them.
    const width = code < 0x7f ? 1 : stringWidth(character);
    const previous = out[out.length - 1];
    if (width === 0 && previous && !previous.escape) previous.text += character;
    else out.push({ text: character, width, escape: false });
  }
  return out;
}

function wrapLine(
  line: readonly Piece[],
  columns: number,
  options: WrapOptions,
  styles: StyleState,
  start: string,
  rows: string[],
): void {
  let row = start;
  let rowWidth = 0;
  const flush = () => {
    rows.push(row + styles.closing());
    row = styles.opening();
    rowWidth = 0;
  };
  const write = (piece: Piece) => {
    if (piece.escape) {
      row += piece.text;
      styles.apply(piece.text);
      return;
    }
    // A word longer than a row (or any text, without word wrap) is cut where the row ends.
    if (rowWidth + piece.width > columns && rowWidth > 0) flush();
    row += piece.text;
    rowWidth += piece.width;
  };
  if (!options.words) {
    for (const piece of line) write(piece);
    rows.push(row + styles.closing());
    return;
  }
  // Spaces since the last word: written only when a word follows on the same row.
  let spaces = 0;
  for (const word of splitWords(line)) {
    if (word === SPACE) {
      spaces += 1;
      continue;
    }
    const wordWidth = word.reduce((sum, piece) => sum + piece.width, 0);
    // A word longer than a row starts on a new one when that cuts it fewer times (as wrap-ansi does).
    const cutsHere = Math.ceil((wordWidth - (columns - rowWidth - spaces)) / columns);
    const cutsBelow = Math.ceil(wordWidth / columns) - 1;
    if (rowWidth > 0 && rowWidth + spaces + wordWidth > columns && (wordWidth <= columns || cutsBelow < cutsHere))
      flush();
    else if (rowWidth > 0 || !options.trim) {
      if (rowWidth + spaces >= columns) flush();
      else {
        row += ' '.repeat(spaces);
        rowWidth += spaces;
      }
    }
    spaces = 0;
    for (const piece of word) write(piece);
  }
  if (!options.trim && spaces > 0) for (let index = 0; index < spaces; index++) write(SPACE_PIECE);
  rows.push(row + styles.closing());
}

const SPACE_PIECE: Piece = { text: ' ', width: 1, escape: false };
const SPACE: Piece[] = [SPACE_PIECE];

/** Words and single spaces, escapes kept with the word they touch. */
function splitWords(line: readonly Piece[]): Piece[][] {
  const words: Piece[][] = [];
  let word: Piece[] = [];
  for (const piece of line) {
    if (!piece.escape && piece.text === ' ') {
      if (word.length > 0) words.push(word);
      words.push(SPACE);
      word = [];
    } else word.push(piece);
  }
  if (word.length > 0) words.push(word);
  return words;
}

/** The SGR attributes in effect, by kind, so a row can close them and the next open them again. */
class StyleState {
  private readonly active = new Map<string, string>();

  apply(escape: string): void {
    const parameters = escape.slice(2, -1);
    if (parameters === '' || parameters === '0') {
      this.active.clear();
      return;
    }
    const parts = parameters.split(';');
    for (let index = 0; index < parts.length; index++) {
      const code = Number(parts[index]);
      if (code === 38 || code === 48) {
        // Extended colour: 38;5;n or 38;2;r;g;b.
        const length = parts[index + 1] === '5' ? 3 : 5;
        this.active.set(code === 38 ? 'fg' : 'bg', `\u001b[${parts.slice(index, index + length).join(';')}m`);
        index += length - 1;
        continue;
      }
      const kind = KIND_OF_OPEN.get(code);
      if (kind) {
        this.active.set(kind, `\u001b[${code}m`);
        continue;
      }
      for (const closed of KINDS_CLOSED_BY.get(code) ?? []) this.active.delete(closed);
    }
  }

  opening(): string {
    return [...this.active.values()].join('');
  }

  closing(): string {
    return this.active.size === 0 ? '' : '\u001b[0m';
  }
}

const KIND_OF_OPEN = new Map<number, string>([
  [1, 'bold'],
  [2, 'dim'],
  [3, 'italic'],
  [4, 'underline'],
  [7, 'inverse'],
  [8, 'hidden'],
  [9, 'strike'],
  ...[30, 31, 32, 33, 34, 35, 36, 37, 90, 91, 92, 93, 94, 95, 96, 97].map((code): [number, string] => [code, 'fg']),
  ...[40, 41, 42, 43, 44, 45, 46, 47, 100, 101, 102, 103, 104, 105, 106, 107].map((code): [number, string] => [
    code,
    'bg',
  ]),
]);

const KINDS_CLOSED_BY = new Map<number, string[]>([
  [22, ['bold', 'dim']],
  [23, ['italic']],
  [24, ['underline']],
  [27, ['inverse']],
  [28, ['hidden']],
  [29, ['strike']],
  [39, ['fg']],
  [49, ['bg']],
]);
