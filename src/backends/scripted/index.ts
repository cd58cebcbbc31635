export * from './script.js';
export * from './scripted-backend.js';
export * from './script-file.js';
