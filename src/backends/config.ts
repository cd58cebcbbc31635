import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import * as z from 'zod';
import { describeIssues, ParleyError } from '../conversation/index.js';
import { ModelPricingSchema, type ModelInfo } from './agent-backend.js';
import type { BackendSettings } from './backend-registration.js';
import { getBackendRegistration, listBackendRegistrations, UnknownBackendError } from './registry.js';
import { IdSchema } from '../store/index.js';

/**
 * Configuration of back ends, the way users already configure each client:
 * 1. the client's own environment variables (ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL,
 *    OPENAI_API_KEY / OPENAI_BASE_URL, GEMINI_API_KEY / GOOGLE_GEMINI_BASE_URL / GEMINI_MODEL);
 * 2. `parley.config.json` in the project folder: the default back end and model, and per back end
 *    a base URL, a model, the name of the variable holding its key, model windows and prices;
 *    keys themselves never go in the file;
 * 3. a role's front matter (`backend`, `model`), passed by the caller as an override.
 * With no key anywhere, Parley uses the scripted back end and says so.
 */
export const CONFIG_FILE_NAME = 'parley.config.json';

export const ModelInfoSchema = z
  .object({
    id: z.string().min(1),
    contextWindow: z.number().int().positive().optional(),
    maxOutputTokens: z.number().int().positive().optional(),
    pricing: ModelPricingSchema.strict().optional(),
  })
  .strict();

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The fields every back end's entry may have; registrations add their own (`optionsSchema`). */
export const BackendEntrySchema = z
  .object({
    model: z.string().min(1).optional(),
    baseUrl: z.url().optional(),
    /** The environment variable that holds this back end's key (keys never go in the file). */
    apiKeyEnv: z.string().regex(ENV_NAME, 'must be an environment variable name').optional(),
    models: z.array(ModelInfoSchema).optional(),
  })
  .strict();

/** The zod schema of `parley.config.json`. */
export const ParleyConfigSchema = z
  .object({
    $schema: z.string().optional(),
    /** The default back end. */
    backend: z.string().min(1).optional(),
    /** The default model of the default back end. */
    model: z.string().min(1).optional(),
    /** The role a UI drafts for a first message typed before any draft (default `product-analyst`); a role id, as role file names are. */
    defaultRole: IdSchema.optional(),
    backends: z.record(z.string(), z.unknown()).optional(),
    /** Workflows by name (`parley run <name>`, `start_run`): each a module path relative to the project folder. */
    workflows: z.record(z.string().min(1), z.string().min(1)).optional(),
    /** Commands and webhooks run on session events; read leniently by the hooks layer (a bad entry is left out, not fatal). */
    hooks: z.unknown().optional(),
    /** Where notifications go (webhooks, the desktop) and their delays; read leniently by the hooks layer. */
    notifications: z.unknown().optional(),
  })
  .strict();
/** The contents of `parley.config.json`: back ends, the default one, workflows. */
export type ParleyConfig = z.infer<typeof ParleyConfigSchema>;
/** One back end's entry in `parley.config.json`: its type and its settings. */
export type BackendEntry = z.infer<typeof BackendEntrySchema> & Record<string, unknown>;

/** `parley.config.json` (or a back-end setting) is invalid; the message names the field and the value. */
export class ConfigError extends ParleyError {
  constructor(file: string, message: string, data: Record<string, unknown> = {}) {
    super('INVALID_CONFIG', `${file}: ${message}`, { fault: 'user', data: { file, ...data } });
  }
}

/** A role's choice of back end and model (its front matter), with where it came from for messages. */
export interface BackendOverride {
  backend?: string;
  model?: string;
  /** e.g. `role reviewer (roles/reviewer.md)`. */
  source?: string;
}

/** Options of `resolveBackendConfig`: the project folder, the environment, overrides from the command line. */
export interface ResolveBackendConfigOptions {
  /** Default: `process.env`. */
  env?: Record<string, string | undefined>;
  /** The folder holding `parley.config.json`. Default: the current folder. */
  projectDir?: string;
  /** An explicit config file instead of `<projectDir>/parley.config.json`. */
  configFile?: string;
  /** Parley's data folder (the Gemini CLI's home goes under it). */
  dataDir?: string;
  override?: BackendOverride;
}

/** The back end to use, with its settings merged from the config file, the environment and the command line. */
export interface ResolvedBackendConfig {
  /** The back end to use. */
  backend: string;
  /** Its model. */
  model: string;
  /** Why this back end: a role's override, the config file, the only/first configured one, or the offline fallback. */
  reason: 'override' | 'config' | 'detected' | 'fallback';
  /** One line to show the user when Parley fell back to the scripted back end. */
  notice?: string;
  /** Problems that do not stop Parley (a chosen back end without its key). */
  warnings: string[];
  /** The config file read, if one exists. */
  configFile?: string;
  config: ParleyConfig;
  /** Every registered back end's settings. */
  settings: Record<string, BackendSettings>;
}

export const SCRIPTED_FALLBACK_NOTICE =
  'No model back end is configured, so Parley uses the scripted back end (offline replies that echo your message). ' +
  'Set ANTHROPIC_API_KEY, OPENAI_API_KEY (or OPENAI_BASE_URL for a local server) or GEMINI_API_KEY, ' +
  `or choose a back end in ${CONFIG_FILE_NAME}; run \`parley backends\` to check.`;

/** Reads and validates a config file; a missing file is an empty configuration. */
export async function readParleyConfig(path: string): Promise<ParleyConfig | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigError(path, `cannot be read (${(error as Error).message}).`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(path, `is not valid JSON (${(error as Error).message}). Fix the file or remove it.`);
  }
  const parsed = ParleyConfigSchema.safeParse(data);
  if (!parsed.success)
    throw new ConfigError(path, `${describeIssues(parsed.error.issues)}.`, { issues: parsed.error.issues });
  return parsed.data;
}

