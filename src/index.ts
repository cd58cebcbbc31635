/**
 * `parley`: what a user of the README and `examples/` needs, and nothing more. Each name here is a
 * deliberate choice (the API report in docs/api/ lists them, a test keeps it current); the
 * subpaths under src/entry/ give those who build on one layer its fuller list. A layer's own
 * index.ts is its internal face for the layers above it, not a public one.
 */

// The conversation model: blocks, stream events and the one reducer every client uses.
export {
  applyEvent,
  applyEvents,
  emptyConversation,
  MAIN_CONVERSATION,
  ParleyError,
  ValidationError,
  isParleyError,
  type ErrorFault,
  type ConversationState,
  type ConversationBlock,
  type UserMessageBlock,
  type AssistantTextBlock,
  type ThinkingBlock,
  type ToolUseBlock,
  type ToolResultBlock,
  type SystemBlock,
  type SubagentBlock,
  type BlockStatus,
  type StreamEvent,
  type BlockStartEvent,
  type TextDeltaEvent,
  type BlockUpdateEvent,
  type BlockCompleteEvent,
  type MetadataUpdateEvent,
  type TurnMetadata,
  type Usage,
  type ChatMessage,
} from './conversation/index.js';

// Stores: sessions, drafts and runs, each on files (the default), in memory or in PostgreSQL.
export {
  createFileStore,
  createMemoryStore,
  createPostgresStore,
  createFileDraftStore,
  createMemoryDraftStore,
  createPostgresDraftStore,
  createFileRunStore,
  createMemoryRunStore,
  createPostgresRunStore,
  StoreError,
  type StoreErrorCode,
  type SessionStore,
  type FileStoreOptions,
  type PostgresStoreOptions,
  type PostgresDraftStoreOptions,
  type SessionRecord,
  type SessionScope,
  type SessionFilter,
  type Checkpoint,
  type DraftStore,
  type RunStore,
  type RunRecord,
  type RunStatus,
} from './store/index.js';

// Back ends: the contract, the factory that reads parley.config.json, and each adapter.
export {
  createBackend,
  registerBackend,
  readParleyConfig,
  createOpenAiCompatibleBackend,
  createAnthropicApiBackend,
  createClaudeSdkBackend,
  createGeminiCliBackend,
  createScriptedBackend,
  UnsupportedError,
  ConfigError,
  UnknownBackendError,
  BackendNotConfiguredError,
  ClaudeSdkNotInstalledError,
  GeminiCliNotInstalledError,
  type AgentBackend,
  type BackendDescription,
  type ExecuteRequest,
  type AgentTurn,
  type ToolDefinition,
  type ModelInfo,
  type BackendRegistration,
  type ParleyConfig,
  type OpenAiCompatibleOptions,
  type AnthropicApiBackendOptions,
  type ClaudeSdkBackendOptions,
  type GeminiCliOptions,
  type ScriptedBackend,
  type ScriptedBackendOptions,
  type ScriptStep,
  type ScriptedCall,
} from './backends/index.js';

// Sessions: the manager (lifecycle, requests, compaction) and one turn on a back end.
export {
  createSessionManager,
  SessionManager,
  SessionError,
  CompactionError,
  runTurn,
  importTranscripts,
  type SessionManagerOptions,
  type SessionManagerEvents,
  type CreateSessionOptions,
  type GetOrCreateSessionOptions,
  type SessionErrorCode,
  type RunTurnOptions,
  type TurnHandle,
  type RequestOptions,
  type BuiltRequest,
  type CompactOptions,
  type CompactionResult,
  type ImportOptions,
  type ImportResult,
} from './sessions/index.js';

// The harness: human-in-the-loop workflows, replay, and durable runs.
export {
  defineHarness,
  defineAgent,
  replay,
  createRunService,
  HarnessError,
  AbortedError,
  AgentTurnError,
  OutputValidationError,
  ReplayDivergenceError,
  TimeoutError,
  type HarnessErrorCode,
  type ReplayOptions,
  type RunService,
  type RunServiceOptions,
  type StartRunRequest,
  type ForkRunOptions,
  type Harness,
  type HarnessDefinition,
  type HarnessInstance,
  type HarnessResult,
  type HarnessCreateOptions,
  type AgentDefinition,
  type AgentOptions,
  type SessionContext,
  type InteractiveSession,
  type WaitOptions,
  type UserResponse,
  type HarnessEvent,
  type SessionEvent,
} from './harness/index.js';

// Drafts: an agent drafted by role, its workers and agent conversations.
export {
  createDraftService,
  DraftError,
  type DraftErrorCode,
  type DraftService,
  type DraftServiceOptions,
} from './draft/index.js';

// The server (`parley serve` in code) and the typed client of its protocol.
export { startServer, type ServerOptions, type RunningServer } from './server/index.js';
export {
  ProtocolClient,
  ProtocolClientError,
  RpcError,
  webSocketTransport,
  type ProtocolClientOptions,
  type Transport,
  type MethodName,
  type MethodParams,
  type MethodResult,
  type NotificationName,
  type NotificationParams,
} from './protocol/index.js';
