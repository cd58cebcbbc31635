import type { JsonObject } from '../json.js';

/**
 * Reads one Claude Code record from its UTF-8 bytes keeping only the fields the import's summary
 * scan uses, without decoding or building the rest: tool results, structured `toolUseResult`s,
 * tool inputs and thinking — most of a transcript's bytes — are stepped over (a string is skipped
 * with one native `indexOf` of its closing quote). The result is the record pruned: the same
 * shape `JSON.parse` gives, minus what the scan never reads, so the scan reads both alike.
 *
 * Returns undefined when the bytes are not one complete JSON object as far as the skim can tell
 * (the caller then parses the line with `JSON.parse`, which says what is wrong). What it skips is
 * checked only for its structure (brackets, strings, literals), not validated as `JSON.parse`
 * would: a line broken inside a skipped value can be counted here and refused by the parser, whose
 * numbers replace these when the blocks are built.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COLON = 0x3a;
const COMMA = 0x2c;

/** Top-level fields kept, parsed whole (they are small). */
const RECORD_FIELDS = new Set([
  'type',
  'subtype',
  'uuid',
  'parentUuid',
  'timestamp',
  'isSidechain',
  'isMeta',
  'isCompactSummary',
  'isApiErrorMessage',
  'requestId',
  'costUSD',
  'agentId',
  'sessionId',
  'cwd',
  'version',
  'compactMetadata',
  'compact_metadata',
  'attachment',
  'customTitle',
  'aiTitle',
  'summary',
  'totalCostUSD',
  'hasUnknownModelCost',
]);
/** Fields of `message` kept whole; `content` is read item by item. */
const MESSAGE_FIELDS = new Set(['id', 'model', 'stop_reason', 'usage']);
/** Fields of a content item kept: what it is, a text's words, a tool's name. */
const ITEM_FIELDS = new Set(['type', 'text', 'name']);

/**
 * Wanted field names as bytes, by a hash of their bytes: a key is matched without decoding it, and
 * most keys (the ones the scan skips) miss on the hash alone, with no byte comparison.
 */
class KeySet {
  private readonly byHash = new Map<number, Array<{ name: string; bytes: Uint8Array }>>();

  constructor(names: Iterable<string>) {
    for (const name of names) {
      const bytes = Buffer.from(name, 'latin1');
      const hash = hashOf(bytes, 0, bytes.length);
      const list = this.byHash.get(hash);
      if (list === undefined) this.byHash.set(hash, [{ name, bytes }]);
      else list.push({ name, bytes });
    }
  }

  /** The wanted name written at `buffer[start, end)`, whose `hashOf` is `hash`, or undefined. */
  find(buffer: Uint8Array, start: number, end: number, hash: number): string | undefined {
    const candidates = this.byHash.get(hash);
    if (candidates === undefined) return undefined;
    for (const candidate of candidates) if (sameBytes(candidate.bytes, buffer, start, end)) return candidate.name;
    return undefined;
  }
}

/** The hash `Cursor.key` computes as it steps over a key's bytes (it must stay the same function). */
function hashOf(bytes: Uint8Array, start: number, end: number): number {
  let hash = end - start;
  for (let index = start; index < end; index++) hash = (Math.imul(hash, 31) + bytes[index]!) | 0;
  return hash;
}

function sameBytes(wanted: Uint8Array, buffer: Uint8Array, start: number, end: number): boolean {
  if (wanted.length !== end - start) return false;
  for (let index = 0; index < wanted.length; index++) if (wanted[index] !== buffer[start + index]) return false;
  return true;
}

const RECORD_KEYS = new KeySet([...RECORD_FIELDS, 'message']);
const MESSAGE_KEYS = new KeySet([...MESSAGE_FIELDS, 'content']);
const ITEM_KEYS = new KeySet(ITEM_FIELDS);

class NotSkimmable extends Error {}
const NOT_SKIMMABLE = new NotSkimmable();

/** Which object a `Cursor.object` reads: what its fields are, and which one has a reader of its own. */
const RECORD = 0;
const MESSAGE = 1;
const ITEM = 2;
type ObjectKind = typeof RECORD | typeof MESSAGE | typeof ITEM;
const KEYS_OF: Record<ObjectKind, KeySet> = { [RECORD]: RECORD_KEYS, [MESSAGE]: MESSAGE_KEYS, [ITEM]: ITEM_KEYS };

