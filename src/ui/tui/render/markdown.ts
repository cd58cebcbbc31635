/**
 * Markdown for the terminal: `marked`'s lexer (CommonMark plus GitHub tables, task lists and
 * strikethrough) read into styled lines that fit a width. Headings, emphasis, lists, quotes, links,
 * tables drawn with box characters and code highlighted by language; raw HTML is shown as text.
 *
 * Why not `marked-terminal`: with marked 18 it leaves `**bold**` raw inside list items, prints a
 * task's checkbox twice and draws tables wider than the screen (Ink then wraps them into garbage).
 * Rendering marked's tokens here gives lines that already fit, so Ink never re-wraps them, and the
 * live area can cut a streaming answer to the rows it has.
 */
import chalk from 'chalk';
import { Lexer, type Token, type Tokens } from 'marked';
import { highlightCode } from './code.js';
import { renderTable, type CellAlign } from './table.js';
import { columns, decodeEntities, hardWrapLines, prefixLines, sanitize, wrapLines } from './terminal-text.js';

export interface MarkdownStyle {
  /** Applied to every row (thinking is grey and italic); inner styles stay visible inside it. */
  base?: (line: string) => string;
}

/** Tokens of a Markdown text (GitHub-flavoured). */
export function lexMarkdown(text: string): Token[] {
  return Lexer.lex(sanitize(text), { gfm: true });
}

/** The text as styled terminal rows, none wider than `width` columns. */
export function renderMarkdown(text: string, width: number, style: MarkdownStyle = {}): string[] {
  const lines = renderBlocks(lexMarkdown(text), Math.max(8, width));
  return style.base ? lines.map(style.base) : lines;
}

/** Blocks separated by one blank row. */
export function renderBlocks(tokens: readonly Token[], width: number): string[] {
  const out: string[] = [];
  for (const token of tokens) {
    const lines = renderBlock(token, width);
    if (lines.length === 0) continue;
    if (out.length > 0) out.push('');
    out.push(...lines);
  }
  return out;
}

/** One block-level token as rows of at most `width` columns (none for spacing and link definitions). */
export function renderBlock(token: Token, width: number): string[] {
  switch (token.type) {
    case 'space':
    case 'def':
      return [];
    case 'heading': {
      const heading = token as Tokens.Heading;
      const text = renderInline(heading.tokens);
      const styled =
        heading.depth === 1
          ? chalk.bold.underline(text)
          : heading.depth === 2
            ? chalk.bold(text)
            : chalk.bold.italic(text);
      return wrapLines(styled, width);
    }
    case 'paragraph':
      return wrapLines(renderInline((token as Tokens.Paragraph).tokens), width);
    case 'text': {
      const text = token as Tokens.Text;
      return wrapLines(text.tokens ? renderInline(text.tokens) : decodeEntities(text.text), width);
    }
    case 'code':
      return renderCode(token as Tokens.Code, width);
    case 'blockquote': {
      const inner = renderBlocks((token as Tokens.Blockquote).tokens, Math.max(4, width - 2));
      return inner.map((line) => `${chalk.gray('│')} ${chalk.italic(line)}`);
    }
    case 'list':
      return renderList(token as Tokens.List, width);
    case 'table':
      return renderMarkdownTable(token as Tokens.Table, width);
    case 'hr':
      return [chalk.gray('─'.repeat(Math.max(1, width)))];
    case 'html':
      // Shown as typed, never interpreted: a terminal has no HTML, and this keeps it inert.
      return hardWrapLines(chalk.gray((token as Tokens.HTML).text.replace(/\n+$/, '')), width);
    default:
      return 'tokens' in token && Array.isArray(token.tokens)
        ? wrapLines(renderInline(token.tokens as Token[]), width)
        : wrapLines(decodeEntities(token.raw), width);
  }
}

/** Inline tokens as one styled string (line breaks kept). */
export function renderInline(tokens: readonly Token[] | undefined): string {
  if (!tokens) return '';
  let out = '';
  for (const token of tokens) out += inline(token);
  return out;
}

