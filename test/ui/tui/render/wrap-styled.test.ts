import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { wrapStyled } from '../../../../src/ui/tui/render/wrap-styled.js';
import { columns } from '../../../../src/ui/tui/render/terminal-text.js';
import { plain } from '../app-rig.js';

const BOLD = '\u001b[1m';
const RESET = '\u001b[0m';
const paragraph = { words: true, trim: true };
const code = { words: false, trim: false };

describe('wrapStyled', () => {
  it('breaks between words, drops the spaces at a break, and cuts a word longer than a row', () => {
    expect(wrapStyled('one two three four', 9, paragraph)).toEqual(['one two', 'three', 'four']);
    expect(wrapStyled('a verylongwordindeed b', 8, paragraph)).toEqual(['a verylo', 'ngwordin', 'deed b']);
    expect(wrapStyled('see https://example.com/a/long/path', 12, paragraph)).toEqual([
      'see https://',
      'example.com/',
      'a/long/path',
    ]);
    expect(wrapStyled('keep\n\nbreaks', 20, paragraph)).toEqual(['keep', '', 'breaks']);
  });

  it('fills rows and keeps spaces without word wrap (code, output)', () => {
    expect(wrapStyled('  indented code line', 8, code)).toEqual(['  indent', 'ed code ', 'line']);
  });

  it('closes a style at a break and opens it again on the next row, so each row stands alone', () => {
    const rows = wrapStyled(`${BOLD}one two three\u001b[22m after`, 8, paragraph);
    expect(rows.map(plain)).toEqual(['one two', 'three', 'after']);
    expect(rows[0]).toBe(`${BOLD}one two${RESET}`);
    expect(rows[1]).toBe(`${BOLD}three\u001b[22m`);
    expect(rows[2]).toBe('after');
  });

  it('carries a style across line breaks in the text (a comment spanning lines of code)', () => {
    const rows = wrapStyled('\u001b[90m/* one\ntwo */\u001b[39m', 20, code);
    expect(rows).toEqual(['\u001b[90m/* one\u001b[0m', '\u001b[90mtwo */\u001b[39m']);
  });

  it('counts wide characters as two columns', () => {
    expect(wrapStyled('中文字 中文', 6, paragraph)).toEqual(['中文字', '中文']);
  });

  it('keeps every word, in order, with no row wider than the width', () => {
    fc.assert(
      fc.property(
        fc.array(fc.stringMatching(/^[a-z中😀]{1,12}$/), { maxLength: 30 }),
        fc.integer({ min: 4, max: 40 }),
        fc.boolean(),
        (words, width, styled) => {
          const text = words
            .map((word, index) => (styled && index % 3 === 0 ? `${BOLD}${word}\u001b[22m` : word))
            .join(' ');
          const rows = wrapStyled(text, width, paragraph);
          for (const row of rows) expect(columns(row)).toBeLessThanOrEqual(width);
          expect(rows.map(plain).join('').replace(/\s/g, '')).toBe(words.join(''));
        },
      ),
      { numRuns: 300 },
    );
  });
});
