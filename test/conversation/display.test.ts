import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  firstDraftNotice,
  formatCount,
  oneLine,
  TASK_TITLE_MAX,
  taskTitleFromMessage,
} from '../../src/conversation/index.js';

describe('taskTitleFromMessage: a task title from a first message', () => {
  it('is the first line, white space collapsed, trailing punctuation dropped', () => {
    expect(taskTitleFromMessage('Fix the login bug.')).toBe('Fix the login bug');
    expect(taskTitleFromMessage('\n\n  Fix   the\tlogin bug  \nIt fails after the redirect.')).toBe(
      'Fix the login bug',
    );
    expect(taskTitleFromMessage('Why does the login fail?')).toBe('Why does the login fail');
    expect(taskTitleFromMessage('Add dark mode…')).toBe('Add dark mode');
  });

  it('cuts a long line at a word boundary, never past the limit', () => {
    const message =
      'Please look into why the nightly export job sometimes writes an empty CSV file to the shared drive';
    const title = taskTitleFromMessage(message);
    expect(title).toBe('Please look into why the nightly export job sometimes writes');
    expect(title.length).toBeLessThanOrEqual(TASK_TITLE_MAX);
    expect(message.startsWith(title)).toBe(true);
    expect(taskTitleFromMessage('one two three four', 9)).toBe('one two');
    // A word ending exactly at the limit is kept whole.
    expect(taskTitleFromMessage('one two three four', 13)).toBe('one two three');
  });

  it('cuts a single word longer than the limit', () => {
    expect(taskTitleFromMessage('x'.repeat(100))).toBe('x'.repeat(TASK_TITLE_MAX));
    expect(taskTitleFromMessage('https://example.com/a/very/long/path/that/keeps/going/and/going/on', 20)).toBe(
      'https://example.com/',
    );
  });

  it('is "New task" when the message has no letters or digits', () => {
    expect(taskTitleFromMessage('???')).toBe('New task');
    expect(taskTitleFromMessage('   \n  ')).toBe('New task');
    expect(taskTitleFromMessage('Ünïcödé straße 2')).toBe('Ünïcödé straße 2');
  });
});

describe('firstDraftNotice', () => {
  it('says what was created and drafted, and how to change it', () => {
    expect(
      firstDraftNotice({
        role: 'product-analyst',
        taskSlug: 'fix-the-login-bug',
        createdTask: true,
        undraft: '/undraft',
      }),
    ).toBe(
      "Created task fix-the-login-bug and drafted product-analyst on it (the project's default role; /undraft to change).",
    );
    expect(firstDraftNotice({ role: 'dev', taskSlug: 'demo', createdTask: false, undraft: 'Undraft' })).toBe(
      "Drafted dev on task demo (the project's default role; Undraft to change).",
    );
  });
});

describe('oneLine', () => {
  /** What oneLine promises, computed on the whole text. */
  const reference = (text: string, max: number): string => {
    const flat = text.replace(/\s+/g, ' ').trim();
    if (max <= 1) return flat.slice(0, Math.max(0, max));
    return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
  };

  it('gives the whole text flattened and cut, though it reads only as much of it as it shows', () => {
    // Every code unit \s matches, and some it does not (a zero-width space, a lone surrogate).
    const spaces = [
      '\t',
      '\n',
      '\v',
      '\f',
      '\r',
      ' ',
      '\u00a0',
      '\u1680',
      '\u2000',
      '\u2005',
      '\u200a',
      '\u2028',
      '\u2029',
      '\u202f',
      '\u205f',
      '\u3000',
      '\ufeff',
    ];
    const others = ['\u200b', '\u0085', '\u180e', '\ud83d', '😀', '…', 'x'];
    const pieces = fc.array(
      fc.oneof(
        fc.string({ maxLength: 30 }),
        fc.constantFrom(' ', '\n', '\t\t', ' '.repeat(300), 'word', 'x'.repeat(300)),
        fc.constantFrom(...spaces, ...others),
      ),
      { maxLength: 60 },
    );
    fc.assert(
      fc.property(pieces, fc.integer({ min: -2, max: 200 }), (parts, max) => {
        const text = parts.join('');
        expect(oneLine(text, max)).toBe(reference(text, max));
      }),
    );
    expect(oneLine(`${' '.repeat(10_000)}start ${'x'.repeat(1_000_000)}`, 10)).toBe('start xxx…');
  });
});

describe('formatCount', () => {
  it('groups digits by three with commas, rounding first, as en-US does', () => {
    expect(formatCount(0)).toBe('0');
    expect(formatCount(999)).toBe('999');
    expect(formatCount(1_000)).toBe('1,000');
    expect(formatCount(11_700.4)).toBe('11,700');
    expect(formatCount(-1_234_567)).toBe('-1,234,567');
  });

  it('reads the same as toLocaleString for every integer (property)', () => {
    fc.assert(
      fc.property(fc.double({ min: -1e15, max: 1e15, noNaN: true }), (value) => {
        // Intl writes -0 as "-0"; a count of nothing is "0" here.
        expect(formatCount(value)).toBe((Math.round(value) + 0).toLocaleString('en-US'));
      }),
      { numRuns: 2_000, seed: 7 },
    );
  });
});
