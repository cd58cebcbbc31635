import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import * as z from 'zod';
import type { BackendRegistration } from '../backend-registration.js';
import { CLAUDE_SDK_DEFAULT_MODEL, createClaudeSdkBackend } from './claude-sdk-backend.js';
import { defaultConfigDir } from './native-storage.js';
import { CLAUDE_AGENT_SDK_PACKAGE } from './sdk-loader.js';
import { CLAUDE_SDK_BACKEND_NAME } from './turn-mapper.js';

const OptionsSchema = z
  .object({
    /** The CLI's config folder (CLAUDE_CONFIG_DIR). */
    configDir: z.string().min(1),
    permissionMode: z.enum(['default', 'acceptEdits', 'bypassPermissions', 'plan']),
    maxRetries: z.number().int().nonnegative(),
    pathToClaudeCodeExecutable: z.string().min(1),
    settingSources: z.array(z.enum(['user', 'project', 'local'])),
    systemPrompt: z.enum(['claude_code', 'minimal']),
    interruptGraceMs: z.number().int().positive(),
  })
  .partial();

/** True when the optional SDK package can be found (without loading it). */
function sdkResolvable(): boolean {
  try {
    // The package exports no ./package.json; its main entry resolves under the "default" condition.
    createRequire(import.meta.url).resolve(CLAUDE_AGENT_SDK_PACKAGE);
    return true;
  } catch {
    return false;
  }
}

/** How the claude-sdk back end plugs into configuration, the registry and `parley backends`. */
export const claudeSdkRegistration: BackendRegistration = {
  name: CLAUDE_SDK_BACKEND_NAME,
  continuity: 'native',
  summary: 'Claude Code via @anthropic-ai/claude-agent-sdk 0.3.329 (optional dependency); resumes its own sessions.',
  defaultModel: CLAUDE_SDK_DEFAULT_MODEL,
  apiKeyVariables: ['ANTHROPIC_API_KEY'],
  baseUrlVariables: ['ANTHROPIC_BASE_URL'],
  priority: 10,
  optionsSchema: OptionsSchema,
  // A key, or a Claude Code login in the user's config folder; and the SDK must be installed.
  isConfigured: (settings) =>
    (settings.apiKey !== undefined || existsSync(join(defaultConfigDir(), '.credentials.json'))) && sdkResolvable(),
  create: (settings) => {
    const options = OptionsSchema.parse(settings.options);
    // With a key, sessions live in Parley's data folder, apart from the user's own Claude Code;
    // without one, the CLI needs the user's config folder, where its login is.
    const configDir =
      options.configDir ?? (settings.apiKey && settings.dataDir ? join(settings.dataDir, 'claude-code') : undefined);
    return createClaudeSdkBackend({
      ...(configDir ? { configDir } : {}),
      ...(settings.apiKey ? { apiKey: settings.apiKey } : {}),
      ...(settings.baseUrl ? { baseURL: settings.baseUrl } : {}),
      defaultModel: settings.model,
      models: settings.models,
      ...(options.permissionMode ? { permissionMode: options.permissionMode } : {}),
      ...(options.maxRetries !== undefined ? { maxRetries: options.maxRetries } : {}),
      ...(options.pathToClaudeCodeExecutable ? { pathToClaudeCodeExecutable: options.pathToClaudeCodeExecutable } : {}),
      ...(options.settingSources ? { settingSources: options.settingSources } : {}),
      ...(options.systemPrompt ? { systemPrompt: options.systemPrompt } : {}),
      ...(options.interruptGraceMs !== undefined ? { interruptGraceMs: options.interruptGraceMs } : {}),
    });
  },
};
