import { afterEach, describe, expect, it, vi } from 'vitest';
import { checkSystemPart, inCi, type SystemPart } from './system-part.js';

const absent: SystemPart = {
  name: 'tmux',
  purpose: "the terminal UI's end-to-end tests",
  install: 'apt-get install -y tmux',
  present: () => false,
};

afterEach(() => {
  vi.restoreAllMocks();
});

describe('end-to-end tests that need a system part', () => {
  it('run when the part is present, in CI or not', () => {
    const present = { ...absent, present: () => true };
    expect(checkSystemPart(present, {})).toEqual({ skip: false, reason: '' });
    expect(checkSystemPart(present, { CI: 'true' })).toEqual({ skip: false, reason: '' });
  });

  it('are skipped outside CI with one visible line that says what to install', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const check = checkSystemPart(absent, {});
    expect(check.skip).toBe(true);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]?.[0]).toBe(
      "SKIPPED: tmux is not installed: skipped the terminal UI's end-to-end tests. Install it with `apt-get install -y tmux` (.ci/run does).",
    );
  });

  it('fail in CI, where .ci/run installs every part', () => {
    expect(() => checkSystemPart(absent, { CI: 'true' })).toThrow(
      /tmux is not installed.*In CI \(CI=true\) the tests that need tmux must run/,
    );
  });

  it('read CI the way CI services set it', () => {
    expect(inCi({ CI: 'true' })).toBe(true);
    expect(inCi({ CI: '1' })).toBe(true);
    expect(inCi({ CI: 'false' })).toBe(false);
    expect(inCi({ CI: '0' })).toBe(false);
    expect(inCi({ CI: '' })).toBe(false);
    expect(inCi({})).toBe(false);
  });
});
