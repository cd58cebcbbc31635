export * from './openai-compatible-backend.js';
export { describeOpenAiError } from './errors.js';
