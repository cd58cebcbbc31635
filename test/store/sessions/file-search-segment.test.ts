import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SearchSegment } from '../../../src/store/sessions/file-search-segment.js';

type Item = [string, number, string[]];

let work: string;
beforeEach(async () => {
  work = await fs.mkdtemp(join(tmpdir(), 'parley-search-segment-'));
});
afterEach(async () => {
  await fs.rm(work, { recursive: true, force: true });
});

describe('a search segment', () => {
  it('finds each word’s postings without parsing its whole dictionary, the same as through the parsed dictionary', async () => {
    // Words that are prefixes of others, JSON's own characters, other scripts, and a number.
    const vocabulary = [
      'a',
      'ab',
      'abc',
      'b',
      'quote"d',
      'back\\slash',
      'close]d',
      '[open',
      '日本語',
      'ελληνικά',
      '42',
      'zz',
    ];
    const items: Item[] = Array.from({ length: 200 }, (_, ordinal) => [
      `s${ordinal % 7}`,
      ordinal,
      vocabulary.filter((_word, index) => (ordinal + index) % (index + 2) === 0),
    ]);
    const path = join(work, 'messages-1.segment');
    await fs.mkdir(join(work, 'tmp'));
    await SearchSegment.write({ path, tmpDir: join(work, 'tmp'), base: undefined, items, termsOf: (item) => item[2] });
    const expected = (word: string) => items.flatMap((item, ordinal) => (item[2].includes(word) ? [ordinal] : []));

    const lookedUp = SearchSegment.open(path)!;
    for (const word of [...vocabulary, 'missing', 'a"', '"a', 'ab,', '']) {
      expect([...lookedUp.postings(word)], word).toEqual(expected(word));
    }
    lookedUp.close();

    // Once the dictionary is parsed (a merge lists every term), lookups go through it, with the same answers.
    const parsed = SearchSegment.open(path)!;
    expect(parsed.terms()).toEqual([...vocabulary].sort());
    for (const word of [...vocabulary, 'missing']) expect([...parsed.postings(word)], word).toEqual(expected(word));
    parsed.close();
  });
});
