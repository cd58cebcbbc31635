export {
  createClaudeSdkBackend,
  CLAUDE_SDK_DEFAULT_MODEL,
  type ClaudeSdkBackendOptions,
} from './claude-sdk-backend.js';
export { CLAUDE_SDK_BACKEND_NAME } from './turn-mapper.js';
export { ClaudeSdkNotInstalledError, CLAUDE_AGENT_SDK_VERSION, type SdkLoader } from './sdk-loader.js';
export { nativeIdFor, encodeCwd, defaultConfigDir } from './native-storage.js';
export { claudeSdkRegistration } from './registration.js';