/** Validates one back end's entry with the fields its registration allows. */
function parseEntry(file: string, name: string, entry: unknown): BackendEntry {
  const registration = getBackendRegistration(name);
  if (!registration) throw new UnknownBackendError(name, `${file} (backends)`);
  const schema = registration.optionsSchema
    ? BackendEntrySchema.extend(registration.optionsSchema.shape).strict()
    : BackendEntrySchema;
  const parsed = schema.safeParse(entry);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => ({ ...issue, path: ['backends', name, ...issue.path] }));
    const hint = parsed.error.issues.some(
      (issue) => issue.code === 'unrecognized_keys' && issue.keys.includes('apiKey'),
    )
      ? ' Keys never go in the config file: put the key in an environment variable and name it with apiKeyEnv.'
      : '';
    throw new ConfigError(file, `${describeIssues(issues)}.${hint}`, { issues });
  }
  return parsed.data as BackendEntry;
}

/**
 * Resolves which back end and model to use, and every back end's settings, from the environment,
 * the project's config file and a role's override. Throws `ConfigError` for a bad file (naming
 * the file and field) and `UnknownBackendError` for a back end nobody registered.
 */
export async function resolveBackendConfig(options: ResolveBackendConfigOptions = {}): Promise<ResolvedBackendConfig> {
  const env = options.env ?? process.env;
  const configPath = options.configFile
    ? resolve(options.configFile)
    : join(resolve(options.projectDir ?? '.'), CONFIG_FILE_NAME);
  const fromFile = await readParleyConfig(configPath);
  const config = fromFile ?? {};
  const fileLabel = options.configFile ?? CONFIG_FILE_NAME;
  const entries = new Map<string, BackendEntry>();
  for (const [name, entry] of Object.entries(config.backends ?? {}))
    entries.set(name, parseEntry(configPath, name, entry));

  const settings: Record<string, BackendSettings> = {};
  for (const registration of listBackendRegistrations()) {
    const entry = entries.get(registration.name) ?? {};
    const sources: string[] = [];
    const keyVariables = entry.apiKeyEnv ? [entry.apiKeyEnv] : registration.apiKeyVariables;
    const apiKeyVariable = keyVariables.find((name) => nonEmpty(env[name])) ?? keyVariables[0];
    const apiKey = apiKeyVariable ? nonEmpty(env[apiKeyVariable]) : undefined;
    if (apiKey && apiKeyVariable) sources.push(apiKeyVariable);
    let baseUrl = entry.baseUrl;
    let baseUrlVariable: string | undefined;
    if (baseUrl) sources.push(`${fileLabel} baseUrl`);
    else {
      baseUrlVariable = registration.baseUrlVariables.find((name) => nonEmpty(env[name]));
      baseUrl = baseUrlVariable ? nonEmpty(env[baseUrlVariable]) : undefined;
      if (baseUrlVariable) sources.push(baseUrlVariable);
    }
    const modelVariable = registration.modelVariables?.find((name) => nonEmpty(env[name]));
    const model =
      entry.model ??
      (config.backend === registration.name ? config.model : undefined) ??
      (modelVariable ? nonEmpty(env[modelVariable]) : undefined) ??
      registration.defaultModel;
    const { model: _model, baseUrl: _baseUrl, apiKeyEnv: _apiKeyEnv, models, ...rest } = entry;
    const partial: Omit<BackendSettings, 'configured'> = {
      name: registration.name,
      model,
      models: (models ?? []) as ModelInfo[],
      options: rest,
      sources,
      ...(apiKey ? { apiKey } : {}),
      ...(apiKeyVariable ? { apiKeyVariable } : {}),
      ...(baseUrl ? { baseUrl } : {}),
      ...(baseUrlVariable ? { baseUrlVariable } : {}),
      ...(options.dataDir ? { dataDir: resolve(options.dataDir) } : {}),
    };
    const configured = registration.isConfigured ? registration.isConfigured(partial) : apiKey !== undefined;
    settings[registration.name] = { ...partial, configured };
  }

  const warnings: string[] = [];
  const override = options.override ?? {};
  let backend: string;
  let reason: ResolvedBackendConfig['reason'];
  if (override.backend) {
    if (!settings[override.backend]) throw new UnknownBackendError(override.backend, override.source);
    backend = override.backend;
    reason = 'override';
  } else if (config.backend) {
    if (!settings[config.backend]) throw new UnknownBackendError(config.backend, `${configPath} (backend)`);
    backend = config.backend;
    reason = 'config';
  } else {
    const detected = listBackendRegistrations().find(
      (registration) => registration.name !== 'scripted' && settings[registration.name]?.configured,
    );
    backend = detected?.name ?? 'scripted';
    reason = detected ? 'detected' : 'fallback';
  }
  const chosen = settings[backend]!;
  if (!chosen.configured) {
    const registration = getBackendRegistration(backend)!;
    const variable = chosen.apiKeyVariable ?? registration.apiKeyVariables[0];
    warnings.push(
      `The ${backend} back end is selected${reason === 'override' && override.source ? ` by ${override.source}` : reason === 'config' ? ` in ${fileLabel}` : ''} but is not configured${variable ? `: set ${variable}` : ''}.`,
    );
  }
  const model = override.model ?? chosen.model;
  const configFile = fromFile ? configPath : undefined;
  return {
    backend,
    model,
    reason,
    warnings,
    config,
    settings,
    ...(reason === 'fallback' ? { notice: SCRIPTED_FALLBACK_NOTICE } : {}),
    ...(configFile ? { configFile } : {}),
  };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}
