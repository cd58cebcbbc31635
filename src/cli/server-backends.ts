import { resolve } from 'node:path';
import type { AgentBackend } from '../backends/index.js';
import type { Summarizer } from '../sessions/index.js';

/** Environment variable naming a scripted back-end script (JSON) that every agent of this server plays. */
export const SCRIPTED_SCRIPT_VARIABLE = 'PARLEY_SCRIPTED_SCRIPT';

export interface ServerBackends {
  /** A role's `backend`/`model`, else the configured default; one instance per pair. */
  backendFor: (name?: string, model?: string) => AgentBackend;
  /**
   * The model compaction asks for summaries; `false` when no model back end is configured (scripted
   * replies cannot summarize): the server's sessions then build checkpoints structurally, with no model.
   */
  summarize: Summarizer | false;
  /** One line for the user: the scripted fallback, or the script being played. */
  notice?: string;
  warnings: string[];
}

/**
 * The back ends a server started by `parley serve` or the TUI gives its agents, from the
 * environment, `parley.config.json` and role overrides, or a scripted script named by
 * PARLEY_SCRIPTED_SCRIPT (one shared instance, so its turns play in order across every agent).
 * Modules are loaded here, not at start-up of every command.
 */
export async function resolveServerBackends(options: {
  projectRoot: string;
  dataDir: string;
}): Promise<ServerBackends> {
  const [backends, { createBackendSummarizer }] = await Promise.all([
    import('../backends/index.js'),
    import('../sessions/index.js'),
  ]);
  const config = await backends.resolveBackendConfig({ projectDir: options.projectRoot, dataDir: options.dataDir });
  const scriptPath = process.env[SCRIPTED_SCRIPT_VARIABLE];
  if (scriptPath) {
    const scripted = backends.createScriptedBackend(await backends.loadScriptFile(resolve(scriptPath)));
    return {
      backendFor: () => scripted,
      summarize: false,
      notice: `The scripted back end plays ${scriptPath} (${SCRIPTED_SCRIPT_VARIABLE}); no model is called.`,
      warnings: config.warnings,
    };
  }
  const backendFor = backends.configuredBackends(config);
  return {
    backendFor,
    summarize:
      config.backend === 'scripted' ? false : createBackendSummarizer(backends.createConfiguredBackend(config)),
    ...(config.notice ? { notice: config.notice } : {}),
    warnings: config.warnings,
  };
}
