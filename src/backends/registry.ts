import { ParleyError } from '../conversation/index.js';
import type { BackendRegistration } from './backend-registration.js';

/**
 * The back ends Parley knows by name. It holds registrations and imports none: the built-in ones
 * are registered by `builtin-backends.ts`, applications add their own with `registerBackend`.
 */

const registrations = new Map<string, BackendRegistration>();

/** Adds (or replaces) a back end. The built-ins register on import of the layer; applications may add their own. */
export function registerBackend(registration: BackendRegistration): void {
  registrations.set(registration.name, registration);
}

/** Every registered back end, built-in and the user's own. */
export function listBackendRegistrations(): BackendRegistration[] {
  return [...registrations.values()].sort((left, right) => left.priority - right.priority);
}

/** The registration of the back end named `name`, if there is one. */
export function getBackendRegistration(name: string): BackendRegistration | undefined {
  return registrations.get(name);
}

/** No back end is registered under the name asked for; the message lists the names that are. */
export class UnknownBackendError extends ParleyError {
  constructor(name: string, where?: string) {
    const known = [...registrations.keys()].sort().join(', ');
    super('UNKNOWN_BACKEND', `Unknown back end "${name}"${where ? ` in ${where}` : ''}. Known back ends: ${known}.`, {
      fault: 'user',
      data: { name, known: [...registrations.keys()] },
    });
  }
}
