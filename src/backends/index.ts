/** The back-end layer's public face: the contract, every adapter, configuration and the registry. */
export * from './agent-backend.js';
export * from './failures.js';
export * from './turn-events.js';
export * from './native-tool-hooks.js';
export * from './abort.js';
export * from './scripted/index.js';
export * from './pricing.js';
export * from './openai-compatible/index.js';
export * from './anthropic-api/index.js';
export * from './gemini-cli/index.js';
export * from './claude-sdk/index.js';
export * from './codex/index.js';
export * from './backend-registration.js';
export * from './registry.js';
export * from './config.js';
export * from './create-backend.js';
// Registers the built-in back ends (a side effect: the registry imports none of them).
import './builtin-backends.js';
export * from './transcripts/index.js';
