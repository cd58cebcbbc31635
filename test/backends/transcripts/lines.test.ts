import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LineSplitter, forEachLine } from '../../../src/backends/index.js';

type Line = [text: string, number: number, terminated: boolean];

function split(chunks: Array<Uint8Array | string>): Line[] {
  const lines: Line[] = [];
  const splitter = new LineSplitter((text, number, terminated) => lines.push([text, number, terminated]));
  for (const chunk of chunks) splitter.push(chunk);
  splitter.end();
  return lines;
}

function splitText(text: string): Line[] {
  const lines: Line[] = [];
  forEachLine(text, (line, number, terminated) => lines.push([line, number, terminated]));
  return lines;
}

describe('LineSplitter', () => {
  it('hands out each line once, numbered from 1, whatever the chunk boundaries', () => {
    const bytes = Buffer.from('{"a":1}\n{"b":2}\n{"c":3}\n');
    expect(split([bytes.subarray(0, 3), bytes.subarray(3, 9), bytes.subarray(9)])).toEqual([
      ['{"a":1}', 1, true],
      ['{"b":2}', 2, true],
      ['{"c":3}', 3, true],
    ]);
  });

  it('never cuts a multi-byte character split across two chunks', () => {
    const bytes = Buffer.from('{"text":"naïve — ✓ 日本"}\n');
    const lines = split([...bytes].map((byte) => Uint8Array.of(byte)));
    expect(lines).toEqual([['{"text":"naïve — ✓ 日本"}', 1, true]]);
  });

  it('marks a last line without a newline as not terminated (a file cut off mid-record)', () => {
    expect(split(['{"a":1}\n{"b":'])).toEqual([
      ['{"a":1}', 1, true],
      ['{"b":', 2, false],
    ]);
  });

  it('drops CR of CRLF line ends and a leading byte-order mark', () => {
    expect(split(['\uFEFF{"a":1}\r\n{"b":2}\r\n'])).toEqual([
      ['{"a":1}', 1, true],
      ['{"b":2}', 2, true],
    ]);
  });

  it('joins a line that spans many chunks', () => {
    const long = 'x'.repeat(100_000);
    const chunks: string[] = [];
    for (let index = 0; index < long.length; index += 1000) chunks.push(long.slice(index, index + 1000));
    chunks.push('\nnext\n');
    expect(split(chunks)).toEqual([
      [long, 1, true],
      ['next', 2, true],
    ]);
  });

  it('counts the bytes it was given', () => {
    const splitter = new LineSplitter(() => {});
    splitter.push(Buffer.from('é\n'));
    expect(splitter.bytesRead).toBe(3);
    expect(splitter.linesRead).toBe(1);
  });

  it('splits like forEachLine for any text and any chunking (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.array(fc.nat({ max: 40 }), { maxLength: 20 }), (text, cuts) => {
        const bytes = Buffer.from(text.replace(/^\uFEFF/, ''));
        const positions = [...new Set(cuts.map((cut) => Math.min(cut, bytes.length)))].sort((a, b) => a - b);
        const chunks: Uint8Array[] = [];
        let start = 0;
        for (const position of positions) {
          chunks.push(bytes.subarray(start, position));
          start = position;
        }
        chunks.push(bytes.subarray(start));
        expect(split(chunks)).toEqual(splitText(bytes.toString('utf8')));
      }),
    );
  });
});