function inline(token: Token): string {
  switch (token.type) {
    case 'text': {
      const text = token as Tokens.Text;
      return text.tokens ? renderInline(text.tokens) : decodeEntities(text.text);
    }
    case 'escape':
      return (token as Tokens.Escape).text;
    case 'strong':
      return chalk.bold(renderInline((token as Tokens.Strong).tokens));
    case 'em':
      return chalk.italic(renderInline((token as Tokens.Em).tokens));
    case 'del':
      return chalk.strikethrough(renderInline((token as Tokens.Del).tokens));
    case 'codespan':
      return chalk.cyan(decodeEntities((token as Tokens.Codespan).text));
    case 'br':
      return '\n';
    case 'link': {
      const link = token as Tokens.Link;
      const text = renderInline(link.tokens);
      const plainText = link.text.trim();
      // The address is shown beside its text (a terminal cannot hide it behind a click) unless it is the text.
      const same = plainText === link.href || `mailto:${plainText}` === link.href;
      return same ? chalk.blue.underline(text) : `${chalk.blue.underline(text)} ${chalk.gray(`(${link.href})`)}`;
    }
    case 'image': {
      const image = token as Tokens.Image;
      return chalk.gray(`[image: ${image.text || 'untitled'}] (${image.href})`);
    }
    case 'checkbox':
      return '';
    case 'html':
      return chalk.gray((token as Tokens.HTML).text);
    default:
      return 'tokens' in token && Array.isArray(token.tokens)
        ? renderInline(token.tokens as Token[])
        : decodeEntities(token.raw);
  }
}

function renderCode(code: Tokens.Code, width: number): string[] {
  const body = code.text.replace(/\n+$/, '');
  const label = code.lang ? [chalk.gray(code.lang.trim())] : [];
  if (body === '') return label.length > 0 ? label : [''];
  const lines = hardWrapLines(highlightCode(body, code.lang), Math.max(4, width - 2));
  return [...label, ...lines.map((line) => `  ${line}`)];
}

const BULLETS = ['•', '◦', '▪'];

function renderList(list: Tokens.List, width: number, depth = 0): string[] {
  const out: string[] = [];
  const start = typeof list.start === 'number' ? list.start : 1;
  const numberWidth = list.ordered ? String(start + list.items.length - 1).length + 1 : 0;
  list.items.forEach((item, index) => {
    const box = item.checked ? chalk.green('☑') : '☐';
    // A task's box stands in for its bullet; a numbered task keeps its number.
    let marker = list.ordered
      ? `${String(start + index)}.`.padStart(numberWidth)
      : item.task
        ? box
        : BULLETS[depth % BULLETS.length]!;
    if (item.task && list.ordered) marker += ` ${box}`;
    const indent = columns(marker) + 1;
    const lines = renderItem(item, Math.max(4, width - indent), depth);
    if (index > 0 && list.loose) out.push('');
    out.push(...prefixLines(lines.length > 0 ? lines : [''], `${marker} `, ' '.repeat(indent)));
  });
  return out;
}

function renderItem(item: Tokens.ListItem, width: number, depth: number): string[] {
  const out: string[] = [];
  for (const token of item.tokens) {
    if (token.type === 'checkbox' || token.type === 'space') continue;
    const lines =
      token.type === 'list' ? renderList(token as Tokens.List, width, depth + 1) : renderBlock(token, width);
    if (lines.length === 0) continue;
    if (out.length > 0 && item.loose && token.type !== 'list') out.push('');
    out.push(...lines);
  }
  return out;
}

function renderMarkdownTable(table: Tokens.Table, width: number): string[] {
  return renderTable(
    {
      header: table.header.map((cell) => renderInline(cell.tokens)),
      rows: table.rows.map((row) => row.map((cell) => renderInline(cell.tokens))),
      align: table.align as CellAlign[],
    },
    width,
  );
}

/** One line of text with its inline Markdown styled (a summary, a short result). */
export function renderInlineMarkdown(text: string): string {
  return renderInline(Lexer.lexInline(sanitize(text), { gfm: true }));
}
