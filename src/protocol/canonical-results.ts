import { isCanonicalStreamEvent } from '../conversation/index.js';
import type { MethodName, MethodResult } from './methods.js';

/**
 * Results a client may take as they are, skipping the method's schema, because a check made for
 * them says the schema would accept them unchanged. Only `get_events` has one: a history page
 * holds up to 5,000 events, and where zod cannot compile (a page whose CSP forbids eval) its
 * schema is interpreted, a cost bench/web.bench.ts's floor avoids the same way. A check that says
 * no is not a refusal: the schema then decides, with its own errors, so what is accepted and what
 * is refused stays exactly the schema's.
 */
export const canonicalResultChecks: { [Method in MethodName]?: (value: unknown) => value is MethodResult<Method> } = {
  get_events: isCanonicalEventPage,
};

const EVENT_PAGE_KEYS = new Set(['events', 'lastSeq', 'hasMore']);

/** A `get_events` result that `GetEventsResultSchema` would return unchanged. */
export function isCanonicalEventPage(value: unknown): value is MethodResult<'get_events'> {
  if (typeof value !== 'object' || value === null || Object.getPrototypeOf(value) !== Object.prototype) return false;
  const page = value as Record<string, unknown>;
  for (const key in page) if (!EVENT_PAGE_KEYS.has(key) || page[key] === undefined) return false;
  const { events, lastSeq, hasMore } = page;
  if (
    typeof lastSeq !== 'number' ||
    !Number.isSafeInteger(lastSeq) ||
    lastSeq < -1 ||
    typeof hasMore !== 'boolean' ||
    !Array.isArray(events)
  )
    return false;
  for (const event of events) if (!isCanonicalStreamEvent(event)) return false;
  return true;
}
