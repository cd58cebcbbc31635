import { describe, expect, it } from 'vitest';
import {
  describeInput,
  formatCost,
  formatDuration,
  formatPercent,
  oneLine,
  shortResult,
  tailRows,
  wrapRows,
} from '../../../src/ui/tui/format.js';

describe('formatting', () => {
  it('writes percent, cost and durations the way the title bar and /context show them', () => {
    expect(formatPercent(34.4)).toBe('34%');
    expect(formatPercent(0)).toBe('0%');
    expect(formatPercent(0.2)).toBe('<1%');
    expect(formatPercent(null)).toBe('–');
    expect(formatCost(0.234)).toBe('$0.23');
    expect(formatCost(1.5, true)).toBe('$1.50+');
    expect(formatDuration(999)).toBe('0s');
    expect(formatDuration(61_000)).toBe('1m 01s');
    expect(formatDuration(3_723_000)).toBe('1h 02m');
  });

  it('cuts text to the rows a terminal shows, keeping the last ones', () => {
    expect(wrapRows('abcdef\n\nxy', 4)).toEqual(['abcd', 'ef', '', 'xy']);
    expect(wrapRows('the quick brown fox', 10)).toEqual(['the quick', 'brown fox']);
    expect(tailRows('one\ntwo\nthree\nfour', 80, 2)).toEqual({ rows: ['three', 'four'], hidden: 2 });
    expect(tailRows('short', 80, 5)).toEqual({ rows: ['short'], hidden: 0 });
  });

  it('summarizes tool inputs and results on one line', () => {
    expect(describeInput({ path: 'a.txt', lines: [1, 2] }, 80)).toBe('path: "a.txt", lines: [1,2]');
    expect(shortResult('first line\nsecond\nthird', 80)).toBe('first line (+2 lines)');
    expect(shortResult('{\n  "ok": true\n}', 80)).toBe('{ "ok": true }');
    expect(shortResult('', 80)).toBe('(empty)');
    expect(oneLine('a   b\n c', 4)).toBe('a b…');
  });
});
