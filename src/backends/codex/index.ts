export {
  createCodexBackend,
  describeCodexFailure,
  renderAgentsMd,
  CODEX_BACKEND_NAME,
  CODEX_DEFAULT_MODEL,
  type CodexBackendOptions,
} from './codex-backend.js';
export {
  CodexEventMapper,
  toUsage as codexUsage,
  turnUsage as codexTurnUsage,
  type CodexTotals,
} from './event-mapper.js';
export { findRollout, readRolloutTotals } from './rollouts.js';
export {
  CodexNotInstalledError,
  CODEX_INSTALL_COMMAND,
  CODEX_SDK_PACKAGE,
  CODEX_SDK_VERSION,
  codexResolvable,
  type CodexSdk,
  type CodexSdkLoader,
} from './sdk-loader.js';
export { codexRegistration } from './registration.js';
export {
  CodexRolloutParser,
  CodexRolloutScan,
  parseCodexRollout,
  type CodexRolloutParserOptions,
} from './rollout-reader.js';
