/** Parley's public API. Each layer's index.ts is its public face; this re-exports them. */
export * from './conversation/index.js';
export * from './store/index.js';
export * from './backends/index.js';
export * from './sessions/index.js';
export * from './draft/index.js';
export * from './harness/index.js';
export * from './workspace/index.js';
