export {
  createAnthropicApiBackend,
  ANTHROPIC_API_BACKEND_NAME,
  ANTHROPIC_API_DEFAULT_MODEL,
  type AnthropicApiBackendOptions,
} from './anthropic-api-backend.js';
export { failureFromStatus, type ApiFailureContext } from './api-failures.js';
export { anthropicApiRegistration } from './registration.js';
