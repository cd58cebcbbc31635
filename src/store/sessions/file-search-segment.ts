import { closeSync, fstatSync, openSync, promises as fs, readSync } from 'node:fs';
import { dirname } from 'node:path';
import { syncDirectory, tempPath } from '../atomic-file.js';

/**
 * A segment of the file store's search index, `index/messages-<generation>.segment`: messages and
 * their postings on disk, so a process that searches reads the dictionary and the postings of the
 * words it looks for, and the few messages it returns, never the whole index.
 *
 * Layout (every number little-endian):
 *   bytes 0..4095  header: JSON, padded with spaces (kind, version, count, and where each section is)
 *   items          one JSON line per message, in the order they were added (ordinal 0, 1, …)
 *   offsets        float64 per item: the byte where its line starts, then one more: where the last ends
 *   postings       uint32 ordinals, ascending, one run per word, runs in the dictionary's order
 *   dictionary     JSON `[[word, first, count], …]` sorted by word: `first` counts uint32s into postings
 *   sessions       JSON `{ sessionId: newest seq }`, read only when the index is added to
 *
 * A segment never changes once renamed into place; a newer generation replaces it whole (merged
 * from it and the messages added since), so a crash leaves one or the other.
 */

const HEADER_BYTES = 4096;
const KIND = 'parley-search-segment';
const FORMAT_VERSION = 1;
/** Bytes collected before a write while a segment is written. */
const WRITE_CHUNK = 1 << 20;

/** Postings are little-endian on disk; a big-endian machine swaps them after the read. */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

function readLittleEndian(bytes: Uint8Array, index: number): number {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).readUInt32LE(index * 4);
}

interface Section {
  offset: number;
  length: number;
}

interface Header {
  kind: string;
  formatVersion: number;
  count: number;
  items: Section;
  offsets: Section;
  postings: Section;
  dictionary: Section;
  sessions: Section;
}

function isSection(value: unknown): value is Section {
  const section = value as Section | undefined;
  return (
    typeof section === 'object' &&
    section !== null &&
    Number.isSafeInteger(section.offset) &&
    Number.isSafeInteger(section.length) &&
    section.offset >= HEADER_BYTES &&
    section.length >= 0
  );
}

/** What a segment holds to write: items as JSON-ready arrays with a session id, a seq and a text. */
export interface SegmentItem {
  readonly 0: string;
  readonly 1: number;
}

/** The words of one item: given by the index (it owns the tokenizer). */
export type TermsOf<Item> = (item: Item) => readonly string[];

export class SearchSegment {
  private dictionary: Map<string, [first: number, count: number]> | undefined;
  private dictionaryJson: string | undefined;

  private constructor(
    readonly path: string,
    private readonly descriptor: number,
    private readonly header: Header,
  ) {}

  get count(): number {
    return this.header.count;
  }

  /** Opens a segment and checks its header against its size; undefined when it is not a whole segment. */
  static open(path: string): SearchSegment | undefined {
    let descriptor: number;
    try {
      descriptor = openSync(path, 'r');
    } catch {
      return undefined;
    }
    try {
      const size = fstatSync(descriptor).size;
      const bytes = Buffer.alloc(HEADER_BYTES);
      if (size < HEADER_BYTES || readSync(descriptor, bytes, 0, HEADER_BYTES, 0) !== HEADER_BYTES)
        throw new Error('short');
      const header = JSON.parse(bytes.toString('utf8').trimEnd()) as Header;
      const sections = [header.items, header.offsets, header.postings, header.dictionary, header.sessions];
      if (
        header.kind !== KIND ||
        header.formatVersion !== FORMAT_VERSION ||
        !Number.isSafeInteger(header.count) ||
        !sections.every(isSection) ||
        header.offsets.length !== (header.count + 1) * 8 ||
        header.postings.length % 4 !== 0 ||
        sections.some((section) => section.offset + section.length > size)
      )
        throw new Error('bad header');
      return new SearchSegment(path, descriptor, header);
    } catch {
      closeSync(descriptor);
      return undefined;
    }
  }

  private read(offset: number, length: number): Buffer {
    const bytes = Buffer.allocUnsafe(length);
    let done = 0;
    while (done < length) {
      const read = readSync(this.descriptor, bytes, done, length - done, offset + done);
      if (read === 0) throw new Error(`${this.path} ends early`);
      done += read;
    }
    return bytes;
  }

