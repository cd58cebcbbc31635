import * as z from 'zod';
import type { BackendRegistration } from '../backend-registration.js';
import {
  ANTHROPIC_API_BACKEND_NAME,
  ANTHROPIC_API_DEFAULT_MODEL,
  createAnthropicApiBackend,
} from './anthropic-api-backend.js';

const OptionsSchema = z
  .object({
    timeoutMs: z.number().int().positive(),
    maxRetries: z.number().int().nonnegative(),
    maxTurns: z.number().int().positive(),
    maxOutputTokens: z.number().int().positive(),
    /** Extended thinking with this token budget. */
    thinkingBudgetTokens: z.number().int().min(1024),
  })
  .partial();

/** How the anthropic-api back end plugs into configuration, the registry and `parley backends`. */
export const anthropicApiRegistration: BackendRegistration = {
  name: ANTHROPIC_API_BACKEND_NAME,
  continuity: 'managed',
  summary: 'Anthropic Messages API (@anthropic-ai/sdk); Parley manages the conversation.',
  defaultModel: ANTHROPIC_API_DEFAULT_MODEL,
  apiKeyVariables: ['ANTHROPIC_API_KEY'],
  baseUrlVariables: ['ANTHROPIC_BASE_URL'],
  priority: 20,
  optionsSchema: OptionsSchema,
  create: (settings) => {
    const options = OptionsSchema.parse(settings.options);
    return createAnthropicApiBackend({
      // The resolved settings are the one source: no second read of the environment.
      env: {},
      ...(settings.apiKey ? { apiKey: settings.apiKey } : {}),
      ...(settings.baseUrl ? { baseURL: settings.baseUrl } : {}),
      defaultModel: settings.model,
      models: settings.models,
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      ...(options.maxRetries !== undefined ? { maxRetries: options.maxRetries } : {}),
      ...(options.maxTurns !== undefined ? { maxTurns: options.maxTurns } : {}),
      ...(options.maxOutputTokens !== undefined ? { maxOutputTokens: options.maxOutputTokens } : {}),
      ...(options.thinkingBudgetTokens !== undefined
        ? { thinking: { budgetTokens: options.thinkingBudgetTokens } }
        : {}),
    });
  },
};
