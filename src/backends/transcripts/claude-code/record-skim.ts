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

/** Wanted field names as bytes, by length: a key is matched without decoding it. */
class KeySet {
  private readonly byLength = new Map<number, Array<{ name: string; bytes: Buffer }>>();

  constructor(names: Iterable<string>) {
    for (const name of names) {
      const bytes = Buffer.from(name, 'latin1');
      const list = this.byLength.get(bytes.length);
      if (list === undefined) this.byLength.set(bytes.length, [{ name, bytes }]);
      else list.push({ name, bytes });
    }
  }

  /** The wanted name written at `buffer[start, end)`, or undefined. */
  find(buffer: Buffer, start: number, end: number): string | undefined {
    const candidates = this.byLength.get(end - start);
    if (candidates === undefined) return undefined;
    for (const candidate of candidates) if (buffer.compare(candidate.bytes, 0, candidate.bytes.length, start, end) === 0) return candidate.name;
    return undefined;
  }
}

const RECORD_KEYS = new KeySet([...RECORD_FIELDS, 'message']);
const MESSAGE_KEYS = new KeySet([...MESSAGE_FIELDS, 'content']);
const ITEM_KEYS = new KeySet(ITEM_FIELDS);

class NotSkimmable extends Error {}
const NOT_SKIMMABLE = new NotSkimmable();

export function skimRecord(bytes: Buffer, start: number, end: number): JsonObject | undefined {
  const cursor = new Cursor(bytes, end);
  try {
    cursor.position = start;
    cursor.skipSpace();
    const record = cursor.object(RECORD_KEYS, (key) => (key === 'message' ? () => cursor.message() : undefined));
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
   * An object: `keep` fields parsed whole, fields `descend` names read by their own reader, the
   * rest skipped.
   */
  object(keys: KeySet, descend: (key: string) => (() => unknown) | undefined = () => undefined): JsonObject {
    this.expect(OPEN_OBJECT);
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
      const reader = key === undefined ? undefined : descend(key);
      if (key === undefined) this.skipValue();
      else if (reader !== undefined) result[key] = reader();
      else result[key] = this.value();
      this.skipSpace();
      const next = this.next();
      if (next === CLOSE_OBJECT) return result;
      if (next !== COMMA) throw NOT_SKIMMABLE;
    }
  }

  /** `message`: its small fields, and `content` as a string or as items pruned to type, text and name. */
  message(): unknown {
    if (this.peek() !== OPEN_OBJECT) return this.parsedValue();
    return this.object(MESSAGE_KEYS, (key) => (key === 'content' ? () => this.content() : undefined));
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
      items.push(this.peek() === OPEN_OBJECT ? this.object(ITEM_KEYS) : this.parsedValue());
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
    for (let index = from; index < close; index++) {
      // A key written with escapes could spell a wanted name: let JSON.parse read the line.
      if (this.bytes[index] === BACKSLASH) throw NOT_SKIMMABLE;
    }
    return keys.find(this.bytes, from, close);
  }

  /** A kept value: strings and literals read directly, objects and arrays by JSON.parse. */
  private value(): unknown {
    const first = this.peek();
    if (first === QUOTE) return this.string();
    if (first === OPEN_OBJECT || first === OPEN_ARRAY) return this.parsedValue();
    const from = this.position;
    this.skipLiteral();
    const text = this.bytes.toString('latin1', from, this.position);
    return text === 'true' ? true : text === 'false' ? false : text === 'null' ? null : Number(text);
  }

  private string(): string {
    const from = this.position;
    this.expect(QUOTE);
    const close = this.closingQuote(this.position);
    this.position = close + 1;
    // A string with escapes is rare: JSON.parse unescapes it.
    if (this.bytes.subarray(from, close).indexOf(BACKSLASH) !== -1) {
      return JSON.parse(this.bytes.toString('utf8', from, close + 1)) as string;
    }
    return this.bytes.toString('utf8', from + 1, close);
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
    let depth = 0;
    while (this.position < this.end) {
      const byte = this.bytes[this.position]!;
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

  /** A number, `true`, `false` or `null`: up to the next delimiter, checked to be one of them. */
  private skipLiteral(): void {
    const from = this.position;
    while (this.position < this.end) {
      const byte = this.bytes[this.position]!;
      if (byte === COMMA || byte === CLOSE_OBJECT || byte === CLOSE_ARRAY || byte <= 0x20) break;
      this.position++;
    }
    const text = this.bytes.toString('latin1', from, this.position);
    if (text !== 'true' && text !== 'false' && text !== 'null' && !/^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/.test(text)) throw NOT_SKIMMABLE;
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