  /** The dictionary's JSON, read once. */
  private dictionaryText(): string {
    const { offset, length } = this.header.dictionary;
    return (this.dictionaryJson ??= this.read(offset, length).toString('utf8'));
  }

  private words(): Map<string, [number, number]> {
    if (this.dictionary === undefined) {
      const entries = JSON.parse(this.dictionaryText()) as Array<[string, number, number]>;
      this.dictionary = new Map();
      for (const [word, first, count] of entries) this.dictionary.set(word, [first, count]);
    }
    return this.dictionary;
  }

  /** Every word the segment holds, sorted. */
  terms(): string[] {
    return [...this.words().keys()];
  }

  /** The ordinals of the items holding `term`, ascending (empty when none does). */
  postings(term: string): Uint32Array {
    const entry = this.dictionary !== undefined ? this.dictionary.get(term) : this.lookUp(term);
    if (entry === undefined) return new Uint32Array(0);
    // Read straight into the list's memory: a common word's postings are most of the messages.
    const list = new Uint32Array(entry[1]);
    const bytes = new Uint8Array(list.buffer);
    const offset = this.header.postings.offset + entry[0] * 4;
    for (let done = 0; done < bytes.length;) {
      const read = readSync(this.descriptor, bytes, done, bytes.length - done, offset + done);
      if (read === 0) throw new Error(`${this.path} ends early`);
      done += read;
    }
    if (!LITTLE_ENDIAN) for (let index = 0; index < list.length; index++) list[index] = readLittleEndian(bytes, index);
    return list;
  }

  /**
   * A word's entry found in the dictionary's text, without parsing the rest of it (a search looks
   * up a few words; parsing every entry of a large index costs more than the search). In the JSON
   * an entry starts with `["` and the word's own encoding, and no string holds `["` unescaped, so
   * the first match is the entry.
   */
  private lookUp(term: string): [number, number] | undefined {
    const text = this.dictionaryText();
    const key = `[${JSON.stringify(term)},`;
    const start = text.indexOf(key);
    if (start < 0) return undefined;
    // After the word come only its two numbers.
    const end = text.indexOf(']', start + key.length);
    try {
      const [, first, count] = JSON.parse(text.slice(start, end + 1)) as [string, number, number];
      return Number.isSafeInteger(first) && Number.isSafeInteger(count) ? [first, count] : undefined;
    } catch {
      return undefined;
    }
  }

  /** The item at `ordinal`, parsed; undefined when the bytes there are not JSON. */
  item(ordinal: number): unknown {
    const bounds = this.read(this.header.offsets.offset + ordinal * 8, 16);
    const start = bounds.readDoubleLE(0);
    const end = bounds.readDoubleLE(8);
    try {
      return JSON.parse(this.read(this.header.items.offset + start, end - start).toString('utf8')) as unknown;
    } catch {
      return undefined;
    }
  }

  /** The newest seq held per session. */
  sessions(): Map<string, number> {
    const { offset, length } = this.header.sessions;
    return new Map(Object.entries(JSON.parse(this.read(offset, length).toString('utf8')) as Record<string, number>));
  }

  close(): void {
    try {
      closeSync(this.descriptor);
    } catch {
      // A read-only descriptor of derived data: nothing to keep.
    }
  }

