import type { SessionStore } from '../../store/index.js';
import type { FileFingerprint } from './read-file.js';
import type { ImportSource } from './session-ids.js';

/**
 * Kept with each imported session (as a transcript named `import-manifest.json`): what was read,
 * for re-imports, and whether the session's events are still to be built from its native copy.
 */
export interface ImportManifest {
  importFormat: number;
  source: ImportSource;
  importedAt: string;
  files: FileFingerprint[];
  copied: string[];
  blocks: number;
  subagents: number;
  checkpointBlockId?: string;
  /** The main file's own id in its content (see `session-identity.ts`): how a moved file finds its session. */
  contentId?: string;
  /** Written by a live import (see `ImportOptions.live`): not final even if the files are unchanged. */
  live?: boolean;
  /**
   * Present while the session's events have not been built yet (a deferred import, see
   * `deferred-import.ts`): the transcript (by its name in the store) they are built from. The log
   * holds nothing the import wrote — or, after a crash while they were being built, a prefix of them.
   * Removed, in the same atomic write that records the built session, once every event is durable.
   */
  pendingEvents?: { transcript: string; file: string };
}

export const MANIFEST = 'import-manifest.json';
/** Bump when the parsers change what they produce: every session then re-imports as an update. */
export const IMPORT_FORMAT = 1;

export async function readManifest(store: SessionStore, sessionId: string): Promise<ImportManifest | undefined> {
  const text = await store.readTranscript(sessionId, MANIFEST);
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as ImportManifest;
    return typeof value === 'object' && value !== null && Array.isArray(value.files) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Replaces the manifest atomically (the store writes transcripts by write-temp, fsync, rename). */
export async function writeManifest(store: SessionStore, sessionId: string, manifest: ImportManifest): Promise<void> {
  await store.writeTranscript(sessionId, MANIFEST, manifestText(manifest));
}

/** The manifest as it is stored. */
export function manifestText(manifest: ImportManifest): string {
  return JSON.stringify(manifest, null, 2);
}
