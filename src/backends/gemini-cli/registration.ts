import * as z from 'zod';
import type { BackendRegistration } from '../backend-registration.js';
import { createGeminiCliBackend, GEMINI_DEFAULT_MODEL, type GeminiCliOptions } from './gemini-cli-backend.js';

/** How the gemini-cli back end plugs into configuration, the registry and `parley backends`. */
export const geminiCliRegistration: BackendRegistration = {
  name: 'gemini-cli',
  continuity: 'native',
  summary: 'Gemini CLI (@google/gemini-cli 0.61.0, optional dependency) run headless.',
  defaultModel: GEMINI_DEFAULT_MODEL,
  apiKeyVariables: ['GEMINI_API_KEY'],
  baseUrlVariables: ['GOOGLE_GEMINI_BASE_URL'],
  modelVariables: ['GEMINI_MODEL'],
  priority: 40,
  optionsSchema: z.object({ cliHome: z.string().min(1), maxAttempts: z.number().int().positive() }).partial(),
  create: (settings) => {
    const options = settings.options as { cliHome?: string; maxAttempts?: number };
    const cliHome = options.cliHome ?? (settings.dataDir ? `${settings.dataDir}/gemini-cli` : undefined);
    const geminiOptions: GeminiCliOptions = { model: settings.model, models: settings.models };
    if (settings.apiKey) geminiOptions.apiKey = settings.apiKey;
    if (settings.baseUrl) geminiOptions.baseUrl = settings.baseUrl;
    if (cliHome) geminiOptions.cliHome = cliHome;
    if (options.maxAttempts) geminiOptions.maxAttempts = options.maxAttempts;
    return createGeminiCliBackend(geminiOptions);
  },
};
