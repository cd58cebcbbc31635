import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import type { StoreLocation } from './store-location.js';

/** The draft layer's files in a data folder (src/draft/README.md): drafts, projects, tasks and roles. */
const DRAFT_LAYER_ENTRIES = ['project.json', 'projects.json', 'projects', 'tasks', 'roles'] as const;

export interface DraftLayerMigration {
  /** False until the draft layer has a store interface with a PostgreSQL implementation to copy into. */
  copied: boolean;
  /** The draft layer's entries found in the source folder (not copied). */
  notCopied: string[];
  message: string;
}

/**
 * The second step of `parley migrate`: drafts, projects, tasks and roles. They are still files the
 * draft layer reads from the data folder itself; they move behind a `DraftStore` (file and memory
 * implementations first, PostgreSQL later). Until that lands this step copies nothing and says so,
 * naming what it leaves behind. When it lands, this is where the two DraftStores are opened and copied.
 */
export async function migrateDraftLayer(from: StoreLocation, to: StoreLocation): Promise<DraftLayerMigration> {
  if (from.kind === 'postgres') {
    return {
      copied: false,
      notCopied: [],
      message: 'Drafts, projects, tasks and roles are not copied: Parley does not keep them in PostgreSQL yet, so the source database holds none.',
    };
  }
  const found: string[] = [];
  for (const entry of DRAFT_LAYER_ENTRIES) {
    if (await exists(join(from.dataDir, entry))) found.push(entry);
  }
  if (found.length === 0) {
    return { copied: false, notCopied: [], message: `Drafts, projects, tasks and roles are not copied yet by parley migrate; ${from.dataDir} holds none of their files.` };
  }
  return {
    copied: false,
    notCopied: found,
    message:
      `Drafts, projects, tasks and roles were NOT copied (${found.join(', ')} in ${from.dataDir}): parley migrate cannot copy them yet ` +
      '(the draft layer still reads them from its data folder; a store interface for them is coming). ' +
      (to.kind === 'folder'
        ? `Copy those entries into ${to.dataDir} yourself if you need them there.`
        : 'Parley has no PostgreSQL store for them yet: keep them in the data folder of the server that uses them.'),
  };
}

async function exists(path: string): Promise<boolean> {
  try {
    await fs.stat(path);
    return true;
  } catch {
    return false;
  }
}
