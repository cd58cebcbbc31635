export {
  createCodexBackend,
  describeCodexFailure,
  renderAgentsMd,
  CODEX_BACKEND_NAME,
  CODEX_DEFAULT_MODEL,
  codexPolicyOf,
  mcpServersOf as codexMcpServersOf,
  type CodexBackendOptions,
  type CodexMcpServer,
  type CodexPolicy,
} from './codex-backend.js';
export {
  CODEX_MCP_TOKEN_VARIABLE,
  CODEX_PARLEY_MCP_SERVER,
  startMcpBridge as startCodexMcpBridge,
  type McpBridge as CodexMcpBridge,
} from './mcp-bridge-face.js';
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
