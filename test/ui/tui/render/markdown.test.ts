import '../terminal-env.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { renderInlineMarkdown, renderMarkdown } from '../../../../src/ui/tui/render/markdown.js';
import { columns } from '../../../../src/ui/tui/render/terminal-text.js';
import { plain } from '../app-rig.js';
import { SAMPLE_ANSWER } from './sample-answer.js';

const BOLD = '\u001b[1m';
const ITALIC = '\u001b[3m';

function screen(text: string, width = 80): string {
  return plain(renderMarkdown(text, width).join('\n'));
}

describe('Markdown in the terminal', () => {
  it('shows emphasis, strikethrough and code spans styled, without their markers', () => {
    const rows = renderMarkdown('Some **bold**, *italic*, ~~gone~~ and `code`.', 80).join('\n');
    expect(plain(rows)).toBe('Some bold, italic, gone and code.');
    expect(rows).toContain(`${BOLD}bold`);
    expect(rows).toContain(`${ITALIC}italic`);
    expect(rows).toContain('\u001b[9mgone');
    expect(rows).toContain('\u001b[36mcode');
  });

  it('shows headings bold without their # marks', () => {
    const rows = renderMarkdown('# Top\n\n## Second\n\n### Third', 80);
    expect(rows.map(plain)).toEqual(['Top', '', 'Second', '', 'Third']);
    expect(rows[0]).toContain(BOLD);
    expect(rows[0]).toContain('\u001b[4m');
  });

  it('shows lists with bullets, numbers, nesting and task boxes, with inline styles inside items', () => {
    const rows = renderMarkdown('- **one**\n- two\n  - nested *it*\n\n3. three\n4. four\n\n- [ ] open\n- [x] done', 80);
    expect(rows.map(plain)).toEqual([
      '• one',
      '• two',
      '  ◦ nested it',
      '',
      '3. three',
      '4. four',
      '',
      '☐ open',
      '☑ done',
    ]);
    expect(rows[0]).toContain(`${BOLD}one`);
  });

  it('draws a table with box characters, header bold, numbers aligned as the delimiter row says', () => {
    const rows = renderMarkdown('| Name | Count |\n|---|---:|\n| alpha | 1 |\n| beta | 22 |', 80);
    expect(rows.map(plain)).toEqual([
      '┌───────┬───────┐',
      '│ Name  │ Count │',
      '├───────┼───────┤',
      '│ alpha │     1 │',
      '│ beta  │    22 │',
      '└───────┴───────┘',
    ]);
    expect(rows[1]).toContain(`${BOLD}Name`);
  });

  it('fits a wide table to the width by wrapping its widest column', () => {
    const long = 'a sentence long enough that the table cannot keep it on one row of forty columns';
    const rows = renderMarkdown(`| Key | Text |\n|---|---|\n| k | ${long} |`, 40);
    for (const row of rows) expect(columns(row)).toBeLessThanOrEqual(40);
    expect(rows.length).toBeGreaterThan(5);
    expect(plain(rows.join(' ')).replace(/[│\s]+/g, ' ')).toContain('a sentence long enough');
  });

  it('shows a table with too many columns for the screen as "header: value" rows', () => {
    const header = Array.from({ length: 8 }, (_, index) => `c${index}`);
    const table = `| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|\n| ${header.map((_, index) => `v${index}`).join(' | ')} |`;
    const rows = renderMarkdown(table, 24).map(plain);
    expect(rows).toContain('c0: v0');
    expect(rows).toContain('c7: v7');
  });

  it('shows fenced code highlighted by language, indented, with the language and no fence', () => {
    const rows = renderMarkdown('```ts\nconst answer: number = 42;\n```', 80);
    expect(plain(rows.join('\n'))).toBe('ts\n  const answer: number = 42;');
    expect(rows[1]).toMatch(/\u001b\[\d+mconst/);
    const unknown = renderMarkdown('```made-up\nplain words\n```', 80);
    expect(unknown[1]).toBe('  plain words');
  });

  it('shows a quote with a bar, a rule across the width, and a link with its address', () => {
    expect(screen('> quoted **text**')).toBe('│ quoted text');
    expect(screen('---', 10)).toBe('──────────');
    expect(screen('[the spec](https://example.com/spec) and <https://example.com>')).toBe(
      'the spec (https://example.com/spec) and https://example.com',
    );
  });

  it('shows raw HTML as text and decodes character references', () => {
    expect(screen('<script>alert(1)</script>')).toBe('<script>alert(1)</script>');
    expect(screen('a <b>bold</b> tag &amp; &lt;3 &#x1F600;')).toBe('a <b>bold</b> tag & <3 😀');
  });

  it('never lets control characters reach the terminal (no escape sequences from the text)', () => {
    const rows = renderMarkdown('title \u001b]2;pwned\u0007 and \u001b[2J clear \u009b31m', 80).join('\n');
    expect(rows).not.toContain('\u001b]');
    expect(rows).not.toContain('\u0007');
    expect(rows).not.toContain('\u009b');
    expect(rows).not.toContain('\u001b[2J');
  });

  it('wraps paragraphs at word boundaries to the width, keeping styles across the break', () => {
    const rows = renderMarkdown('**one two three four five six**', 12);
    expect(rows.map(plain)).toEqual(['one two', 'three four', 'five six']);
    for (const row of rows) expect(row).toContain(BOLD);
  });

  it('renders a whole answer with no Markdown markers left and no row wider than the screen', () => {
    for (const width of [30, 60, 100]) {
      const rows = renderMarkdown(SAMPLE_ANSWER, width);
      const text = plain(rows.join('\n'));
      expect(text).not.toContain('**');
      expect(text).not.toContain('```');
      expect(text).not.toMatch(/^#/m);
      expect(text).not.toMatch(/^\|/m);
      for (const row of rows) expect(columns(row)).toBeLessThanOrEqual(width);
    }
  });

  it('keeps every row within the width, whatever the text', () => {
    fc.assert(
      fc.property(
        fc.string({
          unit: fc.constantFrom(
            'a',
            'b',
            ' ',
            '\n',
            '*',
            '`',
            '|',
            '-',
            '#',
            '>',
            '[',
            ']',
            '(',
            ')',
            '1',
            '.',
            '~',
            '中',
            '😀',
            'word ',
          ),
          maxLength: 300,
        }),
        fc.integer({ min: 8, max: 60 }),
        (text, width) => {
          for (const row of renderMarkdown(text, width)) expect(columns(row)).toBeLessThanOrEqual(width);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('styles one line of inline Markdown (summaries and short results)', () => {
    const line = renderInlineMarkdown('Wrote **hello.txt** with `echo`');
    expect(plain(line)).toBe('Wrote hello.txt with echo');
    expect(line).toContain(BOLD);
  });
});
