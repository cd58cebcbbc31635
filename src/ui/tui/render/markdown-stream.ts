/**
 * Markdown that is still arriving. Every block but the last is final, so its rows are rendered once
 * and reused (keyed by its source and the width); only the open tail is rendered again on each
 * chunk, after making it readable as it stands:
 * - a fence that is not closed yet is code up to the end (marked already reads it so); a fence
 *   opener still being typed (a lone "`" or "``") is held back, so no backticks flash up;
 * - table rows before the delimiter row has arrived are held back (a "table…" line stands in), so
 *   pipes never show as text; once the delimiter row is in, the rows so far draw as a table;
 * - emphasis, strikethrough and code spans opened but not closed yet are closed at the end, and a
 *   link whose address is still arriving shows its text, so no raw `**` or `[`…`](` shows.
 */
import chalk from 'chalk';
import { Lexer, type Token } from 'marked';
import { renderBlock, renderBlocks, type MarkdownStyle } from './markdown.js';
import { sanitize } from './terminal-text.js';

/** Rows of finished blocks, by width and source. Bounded: the oldest go first. */
const settled = new Map<string, string[]>();
const SETTLED_LIMIT = 512;

/** The streaming text as styled rows of at most `width` columns. */
export function renderStreamingMarkdown(text: string, width: number, style: MarkdownStyle = {}): string[] {
  const columns = Math.max(8, width);
  const source = sanitize(text).replace(/(^|\n) {0,3}(`{1,2}|~{1,2})$/, '$1');
  const tokens = lexGrowing(source);
  let last = tokens.length - 1;
  while (last >= 0 && (tokens[last]!.type === 'space' || tokens[last]!.type === 'def')) last--;
  const out: string[] = [];
  const add = (lines: readonly string[]) => {
    if (lines.length === 0) return;
    if (out.length > 0) out.push('');
    out.push(...lines);
  };
  for (let index = 0; index < last; index++) add(settledBlock(tokens[index]!, columns));
  if (last >= 0) add(openTail(tokens[last]!, columns));
  return style.base ? out.map(style.base) : out;
}

/**
 * What the last call lexed: the text, and its blocks up to the last two, which later text cannot
 * change (a new list item can still join the list before it, a delimiter row turn the paragraph
 * above into a table). Text that grows from it is lexed from there on, so a delta costs the
 * length of the last blocks, not of the whole answer.
 */
let previous: { source: string; stableLength: number; stable: Token[] } | undefined;

function lexGrowing(source: string): Token[] {
  const reuse = previous !== undefined && source.startsWith(previous.source) ? previous : undefined;
  const offset = reuse?.stableLength ?? 0;
  const tokens = [...(reuse?.stable ?? []), ...Lexer.lex(source.slice(offset), { gfm: true })];
  const blocks = tokens.flatMap((token, index) => (token.type === 'space' || token.type === 'def' ? [] : [index]));
  const keep = blocks.length >= 2 ? blocks[blocks.length - 2]! : 0;
  const stable = tokens.slice(0, keep);
  const stableLength = stable.reduce((sum, token) => sum + token.raw.length, 0);
  // Blocks' sources add up to the text; if marked ever changed that, lex whole texts.
  previous =
    source.slice(0, stableLength) === stable.map((token) => token.raw).join('')
      ? { source, stableLength, stable }
      : undefined;
  return tokens;
}

function settledBlock(token: Token, width: number): string[] {
  if (token.type === 'space' || token.type === 'def') return [];
  const key = `${width}\u0000${token.raw}`;
  const cached = settled.get(key);
  if (cached) return cached;
  const lines = renderBlock(token, width);
  settled.set(key, lines);
  if (settled.size > SETTLED_LIMIT) settled.delete(settled.keys().next().value!);
  return lines;
}

const PENDING_TABLE = chalk.gray('┌ table…');

function openTail(token: Token, width: number): string[] {
  switch (token.type) {
    case 'paragraph': {
      const lines = token.raw.replace(/\n+$/, '').split('\n');
      let keep = lines.length;
      while (keep > 0 && /^\s*\|/.test(lines[keep - 1]!)) keep--;
      const rest = keep > 0 ? renderClosed(lines.slice(0, keep).join('\n'), width) : [];
      return keep < lines.length ? [...rest, PENDING_TABLE] : rest;
    }
    case 'heading':
    case 'list':
    case 'blockquote':
    case 'text':
      return renderClosed(token.raw, width);
    default:
      return renderBlock(token, width);
  }
}

function renderClosed(raw: string, width: number): string[] {
  return renderBlocks(Lexer.lex(closeOpenInline(raw), { gfm: true }), width);
}

/** The text with the inline markup it has opened but not closed yet closed at its end. */
export function closeOpenInline(raw: string): string {
  // A link whose address is still arriving: its text alone, until the address closes.
  let text = raw.replace(/\n+$/, '').replace(/\[([^\]\n]*)\]\([^)\s]*$/, '$1');
  // Markers typed but with nothing after them yet open nothing: drop them until their text arrives.
  text = text.replace(/(^|\s)([*_~]{1,2}|`+)$/, '$1').replace(/\s+$/, '');
  const closers = closersFor(text);
  if (closers === '') return text;
  // A closer half typed (`**bold*`): drop it, and close in full.
  const trimmed = text.replace(/(\S)[*~]+$/, '$1');
  return trimmed === text ? text + closers : trimmed + closersFor(trimmed);
}

function closersFor(text: string): string {
  // Code spans first: markup inside them is text.
  let outside = '';
  let openTicks = '';
  for (let index = 0; index < text.length;) {
    if (text[index] !== '`') {
      outside += text[index];
      index++;
      continue;
    }
    const run = /^`+/.exec(text.slice(index))![0];
    const close = text.indexOf(run, index + run.length);
    if (close === -1) {
      openTicks = run;
      break;
    }
    index = close + run.length;
  }
  // Bullets (`* item`) and rules are not emphasis.
  const marks = outside.replace(/^\s*[*+-]\s/gm, '').replace(/^\s*(\*\s*){3,}$/gm, '');
  let closers = openTicks;
  const strong = (marks.match(/\*\*/g) ?? []).length;
  const single = (marks.replace(/\*\*/g, '').match(/\*/g) ?? []).length;
  const strike = (marks.match(/~~/g) ?? []).length;
  if (single % 2 === 1) closers += '*';
  if (strong % 2 === 1) closers += '**';
  if (strike % 2 === 1) closers += '~~';
  return closers;
}
