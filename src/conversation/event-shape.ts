import type { StreamEvent } from './events.js';

/**
 * A fast check for stream events as the store writes them, for a client that reads thousands at
 * once where zod cannot compile its schemas (a page whose CSP forbids eval interprets them, one
 * event at a time; bench/web.bench.ts's floor reads with this check). `StreamEventSchema` stays
 * the one source of truth: this says yes only to what the schema accepts *and returns unchanged*
 * (every required field present with the right type, no key the schema would strip, no default it
 * would fill in), so a caller may use the value as it is. Anything else, valid or not, gets
 * `false`, which means "ask the schema": the schema then decides, and its errors are the ones a
 * user sees. test/conversation/event-shape.test.ts holds this to the schema on every shape and on
 * malformed variants of each.
 */
export function isCanonicalStreamEvent(value: unknown): value is StreamEvent {
  if (!isRecord(value)) return false;
  const event = value as Record<string, unknown>;
  if (!isId(event['sessionId']) || !isId(event['conversationId']) || !isCount(event['seq']) || !isCount(event['at']))
    return false;
  switch (event['type']) {
    case 'block_start':
    case 'block_complete':
      return onlyKeys(event, BLOCK_EVENT_KEYS) && isCanonicalBlock(event['block']);
    case 'text_delta':
      return onlyKeys(event, DELTA_EVENT_KEYS) && isId(event['blockId']) && typeof event['delta'] === 'string';
    case 'block_update':
      return onlyKeys(event, UPDATE_EVENT_KEYS) && isId(event['blockId']) && isPlainRecord(event['updates']);
    case 'metadata_update':
      return onlyKeys(event, METADATA_EVENT_KEYS) && isCanonicalMetadata(event['metadata']);
    default:
      return false;
  }
}

const ENVELOPE = ['sessionId', 'conversationId', 'seq', 'at', 'type'];
const BLOCK_EVENT_KEYS = new Set([...ENVELOPE, 'block']);
const DELTA_EVENT_KEYS = new Set([...ENVELOPE, 'blockId', 'delta']);
const UPDATE_EVENT_KEYS = new Set([...ENVELOPE, 'blockId', 'updates']);
const METADATA_EVENT_KEYS = new Set([...ENVELOPE, 'metadata']);

const BASE = ['type', 'id', 'seq', 'createdAt', 'updatedAt', 'completedAt'];
const BLOCK_KEYS: Record<string, ReadonlySet<string>> = {
  user_message: new Set([...BASE, 'content', 'pinned', 'metadata']),
  assistant_text: new Set([...BASE, 'content', 'model', 'metadata']),
  thinking: new Set([...BASE, 'content', 'redacted']),
  tool_use: new Set([...BASE, 'toolUseId', 'name', 'input', 'status', 'error']),
  tool_result: new Set([...BASE, 'toolUseId', 'content', 'output', 'isError']),
  system: new Set([...BASE, 'subtype', 'content', 'data']),
  subagent: new Set([...BASE, 'subagentId', 'name', 'input', 'status', 'output', 'usage', 'costUsd']),
};

const STATUSES = new Set(['pending', 'running', 'success', 'error']);
const SYSTEM_SUBTYPES = new Set([
  'info',
  'error',
  'session_start',
  'compaction',
  'cleared',
  'interrupted',
  'aborted',
  'subagent_start',
  'subagent_end',
  'unknown_record',
]);
const USAGE_KEYS = new Set(['inputTokens', 'outputTokens', 'cacheReadTokens', 'cacheWriteTokens']);
const METADATA_KEYS = new Set([
  'usage',
  'costUsd',
  'costUnknown',
  'costEstimated',
  'model',
  'contextWindow',
  'maxOutputTokens',
  'numTurns',
  'durationMs',
  'durationApiMs',
  'nativeSessionId',
  'stopReason',
  'estimatedInputTokens',
  'turnComplete',
]);