const TRUE = Buffer.from('true', 'latin1');
const FALSE = Buffer.from('false', 'latin1');
const NULL = Buffer.from('null', 'latin1');

export function skimRecord(bytes: Buffer, start: number, end: number): JsonObject | undefined {
  const cursor = new Cursor(bytes, end);
  try {
    cursor.position = start;
    cursor.skipSpace();
    const record = cursor.object(RECORD);
    cursor.skipSpace();
    return cursor.position === end ? record : undefined;
  } catch (error) {
    if (error === NOT_SKIMMABLE) return undefined;
    // A kept field's value that JSON.parse refuses: the line is not JSON.
    if (error instanceof SyntaxError) return undefined;
    throw error;
  }
}

class Cursor {
  position = 0;

  constructor(
    private readonly bytes: Buffer,
    private readonly end: number,
  ) {}

  /**
   * An object of the given kind: its wanted fields parsed whole, `message` and `content` read by
   * their own readers, the rest skipped.
   */
  object(kind: ObjectKind): JsonObject {
    this.expect(OPEN_OBJECT);
    const keys = KEYS_OF[kind];
    const result: JsonObject = {};
    this.skipSpace();
    if (this.peek() === CLOSE_OBJECT) {
      this.position++;
      return result;
    }
    for (;;) {
      this.skipSpace();
      const key = this.key(keys);
      this.skipSpace();
      this.expect(COLON);
      this.skipSpace();
      if (key === undefined) this.skipValue();
      else if (kind === RECORD && key === 'message') result[key] = this.message();
      else if (kind === MESSAGE && key === 'content') result[key] = this.content();
      else result[key] = this.value();
      this.skipSpace();
      const next = this.next();
      if (next === CLOSE_OBJECT) return result;
      if (next !== COMMA) throw NOT_SKIMMABLE;
    }
  }

  /** `message`: its small fields, and `content` as a string or as items pruned to type, text and name. */
  private message(): unknown {
    if (this.peek() !== OPEN_OBJECT) return this.parsedValue();
    return this.object(MESSAGE);
  }

  private content(): unknown {
    if (this.peek() !== OPEN_ARRAY) return this.parsedValue();
    this.position++;
    const items: unknown[] = [];
    this.skipSpace();
    if (this.peek() === CLOSE_ARRAY) {
      this.position++;
      return items;
    }
    for (;;) {
      this.skipSpace();
      items.push(this.peek() === OPEN_OBJECT ? this.object(ITEM) : this.parsedValue());
      this.skipSpace();
      const next = this.next();
      if (next === CLOSE_ARRAY) return items;
      if (next !== COMMA) throw NOT_SKIMMABLE;
    }
  }

  /** A value parsed by JSON.parse from its own bytes. */
  private parsedValue(): unknown {
    const from = this.position;
    this.skipValue();
    return JSON.parse(this.bytes.toString('utf8', from, this.position)) as unknown;
  }

  /** A key, matched against the wanted ones without decoding it; undefined for any other. */
  private key(keys: KeySet): string | undefined {
    this.expect(QUOTE);
    const from = this.position;
    const close = this.closingQuote(from);
    this.position = close + 1;
    const bytes = this.bytes;
    // The same hash as `hashOf`, taken while looking for escapes.
    let hash = close - from;
    for (let index = from; index < close; index++) {
      const byte = bytes[index]!;
      // A key written with escapes could spell a wanted name: let JSON.parse read the line.
      if (byte === BACKSLASH) throw NOT_SKIMMABLE;
      hash = (Math.imul(hash, 31) + byte) | 0;
    }
    return keys.find(bytes, from, close, hash);
  }

  /** A kept value: strings and literals read directly, objects and arrays by JSON.parse. */
  private value(): unknown {
    const first = this.peek();
    if (first === QUOTE) return this.string();
    if (first === OPEN_OBJECT || first === OPEN_ARRAY) return this.parsedValue();
    const from = this.position;
    this.skipLiteral();
    if (first === 0x74) return true;
    if (first === 0x66) return false;
    if (first === 0x6e) return null;
    return Number(this.bytes.toString('latin1', from, this.position));
  }

