import { join } from 'node:path';
import * as z from 'zod';
import type { BackendRegistration } from '../backend-registration.js';
import {
  CODEX_BACKEND_NAME,
  CODEX_DEFAULT_MODEL,
  createCodexBackend,
  type CodexBackendOptions,
} from './codex-backend.js';
import { CODEX_INSTALL_COMMAND, codexResolvable } from './sdk-loader.js';

const OptionsSchema = z
  .object({
    /** CODEX_HOME of the CLI Parley runs (default: `<data folder>/codex`). */
    codexHome: z.string().min(1),
    /** The Codex CLI binary (default: the installed @openai/codex platform package's). */
    codexPath: z.string().min(1),
    maxRetries: z.number().int().nonnegative(),
  })
  .partial();

/** How the codex back end plugs into configuration, the registry and `parley backends`. */
export const codexRegistration: BackendRegistration = {
  name: CODEX_BACKEND_NAME,
  continuity: 'native',
  summary: 'Codex CLI via @openai/codex-sdk 0.163.0 (optional dependency); resumes its own threads.',
  defaultModel: CODEX_DEFAULT_MODEL,
  apiKeyVariables: ['CODEX_API_KEY', 'OPENAI_API_KEY'],
  // Not OPENAI_BASE_URL: that often names a local chat-completions server, which Codex cannot talk to.
  baseUrlVariables: ['CODEX_BASE_URL'],
  modelVariables: ['CODEX_MODEL'],
  priority: 35,
  optionsSchema: OptionsSchema,
  // A key alone does not make it usable (OPENAI_API_KEY is often set for other tools): Codex must be installed.
  isConfigured: (settings) => settings.apiKey !== undefined && codexResolvable(),
  notInstalled: () => (codexResolvable() ? undefined : `install it with: ${CODEX_INSTALL_COMMAND}`),
  create: (settings) => {
    const options = OptionsSchema.parse(settings.options);
    const codexHome = options.codexHome ?? (settings.dataDir ? join(settings.dataDir, 'codex') : undefined);
    const codexOptions: CodexBackendOptions = { model: settings.model, models: settings.models };
    if (settings.apiKey) codexOptions.apiKey = settings.apiKey;
    if (settings.baseUrl) codexOptions.baseUrl = settings.baseUrl;
    if (codexHome) codexOptions.codexHome = codexHome;
    if (options.codexPath) codexOptions.codexPath = options.codexPath;
    if (options.maxRetries !== undefined) codexOptions.maxRetries = options.maxRetries;
    return createCodexBackend(codexOptions);
  },
};
