import type { RunService } from '../harness/index.js';
import type { RunServiceContext, ServerOptions } from '../server/index.js';

/**
 * How `parley serve` (and the TUI's own server) get durable runs (issue 14): a factory of the
 * core's RunService, called once the server's SessionManager is open. While none is wired, servers
 * run without runs and the run methods answer RUNS_NOT_ENABLED; everything else works as before.
 */
export type CoreRunServiceFactory = (context: RunServiceContext) => Promise<RunService>;

// ==== WIRING POINT (lead): the one place the core's createRunService goes in. ====================
// Once runs-core is merged, import its factory and return it here, e.g.
//   import { createRunService } from '../harness/index.js';
//   export const coreRunServiceFactory: CoreRunServiceFactory | undefined = (context) =>
//     createRunService({ sessionManager: context.manager, projectRoot: context.projectRoot, dataDir: context.dataDir, ... });
// (adapting the context to the core's options: `store` is the PostgreSQL SessionStore when one is used).
export const coreRunServiceFactory: CoreRunServiceFactory | undefined = undefined;
// =================================================================================================

/**
 * What a server is given as `createRunService`: the factory's service, with every unfinished run of
 * the project resumed from its journal before the server accepts connections (`recoverRuns`).
 * `report` hears how many were resumed. Undefined without a factory: runs stay off.
 */
export function serveRuns(factory: CoreRunServiceFactory | undefined, report: (line: string) => void): ServerOptions['createRunService'] {
  if (!factory) return undefined;
  return async (context) => {
    const service = await factory(context);
    try {
      const resumed = await service.recoverRuns();
      if (resumed.length > 0) {
        const waiting = resumed.filter((run) => run.pendingPrompts.length > 0).length;
        report(`Resumed ${resumed.length} unfinished run(s)${waiting > 0 ? `, ${waiting} waiting for an answer (\`parley runs\`)` : ''}.`);
      }
    } catch (error) {
      await service.close().catch(() => undefined);
      throw error;
    }
    return service;
  };
}
