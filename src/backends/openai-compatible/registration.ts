import * as z from 'zod';
import type { BackendRegistration } from '../backend-registration.js';
import { createOpenAiCompatibleBackend, isLocalUrl, OPENAI_DEFAULT_MODEL } from './openai-compatible-backend.js';

/** How the openai-compatible back end plugs into configuration, the registry and `parley backends`. */
export const openAiCompatibleRegistration: BackendRegistration = {
  name: 'openai-compatible',
  continuity: 'managed',
  summary: 'OpenAI Chat Completions API: OpenAI, Ollama, llama.cpp server, vLLM (by base URL).',
  defaultModel: OPENAI_DEFAULT_MODEL,
  apiKeyVariables: ['OPENAI_API_KEY'],
  baseUrlVariables: ['OPENAI_BASE_URL'],
  priority: 30,
  optionsSchema: z
    .object({
      timeoutMs: z.number().int().positive(),
      idleTimeoutMs: z.number().int().positive(),
      maxRetries: z.number().int().nonnegative(),
      maxTurns: z.number().int().positive(),
    })
    .partial(),
  // A local server (Ollama, llama.cpp, vLLM) needs no key.
  isConfigured: (settings) =>
    settings.apiKey !== undefined || (settings.baseUrl !== undefined && isLocalUrl(settings.baseUrl)),
  create: (settings) =>
    createOpenAiCompatibleBackend({
      ...(settings.options as { timeoutMs?: number; idleTimeoutMs?: number; maxRetries?: number; maxTurns?: number }),
      ...(settings.baseUrl ? { baseURL: settings.baseUrl } : {}),
      ...(settings.apiKey ? { apiKey: settings.apiKey } : {}),
      model: settings.model,
      models: settings.models,
      apiKeyVariable: settings.apiKeyVariable ?? 'OPENAI_API_KEY',
      baseUrlVariable: settings.baseUrlVariable ?? 'OPENAI_BASE_URL',
    }),
};
