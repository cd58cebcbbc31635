import { listBackendRegistrations, type AgentBackend } from '../backends/index.js';
import type { BackendInfo } from '../protocol/index.js';

/**
 * The back ends a client may offer for a draft (`list_backends`): the default first, then the
 * others by name. Each is made through the service's own `backendFor`, so what is listed is what a
 * `submit_prompt { backend }` would get; one that cannot be made here is listed as unavailable,
 * with the reason, rather than left out.
 */
export function listBackends(
  backendFor: (name?: string) => AgentBackend,
  names: readonly string[] = listBackendRegistrations().map((registration) => registration.name),
): BackendInfo[] {
  const defaultName = backendFor().describe().name;
  const ordered = [defaultName, ...names.filter((name) => name !== defaultName)];
  return ordered.map((name): BackendInfo => {
    try {
      const description = backendFor(name).describe();
      return { name, continuity: description.continuity, default: name === defaultName, available: true };
    } catch (error) {
      return { name, default: false, available: false, reason: error instanceof Error ? error.message : String(error) };
    }
  });
}
