import * as z from 'zod';

// What every record a store persists shares, whichever contract it belongs to.

/**
 * The version of the records a store persists. Every file carries `formatVersion`; a reader that meets
 * a newer version refuses it with a clear error instead of guessing.
 */
export const FORMAT_VERSION = 1;

/** Ids and slugs: letters, digits, `.`, `_`, `-`; no leading dot; at most 200 characters. Nothing can leave the data folder. */
export const ID_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,199}$/;
export const IdSchema = z
  .string()
  .regex(ID_PATTERN, 'must be 1–200 letters, digits, ".", "_" or "-", not starting with "." or "-"')
  .refine((value) => !value.includes('..'), 'must not contain ".."');
