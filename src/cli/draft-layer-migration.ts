import { basename, dirname, resolve } from 'node:path';
import { slugify } from '../draft/index.js';
import {
  createFileDraftStore,
  createPostgresDraftStore,
  migrateDraftStore,
  type DraftLayerReport,
  type DraftStore,
  type DraftStoreHome,
  type DraftStoreSide,
} from '../store/index.js';
import type { StoreLocation } from './store-location.js';

export interface DraftLayerMigration {
  /** The name of the home project on both sides (see `migrateDraftLayer`). */
  home: string;
  report: DraftLayerReport;
}

/**
 * The second step of `parley migrate`: projects, tasks, drafts and role files, from the source's
 * DraftStore into the target's (`migrateDraftStore`). Run while both SessionStores are open, so a
 * data folder's `store.lock` keeps this process its only writer.
 *
 * Which project is home: the one a folder names, on both sides. A data folder's home is its own
 * project (named by its `project.json`, else after the project folder, the data folder's parent, as
 * `parley serve` there names it). A database has no home of its own (each server registers the one
 * it runs in), so:
 * - folder → database: the folder's home project is created in the database under its name, with
 *   its description and creation time; a server started in that project folder finds it as its home;
 * - database → folder: the database's project named as the target folder's home (its `project.json`,
 *   else its project folder) becomes that folder's home (its `project.json` is written); the others
 *   go under the folder's `projects/`;
 * - folder → folder: the target is opened for a home of the source's name; a target whose
 *   `project.json` names another home gets the source's home as a conflict;
 * - database → database: the home is the project named after the current folder, as `parley serve`
 *   here would name it; every project is copied by name either way.
 * Neither database is written on open (no home project registered): the source is only read.
 */
export async function migrateDraftLayer(from: StoreLocation, to: StoreLocation): Promise<DraftLayerMigration> {
  const opened: DraftStore[] = [];
  const open = async (location: StoreLocation, home: DraftStoreHome, reading: boolean): Promise<DraftStoreSide> => {
    const store =
      location.kind === 'folder'
        ? createFileDraftStore({ home })
        : await createPostgresDraftStore({
            connectionString: location.connectionString,
            schema: location.schema,
            home,
            registerHome: false,
            ...(reading ? { existingOnly: true } : {}),
          });
    opened.push(store);
    return { store, home };
  };
  try {
    let source: DraftStoreSide;
    let target: DraftStoreSide;
    let name: string;
    if (from.kind === 'folder') {
      source = await open(from, folderHome(from.dataDir), true);
      name = (await source.store.listProjects())[0]!.name;
      target = await open(
        to,
        to.kind === 'folder' ? { ...folderHome(to.dataDir), name } : { ...source.home, name },
        false,
      );
    } else if (to.kind === 'folder') {
      target = await open(to, folderHome(to.dataDir), false);
      name = (await target.store.listProjects())[0]!.name;
      source = await open(from, { ...target.home, name }, true);
    } else {
      const here = resolve('.');
      const home = { name: slugify(basename(here)) ?? 'project', path: here, dataDir: resolve(here, '.parley') };
      name = home.name;
      source = await open(from, home, true);
      target = await open(to, home, false);
    }
    return { home: name, report: await migrateDraftStore(source, target) };
  } finally {
    await Promise.allSettled(opened.map((store) => store.close()));
  }
}

/** A data folder's home project, as `parley serve` in its project folder (the data folder's parent) opens it. */
function folderHome(dataDir: string): DraftStoreHome {
  const path = dirname(dataDir);
  return { name: slugify(basename(path)) ?? 'project', path, dataDir };
}
