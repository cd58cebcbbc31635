import type { SessionConfigOption, SessionModeState } from '@agentclientprotocol/sdk';
import type { BackendDescription } from '../backends/index.js';
import type { RoleInfo } from '../draft/index.js';

/**
 * Roles as ACP session modes, the back end and model as session config options. Pure: the agent
 * keeps the chosen values on its session and builds these from them.
 */

export const BACKEND_OPTION = 'backend';
export const MODEL_OPTION = 'model';
/** The model value that means "the back end's own default". */
export const DEFAULT_MODEL_VALUE = 'default';

export function modesOf(roles: readonly RoleInfo[], currentRole: string): SessionModeState {
  return {
    currentModeId: currentRole,
    availableModes: roles.map((role) => ({ id: role.name, name: role.name, description: role.description })),
  };
}

export interface ConfigChoices {
  backend: string;
  /** Undefined: the back end's default model. */
  model?: string;
}

export function configOptionsOf(
  backendNames: readonly string[],
  description: BackendDescription,
  choices: ConfigChoices,
): SessionConfigOption[] {
  const models = description.models.map((model) => model.id);
  const defaultLabel = description.defaultModel ? `default (${description.defaultModel})` : 'default';
  const modelValues = [DEFAULT_MODEL_VALUE, ...models.filter((model) => model !== DEFAULT_MODEL_VALUE)];
  if (choices.model !== undefined && !modelValues.includes(choices.model)) modelValues.push(choices.model);
  return [
    {
      type: 'select',
      id: BACKEND_OPTION,
      name: 'Back end',
      description: 'Where the agent runs (keys come from each back end’s own environment variables).',
      category: 'backend',
      currentValue: choices.backend,
      options: backendNames.map((name) => ({ value: name, name })),
    },
    {
      type: 'select',
      id: MODEL_OPTION,
      name: 'Model',
      category: 'model',
      currentValue: choices.model ?? DEFAULT_MODEL_VALUE,
      options: modelValues.map((value) => ({ value, name: value === DEFAULT_MODEL_VALUE ? defaultLabel : value })),
    },
  ];
}
