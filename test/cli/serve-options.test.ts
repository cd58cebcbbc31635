import { describe, expect, it } from 'vitest';
import { parseMaxLiveSessions, parseSessionIdle } from '../../src/cli/commands/serve.js';

describe('parley serve memory options', () => {
  it('reads --session-idle as seconds', () => {
    expect(parseSessionIdle('600')).toBe(600);
    expect(parseSessionIdle('0.5')).toBe(0.5);
  });

  it.each(['0', '-5', 'ten', ''])('refuses --session-idle "%s", saying what it takes', (value) => {
    expect(() => parseSessionIdle(value)).toThrow(/--session-idle must be a number of seconds above 0/);
  });

  it('reads --max-live-sessions as a count', () => {
    expect(parseMaxLiveSessions('200')).toBe(200);
  });

  it.each(['0', '1.5', '-1', 'many'])('refuses --max-live-sessions "%s", saying what it takes', (value) => {
    expect(() => parseMaxLiveSessions(value)).toThrow(/--max-live-sessions must be a whole number above 0/);
  });
});
