import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { splitMarkdown, type MarkdownSplit } from '../../../src/ui/web/markdown/blocks.js';
import {
  escapeHtml,
  fenceLanguage,
  isLinkable,
  isPlainLine,
  markdownToHtml,
  tokensToHtml,
} from '../../../src/ui/web/markdown/render.js';

/** An answer the way models write them: every block kind the chat shows. */
const ANSWER = [
  '## Plan',
  '',
  'The parser **rejects** empty input and _names_ the value it refused; see `parse()`.',
  '',
  '| flag | meaning |',
  '|:-----|--------:|',
  '| `--verbose` | more output |',
  '| `--help` | usage |',
  '',
  '- [x] read `src/args.ts`',
  '- [ ] write the test',
  '',
  '  with a note under the item',
  '',
  '1. one',
  '2. two',
  '',
  '```ts',
  'export function parse(text: string): Date {',
  '',
  '  return new Date(text);',
  '}',
  '```',
  '',
  '> quoted',
  'lazily continued',
  '',
  'Setext heading',
  '==============',
  '',
  '    indented code',
  '',
  '---',
  '',
  'See https://example.com and [the docs](https://docs.example.com "Docs").',
].join('\n');

function renderSplit(split: MarkdownSplit): string {
  return split.finished.map((chunk) => tokensToHtml(chunk.tokens)).join('') + tokensToHtml(split.open);
}

