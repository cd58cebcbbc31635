import type { AgentBackend } from './agent-backend.js';
import type { ResolvedBackendConfig } from './config.js';
import { getBackendRegistration, UnknownBackendError } from './registry.js';
import { ParleyError } from '../conversation/index.js';

/**
 * Creates the named back end with its resolved settings. `config` comes from `resolveBackendConfig`;
 * `model` overrides the configured default model (a role's front matter).
 */
export function createBackend(
  name: string,
  config: ResolvedBackendConfig,
  overrides: { model?: string } = {},
): AgentBackend {
  const registration = getBackendRegistration(name);
  if (!registration) throw new UnknownBackendError(name);
  const settings = config.settings[name];
  if (!settings) throw new UnknownBackendError(name, 'the resolved configuration');
  return registration.create(overrides.model ? { ...settings, model: overrides.model } : settings);
}

/** The back end the configuration chose, with its model. */
export function createConfiguredBackend(config: ResolvedBackendConfig): AgentBackend {
  return createBackend(config.backend, config, { model: config.model });
}

/** A back end named explicitly that has no key (or login, or base URL) here. */
export class BackendNotConfiguredError extends ParleyError {
  constructor(name: string, variable: string | undefined, notInstalled?: string) {
    const what = notInstalled
      ? `it is not installed (${notInstalled})${variable ? ` and needs ${variable}` : ''}`
      : variable
        ? `set ${variable}`
        : 'give it its settings in parley.config.json';
    super(
      'BACKEND_NOT_CONFIGURED',
      `The ${name} back end is not configured here: ${what}, or choose another back end (\`parley backends\` lists them).`,
      {
        fault: 'user',
        data: { backend: name, ...(variable ? { variable } : {}), ...(notInstalled ? { notInstalled } : {}) },
      },
    );
  }
}

/** What to set for a back end that is not configured (its key variable), or undefined when it is. */
export function missingSetting(
  config: ResolvedBackendConfig,
  name: string,
): { variable: string | undefined; notInstalled?: string } | undefined {
  const settings = config.settings[name];
  if (!settings || settings.configured) return undefined;
  const registration = getBackendRegistration(name);
  const notInstalled = registration?.notInstalled?.();
  return {
    // A key that is set is not what is missing when the package is.
    variable:
      notInstalled && settings.apiKey ? undefined : (settings.apiKeyVariable ?? registration?.apiKeyVariables[0]),
    ...(notInstalled ? { notInstalled } : {}),
  };
}

/**
 * `backendFor` over a resolved configuration: a name (or the configured default) and a model (or the
 * back end's configured one), one instance per pair. A back end other than the default that is not
 * configured is refused with BACKEND_NOT_CONFIGURED, so a role, a move or a picker finds out now, not
 * at its first turn. The default is always made: the configuration already warned about it.
 */
export function configuredBackends(config: ResolvedBackendConfig): (name?: string, model?: string) => AgentBackend {
  const made = new Map<string, AgentBackend>();
  return (name, model) => {
    const backend = name ?? config.backend;
    const missing = backend === config.backend ? undefined : missingSetting(config, backend);
    if (missing) throw new BackendNotConfiguredError(backend, missing.variable, missing.notInstalled);
    const chosen = model ?? (backend === config.backend ? config.model : undefined);
    const key = `${backend}\u0000${chosen ?? ''}`;
    let found = made.get(key);
    if (!found) {
      found = createBackend(backend, config, chosen ? { model: chosen } : {});
      made.set(key, found);
    }
    return found;
  };
}
