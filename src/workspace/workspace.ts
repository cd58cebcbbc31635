import { ApprovalBroker } from './approvals.js';
import type { WorkspaceFiles } from './file-io.js';
import { detectSandbox, type SandboxInfo } from './sandbox.js';
import { editFileTool } from './tools/edit-file.js';
import { globTool } from './tools/glob-files.js';
import { grepTool } from './tools/grep.js';
import { listFilesTool } from './tools/list-files.js';
import { readFileTool } from './tools/read-file.js';
import { runCommandTool } from './tools/run-command.js';
import { writeFileTool } from './tools/write-file.js';
import type { Approver, PermissionMode } from './types.js';
import {
  DEFAULT_LIMITS,
  type WorkspaceLimits,
  type WorkspacePermission,
  type WorkspaceTool,
  type WorkspaceToolContext,
} from './workspace-tool.js';
import { WorkspacePaths } from './workspace-paths.js';

/**
 * A project folder as agents work in it: its confined paths and its sandbox, opened once (both need
 * the disk), then asked for the toolset of each agent turn, gated by the role's permissions:
 *
 * | permission    | tools                                  |
 * |---------------|----------------------------------------|
 * | `files-read`  | read_file, list_files, glob, grep      |
 * | `files-write` | edit_file, write_file                  |
 * | `shell`       | run_command                            |
 */
export interface WorkspaceOptions {
  /** The project folder; every path resolves inside it. */
  root: string;
  /** Parley's data folder (default `<root>/.parley`): never written by a tool, hidden from commands. */
  dataDir?: string;
  /** `auto` (default): bwrap when it works here; `none`: commands run unconfined. */
  sandbox?: 'auto' | 'none';
  limits?: Partial<WorkspaceLimits>;
}

export interface WorkspaceToolsetOptions {
  sessionId: string;
  conversationId?: string;
  permissions: readonly string[];
  /** A fixed mode, or a function read on every call (a draft's mode can change mid-turn). Default `default`. */
  mode?: PermissionMode | (() => PermissionMode);
  /** Where approvals are asked; default a broker of this toolset's own (with `approver`, when given). */
  broker?: ApprovalBroker;
  /** Answers approvals when no broker is given (a library user's or a harness workflow's callback). */
  approver?: Approver;
  /** Where read_file, edit_file and write_file read and write (an editor's buffers); default the disk. */
  files?: WorkspaceFiles;
  /** Whether commands may use the network in the sandbox (a role's `network: true`). */
  network?: boolean;
  /** Tests and diagnostics: called with each command's process group id once it started. */
  onCommandSpawn?: (pid: number) => void;
}

export const WORKSPACE_PERMISSIONS: readonly WorkspacePermission[] = ['files-read', 'files-write', 'shell'];

export class ProjectWorkspace {
  private constructor(
    readonly paths: WorkspacePaths,
    /** What confines `run_command` here (`none`: nothing). */
    readonly sandbox: SandboxInfo,
    private readonly hidden: readonly string[],
    readonly limits: WorkspaceLimits,
  ) {}

  static async open(options: WorkspaceOptions): Promise<ProjectWorkspace> {
    const paths = await WorkspacePaths.open(
      options.root,
      options.dataDir !== undefined ? { dataDir: options.dataDir } : {},
    );
    const sandbox: SandboxInfo =
      options.sandbox === 'none'
        ? { kind: 'none', detail: 'the sandbox is turned off, so commands run unconfined.' }
        : await detectSandbox();
    const dataDir = options.dataDir ?? `${paths.root}/.parley`;
    return new ProjectWorkspace(paths, sandbox, [dataDir], { ...DEFAULT_LIMITS, ...options.limits });
  }

  /** The tools the permissions grant, for one session (empty when they grant none). */
  tools(options: WorkspaceToolsetOptions): WorkspaceTool[] {
    const granted = new Set(options.permissions);
    const mode = options.mode;
    const context: WorkspaceToolContext = {
      paths: this.paths,
      sessionId: options.sessionId,
      ...(options.conversationId ? { conversationId: options.conversationId } : {}),
      mode: typeof mode === 'function' ? mode : () => mode ?? 'default',
      broker: options.broker ?? new ApprovalBroker(options.approver ? { approver: options.approver } : {}),
      ...(options.files ? { files: options.files } : {}),
      sandbox: { info: this.sandbox, root: this.paths.root, hidden: this.hidden, network: options.network ?? false },
      limits: this.limits,
    };
    const tools: WorkspaceTool[] = [];
    if (granted.has('files-read'))
      tools.push(readFileTool(context), listFilesTool(context), globTool(context), grepTool(context));
    if (granted.has('files-write')) tools.push(editFileTool(context), writeFileTool(context));
    if (granted.has('shell'))
      tools.push(runCommandTool(context, options.onCommandSpawn ? { onSpawn: options.onCommandSpawn } : {}));
    return tools;
  }
}
