import { resolve } from 'node:path';
import { checkId } from '../validate.js';

/**
 * The project a DraftStore is opened for: the one `parley serve` runs in. The file store names it
 * after its `project.json` when there is one, else `name`.
 */
export interface DraftStoreHome {
  /** Its name (an id): by default the project folder's name made into an id. */
  name: string;
  /** The project folder. */
  path: string;
  /** Its data folder. */
  dataDir: string;
}

export function checkProjectInput(home: DraftStoreHome): DraftStoreHome {
  return { name: checkId(home.name, 'project'), path: resolve(home.path), dataDir: resolve(home.dataDir) };
}