describe('Markdown rendering (render.ts)', () => {
  it('renders GitHub tables, task lists, fences with their language and a copy button, and web links that open in a new tab without a referrer', () => {
    const html = markdownToHtml(ANSWER);
    expect(html).toContain('<table>');
    expect(html).toContain('<th align="left">flag</th>');
    expect(html).toContain('<input checked="" disabled="" type="checkbox">');
    expect(html).toContain('<code class="language-ts" data-lang="ts">export function parse(text: string): Date {');
    expect(html).toContain('<button type="button" class="copy-code" aria-label="Copy code">Copy</button>');
    expect(html).toContain(
      '<a href="https://docs.example.com" title="Docs" target="_blank" rel="noopener noreferrer">the docs</a>',
    );
    expect(html).toContain(
      '<a href="https://example.com" target="_blank" rel="noopener noreferrer">https://example.com</a>',
    );
    expect(html).toContain('<h2>Plan</h2>');
    expect(html).toContain('<h1>Setext heading</h1>');
  });

  it('shows raw HTML as text: script tags, event-handler attributes and iframes never become elements', () => {
    for (const payload of [
      '<script>alert(1)</script>',
      '<img src=x onerror=alert(1)>',
      '<iframe src="javascript:alert(1)"></iframe>',
      'inline <b onmouseover="alert(1)">bold</b> tag',
      '<div>\n<svg onload=alert(1)>\n</div>',
    ]) {
      const html = markdownToHtml(payload);
      expect(html).not.toMatch(/<(script|img|iframe|b|svg|div)\b/i);
      expect(html).toContain('&lt;');
    }
  });

  it('makes javascript:, data: and relative links inert text, whatever their case or padding', () => {
    for (const href of [
      'javascript:alert(1)',
      'JaVaScRiPt:alert(1)',
      ' javascript:alert(1)',
      'data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==',
      'vbscript:msgbox',
      'src/app.ts',
    ]) {
      const html = markdownToHtml(`[click me](${href.includes(' ') ? `<${href}>` : href})`);
      expect(html).not.toContain('<a ');
      expect(html).toContain('class="md-inert-link"');
      expect(html).toContain('click me');
    }
    expect(isLinkable('mailto:dev@example.com')).toBe(true);
    expect(isLinkable('http://example.com')).toBe(true);
    expect(isLinkable('javascript:alert(1)')).toBe(false);
  });

  it('never emits an image: an HTTPS image is a button to load it, any other is its alt text', () => {
    const remote = markdownToHtml('![build status](https://tracker.example/pixel.png?user=1)');
    expect(remote).not.toMatch(/<img/i);
    expect(remote).toContain(
      '<button type="button" class="md-image" data-src="https://tracker.example/pixel.png?user=1" data-alt="build status"',
    );
    expect(remote).toContain('Load image: build status (tracker.example)');
    for (const source of [
      'http://tracker.example/pixel.png',
      'data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+',
      'javascript:alert(1)',
      'diagram.png',
    ]) {
      const html = markdownToHtml(`![diagram](${source})`);
      expect(html).not.toMatch(/<img|<button/i);
      expect(html).toContain('[image: diagram]');
    }
  });

  it('escapes code and keeps odd fence info strings out of attributes', () => {
    const html = markdownToHtml('```"><script>alert(1)</script>\n<b>x</b>\n```');
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;b&gt;x&lt;/b&gt;');
    expect(fenceLanguage('TypeScript title="a.ts"')).toBe('typescript');
    expect(fenceLanguage('c++')).toBe('c++');
    expect(fenceLanguage('"><x')).toBe('');
  });

  it('a line it calls plain renders as exactly one paragraph of that text, so the page may skip the parser for it', () => {
    expect(isPlainLine('Question 12: what changed in the parser?')).toBe(true);
    for (const marked of [
      '**bold**',
      '1. item',
      '- item',
      '# title',
      'see https://example.com',
      'mail dev@example.com',
      'a <b> tag',
      'two\nlines',
      '',
    ])
      expect(isPlainLine(marked)).toBe(false);
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 80 }),
          fc.string({ unit: 'grapheme', maxLength: 40 }),
          fc.stringMatching(/^[A-Za-z][A-Za-z0-9 ,.;:?'"()-]{0,60}$/),
        ),
        (text) => {
          if (isPlainLine(text)) expect(markdownToHtml(text)).toBe(`<p>${escapeHtml(text)}</p>\n`);
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('turns single newlines into line breaks only when asked (for what people type)', () => {
    expect(markdownToHtml('one\ntwo', { breaks: true })).toContain('one<br>two');
    expect(markdownToHtml('one\ntwo')).not.toContain('<br>');
  });
});

describe('streaming split (blocks.ts)', () => {
  it('keeps every block but the last as finished, and the open tail is the block still growing', () => {
    const midFence = splitMarkdown('Intro paragraph.\n\n```ts\nconst a = 1;\n');
    expect(midFence.finished.map((chunk) => chunk.tokens[0]!.type)).toEqual(['paragraph']);
    expect(midFence.open[0]!.type).toBe('code');
    const midTable = splitMarkdown('## Flags\n\n| a | b |\n|---|---|\n| 1 |');
    expect(midTable.finished.map((chunk) => chunk.tokens[0]!.type)).toEqual(['heading']);
    expect(midTable.open[0]!.type).toBe('table');
    // A paragraph can still turn into a setext heading: it stays open.
    expect(splitMarkdown('Title\n').finished).toEqual([]);
  });

  it('re-lexes only the tail: finished chunks of the earlier split are the same objects', () => {
    const first = splitMarkdown('One.\n\nTwo.\n\nThr');
    const second = splitMarkdown('One.\n\nTwo.\n\nThree.\n\n- a', first);
    expect(second.finished.slice(0, first.finished.length)).toEqual(first.finished);
    second.finished
      .slice(0, first.finished.length)
      .forEach((chunk, index) => expect(chunk).toBe(first.finished[index]));
    expect(second.finished).toHaveLength(3);
    // Text that does not extend the earlier one is split afresh.
    const other = splitMarkdown('Different.', second);
    expect(other.finished).toEqual([]);
    expect(other.openFrom).toBe(0);
  });

  it('streamed in any pieces, renders exactly what the whole text renders', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: ANSWER.length - 1 }), { maxLength: 30 }), (cuts) => {
        const points = [...new Set(cuts)].sort((a, b) => a - b);
        let split: MarkdownSplit | undefined;
        for (const point of [...points, ANSWER.length]) {
          split = splitMarkdown(ANSWER.slice(0, point), split);
          expect(split.finished.map((chunk) => chunk.raw).join('')).toBe(ANSWER.slice(0, split.openFrom));
        }
        expect(renderSplit(split!)).toBe(markdownToHtml(ANSWER));
      }),
      { numRuns: 200 },
    );
  });

  it('reads CRLF text as LF', () => {
    const split = splitMarkdown('One.\r\n\r\nTwo.');
    expect(split.source).toBe('One.\n\nTwo.');
    expect(split.finished).toHaveLength(1);
  });
});
