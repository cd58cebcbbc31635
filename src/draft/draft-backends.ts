import {
  configuredBackends,
  resolveBackendConfig,
  type AgentBackend,
  type ResolvedBackendConfig,
} from '../backends/index.js';
import type { DraftServiceState } from './draft-state.js';
import { DraftError } from './errors.js';

/**
 * The default `backendFor`: the back-end registry resolved from the environment and the project's
 * `parley.config.json` (the scripted back end when nothing is configured). A role without `backend`
 * gets the configured default; one instance per back end and model. A configuration that cannot be
 * read does not stop the service: drafting then fails with the configuration's own error.
 */
export async function registryBackends(
  projectRoot: string,
  dataDir: string,
): Promise<(name?: string, model?: string) => AgentBackend> {
  let config: ResolvedBackendConfig | undefined;
  let problem: unknown;
  try {
    config = await resolveBackendConfig({ projectDir: projectRoot, dataDir });
  } catch (error) {
    problem = error;
  }
  const made = config ? configuredBackends(config) : undefined;
  return (name, model) => {
    if (!made) throw problem instanceof Error ? problem : new Error(String(problem));
    return made(name, model);
  };
}

/** The back end a role asks for, or INVALID_INPUT naming the role, the back end and why it is not available. */
export function resolveBackend(
  state: DraftServiceState,
  backendName: string | undefined,
  model: string | undefined,
  role: string,
): AgentBackend {
  try {
    return state.backendFor(backendName, model);
  } catch (error) {
    throw new DraftError(
      'INVALID_INPUT',
      `Role "${role}" asks for back end "${backendName ?? '(default)'}"${model ? ` with model "${model}"` : ''}, which is not available: ${error instanceof Error ? error.message : String(error)}`,
      { fault: 'user', cause: error, data: { role, ...(backendName ? { backend: backendName } : {}) } },
    );
  }
}
