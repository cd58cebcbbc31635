import { anthropicApiRegistration } from './anthropic-api/registration.js';
import { claudeSdkRegistration } from './claude-sdk/registration.js';
import { codexRegistration } from './codex/registration.js';
import { geminiCliRegistration } from './gemini-cli/registration.js';
import { openAiCompatibleRegistration } from './openai-compatible/registration.js';
import { registerBackend } from './registry.js';
import { scriptedRegistration } from './scripted/registration.js';

/**
 * Registers Parley's own back ends. The layer's index imports this module, so they are known
 * before anything above the layer asks; the registry itself imports no back end.
 */
for (const registration of [
  scriptedRegistration,
  openAiCompatibleRegistration,
  geminiCliRegistration,
  anthropicApiRegistration,
  claudeSdkRegistration,
  codexRegistration,
]) {
  registerBackend(registration);
}
