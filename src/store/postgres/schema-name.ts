import { ValidationError } from '../../conversation/index.js';

/** PostgreSQL truncates identifiers beyond 63 bytes. */
const MAX_IDENTIFIER_BYTES = 63;

/** A schema name the stores can quote and use: 1–63 bytes, no NUL. */
export function checkSchemaName(schema: unknown): string {
  if (
    typeof schema !== 'string' ||
    schema === '' ||
    Buffer.byteLength(schema) > MAX_IDENTIFIER_BYTES ||
    schema.includes('\0')
  ) {
    throw new ValidationError(
      `Invalid PostgreSQL schema name ${JSON.stringify(schema)}: it must be 1–${MAX_IDENTIFIER_BYTES} bytes with no NUL character.`,
      { data: { field: 'schema', value: schema } },
    );
  }
  return schema;
}
