import { z } from 'zod';
import { ParleyError } from '../conversation/index.js';
import type { AgentBackend, Continuity, ModelInfo } from './agent-backend.js';
import type { ResolvedBackendConfig } from './config.js';
import { createGeminiCliBackend, GEMINI_DEFAULT_MODEL, type GeminiCliOptions } from './gemini-cli/index.js';
import { createOpenAiCompatibleBackend, isLocalUrl, OPENAI_DEFAULT_MODEL } from './openai-compatible/index.js';
import { createScriptedBackend, SCRIPTED_MODEL } from './scripted/index.js';
import { anthropicApiRegistration } from './anthropic-api/index.js';
import { claudeSdkRegistration } from './claude-sdk/index.js';

/** One back end's settings after configuration is resolved: environment, config file, role override. */
export interface BackendSettings {
  name: string;
  apiKey?: string;
  /** The variable the key is read from (named in advice and by `parley backends`). */
  apiKeyVariable?: string;
  baseUrl?: string;
  baseUrlVariable?: string;
  /** The model used when a request names none. */
  model: string;
  /** Windows and prices from the config file, beside the built-in table. */
  models: ModelInfo[];
  /** Back-end specific fields from the config file, validated by the registration's `optionsSchema`. */
  options: Record<string, unknown>;
  /** Parley's data folder, for back ends that keep state of their own (the Gemini CLI's home). */
  dataDir?: string;
  /** Whether the back end can be used: a key, or a local server that needs none. */
  configured: boolean;
  /** What configured it, for `parley backends` (variable names, the config file). */
  sources: string[];
}

/** How a back end plugs into configuration, the registry and `parley backends`. */
export interface BackendRegistration {
  name: string;
  continuity: Continuity;
  /** One line for `parley backends`. */
  summary: string;
  defaultModel: string;
  /** Environment variables holding the key, first set wins. */
  apiKeyVariables: string[];
  /** Environment variables holding the endpoint, first set wins. */
  baseUrlVariables: string[];
  /** Environment variables holding the default model (the client's own, e.g. GEMINI_MODEL). */
  modelVariables?: string[];
  /** Lower is preferred when no back end is chosen and several are configured. */
  priority: number;
  /** Fields the config file may set for this back end beside baseUrl, model, apiKeyEnv and models. */
  optionsSchema?: z.ZodObject;
  /** Default: an API key is present. */
  isConfigured?(settings: Omit<BackendSettings, 'configured'>): boolean;
  create(settings: BackendSettings): AgentBackend;
}

const registrations = new Map<string, BackendRegistration>();

/** Adds (or replaces) a back end. Built-ins register below; applications may add their own. */
export function registerBackend(registration: BackendRegistration): void {
  registrations.set(registration.name, registration);
}

export function listBackendRegistrations(): BackendRegistration[] {
  return [...registrations.values()].sort((left, right) => left.priority - right.priority);
}

export function getBackendRegistration(name: string): BackendRegistration | undefined {
  return registrations.get(name);
}

export class UnknownBackendError extends ParleyError {
  constructor(name: string, where?: string) {
    const known = [...registrations.keys()].sort().join(', ');
    super('UNKNOWN_BACKEND', `Unknown back end "${name}"${where ? ` in ${where}` : ''}. Known back ends: ${known}.`, {
      fault: 'user',
      data: { name, known: [...registrations.keys()] },
    });
  }
}

/**
 * Creates the named back end with its resolved settings. `config` comes from `resolveBackendConfig`;
 * `model` overrides the configured default model (a role's front matter).
 */
export function createBackend(name: string, config: ResolvedBackendConfig, overrides: { model?: string } = {}): AgentBackend {
  const registration = registrations.get(name);
  if (!registration) throw new UnknownBackendError(name);
  const settings = config.settings[name];
  if (!settings) throw new UnknownBackendError(name, 'the resolved configuration');
  return registration.create(overrides.model ? { ...settings, model: overrides.model } : settings);
}

/** The back end the configuration chose, with its model. */
export function createConfiguredBackend(config: ResolvedBackendConfig): AgentBackend {
  return createBackend(config.backend, config, { model: config.model });
}

// ---- Built-in back ends -------------------------------------------------------------------

registerBackend({
  name: 'scripted',
  continuity: 'managed',
  summary: 'Offline scripted replies (echoes the prompt); the default when nothing else is configured.',
  defaultModel: SCRIPTED_MODEL.id,
  apiKeyVariables: [],
  baseUrlVariables: [],
  priority: 1_000,
  isConfigured: () => true,
  create: () => createScriptedBackend(),
});

registerBackend({
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
  isConfigured: (settings) => settings.apiKey !== undefined || (settings.baseUrl !== undefined && isLocalUrl(settings.baseUrl)),
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
});

registerBackend({
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
});

registerBackend(anthropicApiRegistration);
registerBackend(claudeSdkRegistration);