  /**
   * Writes a new segment at `path` (temp, fsync, rename, folder fsync): the items of `base` (copied
   * byte for byte, their postings kept) followed by `items`, whose ordinals continue from the base's.
   */
  static async write<Item extends SegmentItem>(options: {
    path: string;
    tmpDir: string;
    base: SearchSegment | undefined;
    items: readonly Item[];
    termsOf: TermsOf<Item>;
  }): Promise<void> {
    const { path, base, items } = options;
    const temp = tempPath(options.tmpDir, path);
    const handle = await fs.open(temp, 'wx');
    try {
      let position = HEADER_BYTES;
      let chunks: Buffer[] = [];
      let chunked = 0;
      const flush = async () => {
        if (chunked === 0) return;
        const bytes = Buffer.concat(chunks, chunked);
        chunks = [];
        chunked = 0;
        for (let written = 0; written < bytes.length;) {
          const { bytesWritten } = await handle.write(bytes, written, bytes.length - written, position + written);
          written += bytesWritten;
        }
        position += bytes.length;
      };
      const put = async (bytes: Buffer) => {
        chunks.push(bytes);
        chunked += bytes.length;
        if (chunked >= WRITE_CHUNK) await flush();
      };
      const baseCount = base?.count ?? 0;
      const count = baseCount + items.length;

      // Items: the base's bytes as they are, then the new lines.
      const itemsAt = position;
      const offsets = new Float64Array(count + 1);
      let itemBytes = 0;
      if (base !== undefined) {
        const baseOffsets = base.read(base.header.offsets.offset, base.header.offsets.length);
        for (let index = 0; index <= baseCount; index++) offsets[index] = baseOffsets.readDoubleLE(index * 8);
        const length = base.header.items.length;
        for (let done = 0; done < length; done += WRITE_CHUNK)
          await put(base.read(base.header.items.offset + done, Math.min(WRITE_CHUNK, length - done)));
        itemBytes = length;
      }
      const newPostings = new Map<string, number[]>();
      const sessions = base?.sessions() ?? new Map<string, number>();
      for (let index = 0; index < items.length; index++) {
        const item = items[index]!;
        const line = Buffer.from(`${JSON.stringify(item)}\n`);
        offsets[baseCount + index] = itemBytes;
        itemBytes += line.length;
        await put(line);
        for (const term of options.termsOf(item)) {
          const list = newPostings.get(term);
          if (list === undefined) newPostings.set(term, [baseCount + index]);
          else list.push(baseCount + index);
        }
        if (item[1] > (sessions.get(item[0]) ?? -1)) sessions.set(item[0], item[1]);
      }
      offsets[count] = itemBytes;
      await flush();
      const offsetsAt = position;
      await put(Buffer.from(offsets.buffer, offsets.byteOffset, offsets.byteLength));
      await flush();

      // Postings: for each word in sorted order, the base's run, then the new ordinals.
      const postingsAt = position;
      const baseWords = base?.words() ?? new Map<string, [number, number]>();
      const terms = [...new Set([...baseWords.keys(), ...newPostings.keys()])].sort();
      const dictionary: Array<[string, number, number]> = [];
      let first = 0;
      for (const term of terms) {
        const old = baseWords.get(term);
        const added = newPostings.get(term) ?? [];
        if (old !== undefined && old[1] > 0)
          await put(base!.read(base!.header.postings.offset + old[0] * 4, old[1] * 4));
        if (added.length > 0) {
          const bytes = Buffer.allocUnsafe(added.length * 4);
          for (let index = 0; index < added.length; index++) bytes.writeUInt32LE(added[index]!, index * 4);
          await put(bytes);
        }
        const total = (old?.[1] ?? 0) + added.length;
        dictionary.push([term, first, total]);
        first += total;
      }
      await flush();
      const dictionaryAt = position;
      await put(Buffer.from(JSON.stringify(dictionary)));
      await flush();
      const sessionsAt = position;
      await put(Buffer.from(JSON.stringify(Object.fromEntries(sessions))));
      await flush();

      const header: Header = {
        kind: KIND,
        formatVersion: FORMAT_VERSION,
        count,
        items: { offset: itemsAt, length: itemBytes },
        offsets: { offset: offsetsAt, length: (count + 1) * 8 },
        postings: { offset: postingsAt, length: dictionaryAt - postingsAt },
        dictionary: { offset: dictionaryAt, length: sessionsAt - dictionaryAt },
        sessions: { offset: sessionsAt, length: position - sessionsAt },
      };
      const headerText = JSON.stringify(header);
      if (Buffer.byteLength(headerText) > HEADER_BYTES) throw new Error('segment header too long');
      await handle.write(Buffer.from(headerText.padEnd(HEADER_BYTES, ' ')), 0, HEADER_BYTES, 0);
      await handle.sync();
    } catch (error) {
      await handle.close().catch(() => undefined);
      await fs.rm(temp, { force: true });
      throw error;
    }
    await handle.close();
    try {
      await fs.rename(temp, path);
    } catch (error) {
      await fs.rm(temp, { force: true });
      throw error;
    }
    await syncDirectory(dirname(path));
  }
}
