import { createHash } from 'node:crypto';
import { ID_PATTERN } from '../../store/index.js';

/** The id prefix of each import source: the same native session always maps to the same Parley id. */
export const IMPORT_ID_PREFIX = {
  'claude-code': 'cc',
  'gemini-cli': 'gem',
  'seed-layout': 'seed',
  codex: 'codex',
} as const;
export type ImportSource = keyof typeof IMPORT_ID_PREFIX;

/**
 * `cc-<nativeId>`, `gem-<nativeId>`, `seed-<nativeId>`, `codex-<thread id>`. Native ids are UUIDs or seed 003's
 * `{agentType}-feature-{featureId}`; anything outside the store's id alphabet is replaced, and a
 * short hash of the original keeps two different native ids from colliding.
 */
export function importedSessionId(source: ImportSource, nativeId: string): string {
  const candidate = `${IMPORT_ID_PREFIX[source]}-${nativeId}`;
  if (ID_PATTERN.test(candidate) && !candidate.includes('..')) return candidate;
  const hash = createHash('sha256').update(nativeId).digest('hex').slice(0, 10);
  const cleaned = candidate
    .replace(/[^A-Za-z0-9._-]/g, '-')
    .replace(/\.{2,}/g, '.')
    .slice(0, 180);
  return `${cleaned}-${hash}`;
}

/** A transcript name the store accepts (`agent-<id>.jsonl`, `chat.json`). */
export function transcriptName(name: string): string {
  const cleaned = name
    .replace(/[^A-Za-z0-9._-]/g, '-')
    .replace(/\.{2,}/g, '.')
    .replace(/^[.-]+/, '');
  return (cleaned.length > 0 ? cleaned : 'transcript').slice(0, 200);
}
