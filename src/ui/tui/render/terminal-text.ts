/**
 * Text as a terminal shows it: made safe to print, measured in columns, wrapped to a width. The
 * renderers build styled (ANSI) lines that already fit the screen, so Ink never wraps them again
 * and the live area can count its rows exactly.
 */
import stringWidth from 'string-width';
import { wrapStyled } from './wrap-styled.js';

/**
 * C0 controls (but tab and newline), DEL and C1 controls. Text from a model or a transcript must
 * never reach the terminal with them: ESC, BEL and 0x9B (CSI) would let it move the cursor, change
 * the window title or hide text.
 */
const CONTROL_CHARACTERS = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/g;

/** Text safe to print: control characters removed, tabs as spaces (a tab's width depends on the column). */
export function sanitize(text: string): string {
  return text.replace(/\r\n?/g, '\n').replace(CONTROL_CHARACTERS, '').replace(/\t/g, '    ');
}

/** Columns a (possibly styled) string takes: escapes take none, wide characters two. */
export function columns(text: string): number {
  return stringWidth(text);
}

/** Word-wrapped rows of at most `width` columns; a word longer than a row is cut. Styles carry over the breaks. */
export function wrapLines(text: string, width: number): string[] {
  return wrapStyled(text, width, { words: true, trim: true });
}

/** Rows of at most `width` columns, cut where they overflow with leading space kept (code, output, diffs). */
export function hardWrapLines(text: string, width: number): string[] {
  return wrapStyled(text, width, { words: false, trim: false });
}

/** Pads a styled string with spaces to `width` columns, on the side `align` says. */
export function pad(text: string, width: number, align: 'left' | 'right' | 'center' = 'left'): string {
  const room = Math.max(0, width - columns(text));
  if (align === 'right') return ' '.repeat(room) + text;
  if (align === 'center') return ' '.repeat(Math.floor(room / 2)) + text + ' '.repeat(Math.ceil(room / 2));
  return text + ' '.repeat(room);
}

/** `first` before the first row, `rest` before the others (a bullet and its hanging indent). */
export function prefixLines(
  lines: readonly string[],
  first: string,
  rest: string = ' '.repeat(columns(first)),
): string[] {
  return lines.map((line, index) => (index === 0 ? first : rest) + line);
}

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: '\u00a0',
  copy: '©',
  reg: '®',
  hellip: '…',
  mdash: '—',
  ndash: '–',
  rarr: '→',
  larr: '←',
  times: '×',
};

/** Markdown text keeps its character references (`&amp;`, `&#39;`): the terminal shows the characters. */
export function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(/&(#x[0-9a-f]{1,6}|#\d{1,7}|[a-z]{2,8});/gi, (whole, name: string) => {
    if (name[0] === '#') {
      const code =
        name[1] === 'x' || name[1] === 'X' ? Number.parseInt(name.slice(2), 16) : Number.parseInt(name.slice(1), 10);
      return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff)
        ? sanitize(String.fromCodePoint(code))
        : whole;
    }
    return NAMED_ENTITIES[name.toLowerCase()] ?? whole;
  });
}
