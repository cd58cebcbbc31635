import type { AgentBackend } from './agent-backend.js';
import type { ResolvedBackendConfig } from './config.js';
import { getBackendRegistration, UnknownBackendError } from './registry.js';

/**
 * Creates the named back end with its resolved settings. `config` comes from `resolveBackendConfig`;
 * `model` overrides the configured default model (a role's front matter).
 */
export function createBackend(name: string, config: ResolvedBackendConfig, overrides: { model?: string } = {}): AgentBackend {
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