  private string(): string {
    const from = this.position;
    this.expect(QUOTE);
    const close = this.closingQuote(this.position);
    this.position = close + 1;
    const bytes = this.bytes;
    for (let index = from + 1; index < close; index++) {
      // A string with escapes is rare: JSON.parse unescapes it.
      if (bytes[index] === BACKSLASH) return JSON.parse(bytes.toString('utf8', from, close + 1)) as string;
    }
    return bytes.toString('utf8', from + 1, close);
  }

  /** The index of the quote that closes a string whose contents start at `from`. */
  private closingQuote(from: number): number {
    let quote = this.bytes.indexOf(QUOTE, from);
    for (;;) {
      if (quote === -1 || quote >= this.end) throw NOT_SKIMMABLE;
      let backslashes = 0;
      while (this.bytes[quote - 1 - backslashes] === BACKSLASH) backslashes++;
      if (backslashes % 2 === 0) return quote;
      quote = this.bytes.indexOf(QUOTE, quote + 1);
    }
  }

  private skipValue(): void {
    const first = this.peek();
    if (first === QUOTE) {
      this.position = this.closingQuote(this.position + 1) + 1;
      return;
    }
    if (first !== OPEN_OBJECT && first !== OPEN_ARRAY) {
      this.skipLiteral();
      return;
    }
    // Nested objects and arrays: count brackets, stepping over strings.
    const bytes = this.bytes;
    let depth = 0;
    while (this.position < this.end) {
      const byte = bytes[this.position]!;
      if (byte === QUOTE) {
        this.position = this.closingQuote(this.position + 1) + 1;
        continue;
      }
      this.position++;
      if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) depth++;
      else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
        depth--;
        if (depth === 0) return;
      }
    }
    throw NOT_SKIMMABLE;
  }

  /** A number, `true`, `false` or `null`: up to the next delimiter, checked to be one of them (without decoding it). */
  private skipLiteral(): void {
    const bytes = this.bytes;
    const from = this.position;
    while (this.position < this.end) {
      const byte = bytes[this.position]!;
      if (byte === COMMA || byte === CLOSE_OBJECT || byte === CLOSE_ARRAY || byte <= 0x20) break;
      this.position++;
    }
    const to = this.position;
    const first = bytes[from];
    if (
      first === 0x74
        ? sameBytes(TRUE, bytes, from, to)
        : first === 0x66
          ? sameBytes(FALSE, bytes, from, to)
          : first === 0x6e
            ? sameBytes(NULL, bytes, from, to)
            : isNumber(bytes, from, to)
    )
      return;
    throw NOT_SKIMMABLE;
  }

  skipSpace(): void {
    while (this.position < this.end) {
      const byte = this.bytes[this.position]!;
      if (byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09) return;
      this.position++;
    }
  }

  private peek(): number | undefined {
    return this.position < this.end ? this.bytes[this.position] : undefined;
  }

  private next(): number | undefined {
    return this.position < this.end ? this.bytes[this.position++] : undefined;
  }

  private expect(byte: number): void {
    if (this.next() !== byte) throw NOT_SKIMMABLE;
  }
}

const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

function isDigit(byte: number | undefined): boolean {
  return byte !== undefined && byte >= ZERO && byte <= NINE;
}

/** `bytes[from, to)` is a JSON number: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`. */
function isNumber(bytes: Uint8Array, from: number, to: number): boolean {
  let index = from;
  if (bytes[index] === MINUS) index++;
  if (index >= to || !isDigit(bytes[index])) return false;
  if (bytes[index] === ZERO) index++;
  else while (index < to && isDigit(bytes[index])) index++;
  if (index < to && bytes[index] === DOT) {
    index++;
    if (index >= to || !isDigit(bytes[index])) return false;
    while (index < to && isDigit(bytes[index])) index++;
  }
  if (index < to && (bytes[index] === 0x65 || bytes[index] === 0x45)) {
    index++;
    if (index < to && (bytes[index] === PLUS || bytes[index] === MINUS)) index++;
    if (index >= to || !isDigit(bytes[index])) return false;
    while (index < to && isDigit(bytes[index])) index++;
  }
  return index === to;
}
