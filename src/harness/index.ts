/** Human-in-the-loop workflows: defineHarness / run / startSession, recordings and replay (seed 001). */
export * from './types.js';
export * from './events.js';
export * from './errors.js';
export { defineAgent, defineHarness, isHarness } from './define.js';
export { extractJsonCandidates, parseOutput } from './json-output.js';
export * from './recording.js';
export * from './replay.js';
