import type { BackendRegistration } from '../backend-registration.js';
import { createScriptedBackend, SCRIPTED_MODEL } from './scripted-backend.js';

/** How the scripted back end plugs into configuration, the registry and `parley backends`. */
export const scriptedRegistration: BackendRegistration = {
  name: 'scripted',
  continuity: 'managed',
  summary: 'Offline scripted replies (echoes the prompt); the default when nothing else is configured.',
  defaultModel: SCRIPTED_MODEL.id,
  apiKeyVariables: [],
  baseUrlVariables: [],
  priority: 1_000,
  isConfigured: () => true,
  create: () => createScriptedBackend(),
};
