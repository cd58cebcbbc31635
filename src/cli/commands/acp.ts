import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { AcpBackends } from '../../acp/index.js';
import { ParleyError } from '../../conversation/index.js';
import { DATABASE_URL_VARIABLE, resolveStoreUrl } from '../options.js';
import { resolveServerBackends } from '../server-backends.js';

/**
 * `parley acp`: Parley as an Agent Client Protocol agent on stdio, for editors (Zed's
 * `agent_servers`, JetBrains IDEs, Neovim and Emacs plugins). stdout carries the protocol and
 * nothing else: logs, warnings and anything a library prints go to stderr.
 */
export function register(program: Command): void {
  program
    .command('acp')
    .description('Serve the Agent Client Protocol on stdio (for editors: Zed, JetBrains IDEs, Neovim, Emacs)')
    .action(async (_options: unknown, command: Command) => {
      // Whatever prints with console.log must not corrupt the protocol.
      console.log = console.error;
      console.info = console.error;
      console.debug = console.error;
      const globals = command.optsWithGlobals<{ dataDir?: string; store?: string }>();
      // Refused, not ignored: sessions the user asked to keep in PostgreSQL must not land in a folder unseen.
      if (globals.store !== undefined) {
        throw new ParleyError(
          'INVALID_INPUT',
          "`parley acp` keeps each project's sessions in its data folder and cannot use --store (PostgreSQL) yet. Leave out --store, or use `parley serve --store …` with the web UI or the TUI for a shared database.",
          { fault: 'user' },
        );
      }
      const given = globals.dataDir ?? process.env['PARLEY_DATA_DIR'];
      const [{ serveAcpOnStdio }, { listBackendRegistrations }] = await Promise.all([
        import('../../acp/index.js'),
        import('../../backends/index.js'),
      ]);
      const log = (message: string): void => void process.stderr.write(`parley acp: ${message}\n`);
      if (resolveStoreUrl(command) !== undefined)
        log(
          `${DATABASE_URL_VARIABLE} is set, but ACP sessions are kept in each project's data folder (ACP does not use PostgreSQL yet).`,
        );
      const agent = serveAcpOnStdio({
        ...(given ? { dataDir: resolve(given) } : {}),
        version: program.version() ?? '0.0.0',
        log,
        openBackends: async (projectRoot, dataDir): Promise<AcpBackends> => {
          const resolved = await resolveServerBackends({ projectRoot, dataDir });
          return {
            backendFor: resolved.backendFor,
            defaultBackend: resolved.backendFor().describe().name,
            backendNames: listBackendRegistrations().map((registration) => registration.name),
            ...(resolved.summarize ? { summarize: resolved.summarize } : {}),
            notices: [
              ...(resolved.notice ? [resolved.notice] : []),
              ...resolved.warnings.map((warning) => `warning: ${warning}`),
            ],
          };
        },
      });
      const stop = (): void => agent.connection.close();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      await agent.closed;
      // Every turn is closed and every data folder released: nothing left to wait for.
      process.exit(process.exitCode ?? 0);
    });
}
