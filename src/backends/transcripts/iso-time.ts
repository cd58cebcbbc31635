/**
 * Milliseconds since the epoch of a transcript's timestamp, as `Date.parse` gives them, but read
 * by hand for the one shape transcripts write (`YYYY-MM-DDTHH:MM:SS.sssZ`, from `toISOString`):
 * the import's scan reads every record's time, and `Date.parse` showed in its profile. Anything
 * else — another shape, an offset, a day the month does not have, a year before 1970 — goes to
 * `Date.parse`, so the result is always `Date.parse`'s.
 */
export function parseTimestamp(text: string): number {
  if (text.length !== 24 || text.charCodeAt(23) !== Z) return Date.parse(text);
  if (text.charCodeAt(4) !== DASH || text.charCodeAt(7) !== DASH || text.charCodeAt(10) !== T) return Date.parse(text);
  if (text.charCodeAt(13) !== COLON || text.charCodeAt(16) !== COLON || text.charCodeAt(19) !== DOT)
    return Date.parse(text);
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  const hour = digits(text, 11, 2);
  const minute = digits(text, 14, 2);
  const second = digits(text, 17, 2);
  const millisecond = digits(text, 20, 3);
  // `digits` gives -1 for a non-digit; these ranges exclude it and every value Date.parse treats specially.
  if (year < 1970 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return Date.parse(text);
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59 || millisecond < 0)
    return Date.parse(text);
  return (((daysSinceEpoch(year, month, day) * 24 + hour) * 60 + minute) * 60 + second) * 1000 + millisecond;
}

const Z = 0x5a;
const T = 0x54;
const DASH = 0x2d;
const COLON = 0x3a;
const DOT = 0x2e;
const ZERO = 0x30;

/** The decimal number written by `length` characters from `start`; -1 when one is not a digit. */
function digits(text: string, start: number, length: number): number {
  let value = 0;
  for (let index = start; index < start + length; index++) {
    const digit = text.charCodeAt(index) - ZERO;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysIn(year: number, month: number): number {
  return month === 2 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month - 1]!;
}

/** Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's `days_from_civil`). */
function daysSinceEpoch(year: number, month: number, day: number): number {
  const shiftedYear = month <= 2 ? year - 1 : year;
  const era = Math.floor(shiftedYear / 400);
  const yearOfEra = shiftedYear - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146097 + dayOfEra - 719468;
}
