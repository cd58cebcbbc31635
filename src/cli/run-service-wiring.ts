import { createRunService, type RunService } from '../harness/index.js';
import { createFileRunStore, createPostgresRunStore } from '../store/index.js';
import type { RunServiceContext, ServerOptions } from '../server/index.js';

/**
 * How `parley serve` (and the TUI's own server) get durable runs: a factory of the
 * core's RunService, called once the server's SessionManager is open. While none is wired, servers
 * run without runs and the run methods answer RUNS_NOT_ENABLED; everything else works as before.
 */
export type CoreRunServiceFactory = (context: RunServiceContext) => Promise<RunService>;

/**
 * The core's RunService for a server: its runs and journals beside the server's sessions (the data
 * folder's `runs/`, or the same PostgreSQL database), agents' sessions in the server's manager.
 * Closing the service also closes the RunStore it opened.
 */
export const coreRunServiceFactory: CoreRunServiceFactory = async (context) => {
  const runStore =
    context.storeUrl !== undefined
      ? await createPostgresRunStore({ connectionString: context.storeUrl })
      : await createFileRunStore({ dataDir: context.dataDir });
  const service = createRunService({ runStore, sessionManager: context.manager, projectRoot: context.projectRoot });
  const closeService = service.close.bind(service);
  service.close = async () => {
    await closeService();
    await runStore.close();
  };
  return service;
};

/**
 * What a server is given as `createRunService`: the factory's service, with every unfinished run of
 * the project resumed from its journal before the server accepts connections (`recoverRuns`).
 * `report` hears how many were resumed. Undefined without a factory: runs stay off.
 */
export function serveRuns(
  factory: CoreRunServiceFactory | undefined,
  report: (line: string) => void,
): ServerOptions['createRunService'] {
  if (!factory) return undefined;
  return async (context) => {
    const service = await factory(context);
    try {
      const resumed = await service.recoverRuns();
      if (resumed.length > 0) {
        const waiting = resumed.filter((run) => run.pendingPrompts.length > 0).length;
        report(
          `Resumed ${resumed.length} unfinished run(s)${waiting > 0 ? `, ${waiting} waiting for an answer (\`parley runs\`)` : ''}.`,
        );
      }
    } catch (error) {
      await service.close().catch(() => undefined);
      throw error;
    }
    return service;
  };
}
