import { describe, expect, it } from 'vitest';
import { countdownText } from '../../../src/ui/web/views/runs-view.js';

describe("the Runs view's countdown", () => {
  it('reads as minutes and seconds, hours past an hour, then says the deadline passed', () => {
    const deadline = '2026-01-01T02:00:00.000Z';
    expect(countdownText(deadline, Date.parse('2026-01-01T01:55:55.400Z'))).toBe('Answer within 4:04.');
    expect(countdownText(deadline, Date.parse('2026-01-01T00:58:57.000Z'))).toBe('Answer within 1:01:03.');
    expect(countdownText(deadline, Date.parse('2026-01-01T02:00:00.000Z'))).toBe('The deadline has passed.');
    expect(countdownText('not a date', 0)).toBe('');
  });
});
