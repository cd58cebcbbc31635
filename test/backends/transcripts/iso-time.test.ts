import { describe, expect, it } from 'vitest';
import { parseTimestamp } from '../../../src/backends/transcripts/iso-time.js';

/** Date.parse's answer (`toBe` compares with Object.is, so NaN matches NaN). */
const same = (text: string) => expect(parseTimestamp(text), text).toBe(Date.parse(text));

describe('parseTimestamp: Date.parse, read by hand for the usual shape', () => {
  it('gives Date.parse’s milliseconds for valid timestamps of the usual shape, across years, months and leap days', () => {
    for (const text of [
      '1970-01-01T00:00:00.000Z',
      '2026-01-01T00:00:00.000Z',
      '2026-11-26T03:48:42.123Z',
      '2024-02-29T23:59:59.999Z',
      '2000-02-29T12:00:00.500Z',
      '2100-03-01T00:00:00.001Z',
      '9999-12-31T23:59:59.999Z',
    ]) {
      same(text);
    }
    // Every day of a leap year and a common one, at an odd time of day.
    for (const year of [2023, 2024]) {
      for (let day = 0; day < 366; day++) {
        const text = new Date(Date.UTC(year, 0, 1 + day, 13, 7, 41, 9)).toISOString();
        same(text);
      }
    }
  });

  it('leaves odd but valid shapes to Date.parse, with its answer', () => {
    for (const text of [
      '2026-02-30T00:00:00.000Z', // V8 rolls an impossible day over
      '2026-04-31T00:00:00.000Z',
      '2026-01-01T24:00:00.000Z',
      '2026-01-01T00:00:00Z',
      '2026-01-01T00:00:00.000+02:00',
      '2026-01-01',
      '1969-12-31T23:59:59.999Z',
      '+002026-01-01T00:00:00.000Z',
      'Thu, 26 Nov 2026 03:48:42 GMT',
    ]) {
      same(text);
    }
  });

  it('gives NaN, as Date.parse does, for what is not a time', () => {
    for (const text of [
      '',
      'yesterday',
      '2026-13-01T00:00:00.000Z',
      '2026-00-10T00:00:00.000Z',
      '2026-01-01T23:59:60.000Z',
      '2026-01-01T00:60:00.000Z',
      '2026-01-01T00:00:00.0a0Z',
      '2026-01-01X00:00:00.000Z',
      '2026-01-00T00:00:00.000Z',
      '２026-01-01T00:00:00.000Z',
    ]) {
      same(text);
      expect(parseTimestamp(text), text).toBeNaN();
    }
  });
});
