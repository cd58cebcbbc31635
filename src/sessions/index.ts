export * from './session-manager.js';
export * from './session-ids.js';
export * from './errors.js';
export { TypedEmitter } from './typed-emitter.js';
export * from './turn-runner.js';
