export * from './script.js';
export * from './scripted-backend.js';
