import type { PostgresStoreOptions } from '../postgres/options.js';
import type { DraftStoreHome } from './home.js';

/** Options of `createPostgresDraftStore`: the connection, plus the project this server runs in. */
export interface PostgresDraftStoreOptions extends PostgresStoreOptions {
  /**
   * The project this server runs in (`parley serve`'s folder): listed first and marked home, with
   * the folders given here (each server reports its own checkout). Registered in the database on open.
   */
  home: DraftStoreHome;
  /**
   * Register the home project on open when the database does not hold it (default true). False
   * writes nothing on open: until a project of the home's name is created, none is listed as home
   * (`parley migrate` opens both sides so, and creates the home project with the source's
   * description and creation time). With `existingOnly`, the home is never registered either.
   */
  registerHome?: boolean;
}
