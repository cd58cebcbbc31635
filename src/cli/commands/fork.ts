import type { Command } from 'commander';
import { createBackend, resolveBackendConfig } from '../../backends/index.js';
import { createSessionManager, parseForkPoint } from '../../sessions/index.js';
import { openChosenStore, resolveDataDir, storeOption } from '../options.js';

interface ForkOptions {
  at?: string;
  backend?: string;
}

/**
 * `parley fork <sessionId> [--at <blockId|seq>] [--backend <name>]`: a new session whose history is
 * the source's up to the point (default: its end), and prints its id. With `--backend` the fork
 * runs there from its first turn; the back end must be configured here, so a fork is never made
 * onto one that cannot take it. `parley chat --session <id>` continues the fork.
 */
export function register(program: Command): void {
  program
    .command('fork')
    .description("Fork a session: a new session with the source's history up to a point")
    .argument('<sessionId>', 'the session to fork (see `parley sessions`)')
    .option('--at <point>', 'the last block id or seq the fork keeps (see `parley show`; default: the end)')
    .option('--backend <name>', 'the back end the fork continues on (see `parley backends`)')
    .action(async (sessionId: string, options: ForkOptions, command: Command) => {
      const at = options.at === undefined ? undefined : parseForkPoint(options.at);
      const backend = options.backend === undefined ? undefined : await configuredBackend(command, options.backend);
      const store = await openChosenStore(command);
      const manager = await createSessionManager(storeOption(command, store));
      try {
        const fork = await manager.forkSession(sessionId, {
          ...(at !== undefined ? { at } : {}),
          ...(backend !== undefined ? { backend } : {}),
        });
        process.stdout.write(`${fork.sessionId}\n`);
        process.stderr.write(
          `forked ${sessionId} at seq ${fork.forkedFrom!.seq} onto ${fork.type}  (continue with: parley chat --session ${fork.sessionId} "…")\n`,
        );
      } finally {
        await manager.close();
        await store?.close();
      }
    });
}

/** The back end's name once it is known and configured here; its errors say what to set. */
async function configuredBackend(command: Command, name: string): Promise<string> {
  const config = await resolveBackendConfig({
    projectDir: process.cwd(),
    dataDir: resolveDataDir(command),
    override: { backend: name, source: 'the command line' },
  });
  createBackend(config.backend, config, { model: config.model });
  return config.backend;
}
