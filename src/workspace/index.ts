/**
 * The workspace layer's public face: Parley's own tools for agents on managed back ends (read,
 * search, edit, run), confined to the project folder, gated by permission modes, approved through
 * one broker, commands sandboxed where the machine can.
 */
export * from './types.js';
export { WorkspaceError } from './errors.js';
export { ApprovalBroker, type ApprovalBrokerOptions, type ApprovalAsk } from './approvals.js';
export {
  ProjectWorkspace,
  WORKSPACE_PERMISSIONS,
  type WorkspaceOptions,
  type WorkspaceToolsetOptions,
} from './workspace.js';
export { diskFiles, type WorkspaceFiles } from './file-io.js';
export { WorkspacePaths, type ResolvedPath } from './workspace-paths.js';
export {
  DEFAULT_LIMITS,
  type WorkspaceLimits,
  type WorkspacePermission,
  type WorkspaceTool,
} from './workspace-tool.js';
export { detectSandbox, type SandboxInfo } from './sandbox.js';
export { commandPrefix, needsApproval } from './permission-gate.js';
export { nativeApprover } from './native-approvals.js';
export { capMiddle } from './output-cap.js';
export { runProcess, type RunProcessOptions, type RunProcessResult } from './run-process.js';
export { grepProject, type GrepMatches } from './tools/grep.js';
