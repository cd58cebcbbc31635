import { createHash } from 'node:crypto';
import { access, realpath } from 'node:fs/promises';
import type { SessionRecord, SessionStore } from '../../store/index.js';
import { readManifest } from './manifest.js';
import { importedSessionId, type ImportSource } from './session-ids.js';

/**
 * Which Parley session a native file is imported into. A file's name (its native session id) is
 * not who it is: two folders may each hold a `<id>.jsonl` with another conversation in it (copied
 * fixtures, two machines' transcripts side by side). A session belongs to one file, known by its
 * path; the same file imported again finds its session, and another file of the same name gets a
 * session of its own, under the name's id with a hash of its path.
 *
 * One exception keeps a move from doubling a conversation: a file whose content carries the same
 * own id (`contentId`: a Claude Code transcript's first record uuid, a Gemini CLI session's id) as a
 * session's file that no longer exists is that file, moved (a restored home folder, a renamed
 * project folder); its session follows it.
 */

export interface ImportedFile {
  source: ImportSource;
  /** The native session id, as the file names it: the first choice of session id. */
  nativeSessionId: string;
  /** The file (or the seed-layout folder), absolute. */
  path: string;
  contentId?: string;
}

/** How many path-hash lengths are tried before two different files are declared indistinguishable. */
const HASH_LENGTHS = [10, 16, 32, 64];
/** The store's longest id. */
const MAX_ID = 200;

export async function sessionIdForFile(store: SessionStore, file: ImportedFile): Promise<string> {
  const first = importedSessionId(file.source, file.nativeSessionId);
  const candidates = [
    first,
    ...HASH_LENGTHS.map((length) => `${first.slice(0, MAX_ID - length - 1)}-${hashOf(file.path, length)}`),
  ];
  for (const candidate of candidates) {
    const existing = await store.getSession(candidate);
    if (existing === undefined || (await isSessionOf(store, existing, file))) return candidate;
  }
  // Only a SHA-256 collision of two paths gets here.
  throw new Error(`No free session id for ${file.path}: every candidate is taken by another file.`);
}

async function isSessionOf(store: SessionStore, record: SessionRecord, file: ImportedFile): Promise<boolean> {
  if (record.scope.kind !== 'imported' || record.scope.source !== file.source) return false;
  const path = record.scope.path;
  if (path === file.path) return true;
  const [known, given] = await Promise.all([realOf(path), realOf(file.path)]);
  if (known !== undefined && known === given) return true;
  if (file.contentId === undefined || known !== undefined) return false;
  // The session's file is gone: this one is it, moved, when its content says so.
  const manifest = await readManifest(store, record.sessionId);
  return manifest?.contentId === file.contentId;
}

/** The real path of a file that exists, else undefined. */
async function realOf(path: string): Promise<string | undefined> {
  try {
    await access(path);
    return await realpath(path);
  } catch {
    return undefined;
  }
}

function hashOf(path: string, length: number): string {
  return createHash('sha256').update(path).digest('hex').slice(0, length);
}
