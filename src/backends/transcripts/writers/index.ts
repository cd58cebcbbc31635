/** Transcript writers: Parley's history as a back end's own native transcript. Pure: no file access. */
export * from './portable-history.js';
export * from './claude-code-writer.js';
export * from './gemini-cli-writer.js';
export * from './codex-rollout-writer.js';
