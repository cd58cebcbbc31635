/** The ACP face: Parley as an Agent Client Protocol agent for editors (Zed, JetBrains IDEs, Neovim, Emacs). */
export { serveAcp, serveAcpOnStdio, type AcpAgentOptions, type RunningAcpAgent } from './acp-agent.js';
export type { AcpBackends } from './workspaces.js';
export {
  askingFirst,
  clientFilesOf,
  createPermissionBridge,
  type AcpPermissionBridge,
  type ClientFiles,
  type PermissionDecision,
  type PermissionRequest,
  type ToolCallAnnouncer,
} from './client-bridge.js';
export { editorFilesOf } from './editor-files.js';
export { LiveUpdates, replayUpdates, stopReasonOf } from './session-updates.js';
