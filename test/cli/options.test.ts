import { afterEach, describe, expect, it } from 'vitest';
import { DRAFT_LEASE_VARIABLE, draftLeaseFromEnvironment } from '../../src/cli/options.js';

const saved = process.env[DRAFT_LEASE_VARIABLE];

afterEach(() => {
  if (saved === undefined) delete process.env[DRAFT_LEASE_VARIABLE];
  else process.env[DRAFT_LEASE_VARIABLE] = saved;
});

describe('PARLEY_DRAFT_LEASE_MS, read by parley serve and the TUI’s own server', () => {
  it('is the default (undefined) when unset or empty', () => {
    delete process.env[DRAFT_LEASE_VARIABLE];
    expect(draftLeaseFromEnvironment(86_400_000)).toBeUndefined();
    process.env[DRAFT_LEASE_VARIABLE] = '  ';
    expect(draftLeaseFromEnvironment(86_400_000)).toBeUndefined();
  });

  it('takes a whole number of milliseconds within the bounds', () => {
    process.env[DRAFT_LEASE_VARIABLE] = '2000';
    expect(draftLeaseFromEnvironment(86_400_000)).toBe(2000);
  });

  it.each(['soon', '500', '1.5e3', '90000000'])('refuses %s, naming the variable and the bounds', (value) => {
    process.env[DRAFT_LEASE_VARIABLE] = value;
    expect(() => draftLeaseFromEnvironment(86_400_000)).toThrow(
      /PARLEY_DRAFT_LEASE_MS must be a whole number of milliseconds from 1000 to 86400000/,
    );
  });
});
