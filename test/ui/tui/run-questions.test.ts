import { describe, expect, it } from 'vitest';
import { choiceFor, timeLeft } from '../../../src/ui/tui/run-questions.js';

describe('run questions in the TUI', () => {
  it('a number picks the choice it numbers, unless it is a choice itself or out of range', () => {
    const prompt = { choices: ['approve', 'reject', '7'] };
    expect(choiceFor(prompt, '2')).toBe('reject');
    expect(choiceFor(prompt, '7')).toBe('7');
    expect(choiceFor(prompt, '4')).toBe('4');
    expect(choiceFor(prompt, 'approve')).toBe('approve');
    expect(choiceFor({}, '1')).toBe('1');
  });

  it('the deadline reads as time left, down to the second, then overdue', () => {
    const deadline = '2026-01-01T02:00:00.000Z';
    expect(timeLeft(deadline, Date.parse('2026-01-01T00:00:00.000Z'))).toBe('2h 00m 00s left');
    expect(timeLeft(deadline, Date.parse('2026-01-01T01:55:04.500Z'))).toBe('4m 55s left');
    expect(timeLeft(deadline, Date.parse('2026-01-01T01:59:51.000Z'))).toBe('9s left');
    expect(timeLeft(deadline, Date.parse('2026-01-01T02:00:00.000Z'))).toBe('overdue');
  });
});
