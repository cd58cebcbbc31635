/**
 * JSON with object keys sorted at every depth, so two stores that return the same record with its
 * keys in another order (the PostgreSQL store adds `sessionId` and `seq` last; the file store keeps
 * them where the line had them) give the same text. `undefined` members are left out, as
 * `JSON.stringify` does; the result is valid JSON. This is the text `parley migrate` compares and
 * hashes.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const member = (value as Record<string, unknown>)[key];
    if (member !== undefined) sorted[key] = sortKeys(member);
  }
  return sorted;
}

/** True when both hold the same JSON data, whatever the order of their keys. */
export function sameJson(left: unknown, right: unknown): boolean {
  return canonicalJson(left) === canonicalJson(right);
}