function isCanonicalBlock(value: unknown): boolean {
  if (!isRecord(value)) return false;
  const block = value as Record<string, unknown>;
  const type = block['type'];
  const keys = typeof type === 'string' ? BLOCK_KEYS[type] : undefined;
  if (keys === undefined || !onlyKeys(block, keys)) return false;
  if (!isId(block['id']) || !isCount(block['createdAt'])) return false;
  if (
    !optional(block['seq'], isCount) ||
    !optional(block['updatedAt'], isCount) ||
    !optional(block['completedAt'], isCount)
  )
    return false;
  switch (type) {
    case 'user_message':
      return (
        typeof block['content'] === 'string' &&
        optional(block['pinned'], isBoolean) &&
        optional(block['metadata'], isPlainRecord)
      );
    case 'assistant_text':
      return (
        typeof block['content'] === 'string' &&
        optional(block['model'], isString) &&
        optional(block['metadata'], isPlainRecord)
      );
    case 'thinking':
      return typeof block['content'] === 'string' && optional(block['redacted'], isBoolean);
    case 'tool_use':
      // `input` may hold anything, but the key is there (the store always writes it).
      return (
        isId(block['toolUseId']) &&
        typeof block['name'] === 'string' &&
        'input' in block &&
        isStatus(block['status']) &&
        optional(block['error'], isString)
      );
    case 'tool_result':
      // Without `isError` the schema fills in its default: not returned unchanged, so not ours to pass.
      return isId(block['toolUseId']) && typeof block['content'] === 'string' && typeof block['isError'] === 'boolean';
    case 'system':
      return (
        typeof block['subtype'] === 'string' &&
        SYSTEM_SUBTYPES.has(block['subtype']) &&
        typeof block['content'] === 'string'
      );
    case 'subagent':
      return (
        isId(block['subagentId']) &&
        typeof block['name'] === 'string' &&
        typeof block['input'] === 'string' &&
        isStatus(block['status']) &&
        optional(block['output'], isString) &&
        optional(block['usage'], isCanonicalUsage) &&
        optional(block['costUsd'], isNonNegative)
      );
    default:
      return false;
  }
}

function isCanonicalMetadata(value: unknown): boolean {
  if (!isRecord(value)) return false;
  const metadata = value as Record<string, unknown>;
  return (
    onlyKeys(metadata, METADATA_KEYS) &&
    optional(metadata['usage'], isCanonicalUsage) &&
    optional(metadata['costUsd'], isNonNegative) &&
    optional(metadata['costUnknown'], isBoolean) &&
    optional(metadata['costEstimated'], isBoolean) &&
    optional(metadata['model'], isString) &&
    optional(metadata['contextWindow'], isPositiveCount) &&
    optional(metadata['maxOutputTokens'], isPositiveCount) &&
    optional(metadata['numTurns'], isCount) &&
    optional(metadata['durationMs'], isNonNegative) &&
    optional(metadata['durationApiMs'], isNonNegative) &&
    optional(metadata['nativeSessionId'], isString) &&
    optional(metadata['stopReason'], isString) &&
    optional(metadata['estimatedInputTokens'], isNonNegative) &&
    optional(metadata['turnComplete'], isBoolean)
  );
}

/** All four counts present (a missing one gets the schema's default of 0: not unchanged). */
function isCanonicalUsage(value: unknown): boolean {
  if (!isRecord(value)) return false;
  const usage = value as Record<string, unknown>;
  return (
    onlyKeys(usage, USAGE_KEYS) &&
    isNonNegative(usage['inputTokens']) &&
    isNonNegative(usage['outputTokens']) &&
    isNonNegative(usage['cacheReadTokens']) &&
    isNonNegative(usage['cacheWriteTokens'])
  );
}

/** A plain object, as JSON.parse makes them (the schema would copy anything else into one). */
function isRecord(value: unknown): boolean {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

/**
 * A `z.record` the schema would copy key for key: a `__proto__` key (which JSON.parse makes an own
 * key) would not survive that copy, so such a record goes to the schema.
 */
function isPlainRecord(value: unknown): boolean {
  return isRecord(value) && !Object.prototype.hasOwnProperty.call(value, '__proto__');
}

/**
 * Every key is one the schema knows (an unknown one it would strip, `__proto__` included) and holds
 * a value: a key set to `undefined` (which JSON cannot carry) is left to the schema.
 */
function onlyKeys(value: Record<string, unknown>, allowed: ReadonlySet<string>): boolean {
  for (const key in value) if (!allowed.has(key) || value[key] === undefined) return false;
  return true;
}

function optional(value: unknown, check: (value: unknown) => boolean): boolean {
  return value === undefined || check(value);
}

function isId(value: unknown): boolean {
  return typeof value === 'string' && value.length > 0;
}

function isString(value: unknown): boolean {
  return typeof value === 'string';
}

function isBoolean(value: unknown): boolean {
  return typeof value === 'boolean';
}

function isStatus(value: unknown): boolean {
  return typeof value === 'string' && STATUSES.has(value);
}

function isCount(value: unknown): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function isPositiveCount(value: unknown): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

function isNonNegative(value: unknown): boolean {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}
