import '../terminal-env.js';
import { describe, expect, it } from 'vitest';
import { renderMarkdown } from '../../../../src/ui/tui/render/markdown.js';
import { closeOpenInline, renderStreamingMarkdown } from '../../../../src/ui/tui/render/markdown-stream.js';
import { columns } from '../../../../src/ui/tui/render/terminal-text.js';
import { plain } from '../app-rig.js';
import { SAMPLE_ANSWER } from './sample-answer.js';

function screen(text: string, width = 60): string {
  return plain(renderStreamingMarkdown(text, width).join('\n'));
}

describe('Markdown while it streams', () => {
  it('shows every prefix of an answer without raw markers: no **, no backticks, no pipes, no row past the width', () => {
    for (let end = 1; end <= SAMPLE_ANSWER.length; end++) {
      const prefix = SAMPLE_ANSWER.slice(0, end);
      const rows = renderStreamingMarkdown(prefix, 50);
      const text = plain(rows.join('\n'));
      const where = `after ${JSON.stringify(prefix.slice(-30))}`;
      expect(text, where).not.toContain('**');
      expect(text, where).not.toContain('`');
      expect(text, where).not.toMatch(/^\s*\|/m);
      expect(text, where).not.toContain('](');
      for (const row of rows) expect(columns(row), where).toBeLessThanOrEqual(50);
    }
  });

  it('after streaming chunk by chunk, shows the answer exactly as the history prints it', () => {
    let rows: string[] = [];
    for (let end = 7; end < SAMPLE_ANSWER.length + 7; end += 7)
      rows = renderStreamingMarkdown(SAMPLE_ANSWER.slice(0, end), 64);
    expect(rows).toEqual(renderMarkdown(SAMPLE_ANSWER, 64));
    // A list item arriving after a blank line joins the list above it (the list is lexed again).
    renderStreamingMarkdown('Intro\n\n- one\n\n', 40);
    expect(screen('Intro\n\n- one\n\n- two', 40)).toBe('Intro\n\n• one\n\n• two');
  });

  it('renders a finished answer exactly as the history does', () => {
    expect(renderStreamingMarkdown(SAMPLE_ANSWER, 70)).toEqual(renderMarkdown(SAMPLE_ANSWER, 70));
  });

  it('shows an open fence as code up to the end, highlighted, and holds back a fence still being typed', () => {
    expect(screen('Intro\n\n```ts\nconst a = 1;\nfunction')).toBe('Intro\n\nts\n  const a = 1;\n  function');
    expect(screen('Intro\n\n``')).toBe('Intro');
    expect(screen('Intro\n\n```')).toBe('Intro\n\n');
  });

  it('holds table rows back until the delimiter row arrives, then draws the rows so far as a table', () => {
    expect(screen('Intro\n\n| a | b |')).toBe('Intro\n\n┌ table…');
    expect(screen('Intro\n\n| a | b |\n|--')).toBe('Intro\n\n┌ table…');
    expect(screen('| a | b |\n|---|---|\n| 1 | 2 |\n| 3')).toBe(
      ['┌───┬───┐', '│ a │ b │', '├───┼───┤', '│ 1 │ 2 │', '│ 3 │   │', '└───┴───┘'].join('\n'),
    );
  });

  it('closes emphasis, strikethrough and code spans that are still open, and shows a link whose address is arriving as its text', () => {
    expect(screen('Some **bold te')).toBe('Some bold te');
    expect(renderStreamingMarkdown('Some **bold te', 60)[0]).toContain('\u001b[1mbold te');
    expect(screen('A `code sp')).toBe('A code sp');
    expect(screen('An *emph')).toBe('An emph');
    expect(screen('Old ~~gone')).toBe('Old gone');
    expect(screen('See [the docs](https://exa')).toBe('See the docs');
    expect(screen('- item **one')).toBe('• item one');
  });

  it('does not take list bullets or rules for emphasis', () => {
    expect(closeOpenInline('* one\n* two')).toBe('* one\n* two');
    expect(screen('Above\n\n***', 10)).toBe('Above\n\n──────────');
    expect(closeOpenInline('done **bold** and `code`')).toBe('done **bold** and `code`');
  });
});
