import type { Token } from 'marked';
import { lexMarkdown, type MarkdownOptions } from './render.js';

/**
 * A streaming text as finished top-level Markdown blocks and the open tail, so a page re-renders
 * only the tail on each delta. A block is finished once another block starts after it: nothing a
 * later line adds can change it then (a fence, a table, a list or a paragraph still growing is
 * always the last block). The one thing this gives up is a reference-style link whose definition
 * comes in a later block: it shows as text.
 */

export interface MarkdownChunk {
  /** The block's source, with the blank lines after it. */
  raw: string;
  /** Its tokens (one block, then `space` tokens). */
  tokens: Token[];
}

export interface MarkdownSplit {
  /** The text this split is of. */
  source: string;
  /** Finished blocks, oldest first. */
  finished: MarkdownChunk[];
  /** Where the open tail starts in `source`. */
  openFrom: number;
  /** The tail's tokens (the last block, which may still change, and what follows it). */
  open: Token[];
}

/**
 * Splits `source`. Given the split of an earlier text that `source` extends, only the tail is lexed
 * again and the earlier finished chunks are kept as they were (same objects), so a caller can keep
 * what it rendered for them. Any other `previous` is ignored.
 */
export function splitMarkdown(source: string, previous?: MarkdownSplit, options: MarkdownOptions = {}): MarkdownSplit {
  const text = source.includes('\r') ? source.replace(/\r\n?/g, '\n') : source;
  const extends_ = previous !== undefined && text.startsWith(previous.source);
  const finished = extends_ ? [...previous.finished] : [];
  let offset = extends_ ? previous.openFrom : 0;
  const tokens = lexMarkdown(text.slice(offset), options);
  let last = tokens.length - 1;
  while (last >= 0 && tokens[last]!.type === 'space') last -= 1;
  let index = 0;
  while (index < last) {
    const block = tokens[index]!;
    const chunk: MarkdownChunk = { raw: block.raw, tokens: [block] };
    let next = index + 1;
    while (next < last && tokens[next]!.type === 'space') {
      chunk.raw += tokens[next]!.raw;
      chunk.tokens.push(tokens[next]!);
      next += 1;
    }
    // The lexer's raw fields cover the text exactly; should one ever not, the rest stays open.
    if (!text.startsWith(chunk.raw, offset)) break;
    finished.push(chunk);
    offset += chunk.raw.length;
    index = next;
  }
  return { source: text, finished, openFrom: offset, open: tokens.slice(index) };
}
