import { ValidationError, type StreamEvent, type UnsequencedEvent } from '../../conversation/index.js';

/**
 * Full-text search over the messages of every session, shared by every store: what counts as a
 * word, which events are messages, how a query is read, and the snippet of a hit. A word is a run
 * of letters and digits in any script (NFKC, lower case), so "Привет", "東京タワー" and "naïve" are
 * words like "deploy"; everything else (punctuation, regular-expression or SQL characters) only
 * separates words, and can never reach a database or a pattern matcher as syntax.
 */

/** What `SessionStore.searchSessions` is asked. */
export interface SessionSearchQuery {
  /** Words; a message matches when it holds every one of them. */
  text: string;
  /** Hits to return: 1 to 100, default 20. */
  limit?: number;
}

/** A message that matched: its session, where it is in the log, and a snippet around the words. */
export interface SessionSearchHit {
  sessionId: string;
  /** The `seq` of the event that holds the message. */
  seq: number;
  /** The message's block id, to open the session at it. */
  blockId: string;
  conversationId: string;
  role: 'user' | 'assistant';
  /** About 160 characters of the message around the first matching word. */
  snippet: string;
  /** Milliseconds since the epoch, when the message was written. */
  at: number;
}

/** Newest messages first. `terms` are the words searched for, as the index holds them. */
export interface SessionSearchResult {
  hits: SessionSearchHit[];
  terms: string[];
}

export const MAX_QUERY_CHARACTERS = 1_000;
export const MAX_QUERY_TERMS = 16;
export const DEFAULT_SEARCH_LIMIT = 20;
export const MAX_SEARCH_LIMIT = 100;
/** Longer runs of letters are cut here, in the index and in queries alike. */
export const MAX_TERM_LENGTH = 64;

const WORD = /[\p{L}\p{M}\p{N}]+/gu;

/** The words of a text as the index keeps them, in order, repeats included. */
export function wordsOf(text: string): string[] {
  const words: string[] = [];
  for (const match of text.normalize('NFKC').toLowerCase().matchAll(WORD))
    words.push(match[0].slice(0, MAX_TERM_LENGTH));
  return words;
}

/** The distinct words of a text. */
export function termsOf(text: string): string[] {
  return [...new Set(wordsOf(text))];
}

/** The query's distinct words; bad input is refused with what was wrong and what to do. */
export function queryTerms(query: SessionSearchQuery): { terms: string[]; limit: number } {
  const text = query?.text;
  if (typeof text !== 'string' || text.trim().length === 0) {
    throw new ValidationError('The search is empty: give one or more words to look for.', { data: { field: 'text' } });
  }
  if (text.length > MAX_QUERY_CHARACTERS) {
    throw new ValidationError(
      `A search may be at most ${MAX_QUERY_CHARACTERS} characters (got ${text.length}); search for a few distinctive words.`,
      { data: { field: 'text', length: text.length } },
    );
  }
  const terms = termsOf(text);
  if (terms.length > MAX_QUERY_TERMS) {
    throw new ValidationError(
      `A search may hold at most ${MAX_QUERY_TERMS} different words (got ${terms.length}); every word must match, so a few distinctive ones find more.`,
      { data: { field: 'text', terms: terms.length } },
    );
  }
  const limit = query.limit ?? DEFAULT_SEARCH_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_SEARCH_LIMIT) {
    throw new ValidationError(`A search returns 1 to ${MAX_SEARCH_LIMIT} hits; got ${String(limit)}.`, {
      data: { field: 'limit', value: limit },
    });
  }
  return { terms, limit };
}

/** A message as the index keeps it. */
export interface IndexedMessage {
  blockId: string;
  conversationId: string;
  role: 'user' | 'assistant';
  text: string;
  at: number;
}

/**
 * The message an event completes, or undefined: a message is indexed once, when its block is
 * complete (`block_complete` carries the whole text; deltas before it are not indexed).
 */
export function messageOf(event: StreamEvent | UnsequencedEvent): IndexedMessage | undefined {
  if (event.type !== 'block_complete') return undefined;
  const block = event.block;
  if (block.type !== 'user_message' && block.type !== 'assistant_text') return undefined;
  if (block.content.length === 0) return undefined;
  return {
    blockId: block.id,
    conversationId: event.conversationId,
    role: block.type === 'user_message' ? 'user' : 'assistant',
    text: block.content,
    at: event.at ?? 0,
  };
}

const SNIPPET_CHARACTERS = 160;

/** About 160 characters of `text` on one line, starting a little before the first of `terms`. */
export function snippetOf(text: string, terms: readonly string[]): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const wanted = new Set(terms);
  let start = 0;
  for (const match of flat.matchAll(WORD)) {
    if (wanted.has(match[0].normalize('NFKC').toLowerCase().slice(0, MAX_TERM_LENGTH))) {
      start = match.index;
      break;
    }
  }
  const from = Math.max(0, start - 40);
  // Start at a word boundary when one is near, so the snippet does not open mid-word.
  const space = from === 0 ? -1 : flat.indexOf(' ', from);
  const begin = space !== -1 && space < start ? space + 1 : from;
  const end = Math.min(flat.length, begin + SNIPPET_CHARACTERS);
  return `${begin > 0 ? '…' : ''}${flat.slice(begin, end)}${end < flat.length ? '…' : ''}`;
}
