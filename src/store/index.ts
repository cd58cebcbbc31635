export * from './records.js';
export * from './session-store.js';
export * from './errors.js';
export * from './memory-store.js';
export * from './file-store.js';
export * from './keyed-queue.js';
export * from './data-folder.js';
export * from './postgres/index.js';
