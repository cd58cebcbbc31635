export * from './blocks.js';
export * from './events.js';
export * from './session-data.js';
export * from './reducer.js';
export * from './messages.js';
export * from './errors.js';
export * from './tokens.js';
export * from './display.js';
