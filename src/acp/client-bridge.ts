import type { AgentContext, ClientCapabilities, PermissionOption, ToolCallUpdate } from '@agentclientprotocol/sdk';
import type { ToolDefinition, ToolExecuteOptions, ToolOutput } from '../backends/index.js';
import type { ApprovalDecision, ApprovalRequest } from '../workspace/index.js';
import { approvalToolCallOf, textContent } from './tool-calls.js';

/**
 * The editor's side of a session that Parley's tools reach through: asking the person whether a
 * tool may run (`session/request_permission`) and reading and writing files through the editor
 * (`fs/read_text_file`, `fs/write_text_file`), so the agent sees unsaved buffers and its edits
 * land in the editor. Small interfaces, so the workspace tools take them without
 * knowing ACP: the permission broker asks `AcpPermissionBridge`, the file tools use `ClientFiles`
 * when the editor offers it and the local disk otherwise.
 */

export type PermissionDecision = 'allow' | 'reject';

export interface PermissionRequest {
  /** The tool's name; "allow always" holds for this name for the rest of the session. */
  toolName: string;
  /**
   * What the editor shows: the tool call (id, title, kind, raw input, a diff for an edit). Its id
   * is the tool use's own, so the prompt stands with the call the editor was shown.
   */
  toolCall: ToolCallUpdate;
}

/**
 * How the bridge keeps the editor's tool calls whole: a permission request names a tool call the
 * editor was told of before, and a call that no tool use of the session's log closes is closed here.
 */
export interface ToolCallAnnouncer {
  /** Sends a pending `tool_call` for it unless the editor was told of that call already; resolves once sent. */
  announce(toolCall: ToolCallUpdate): Promise<void>;
  /** Sends a `tool_call_update`. */
  update(update: ToolCallUpdate): void;
}

export interface AcpPermissionBridge {
  /**
   * Asks the person (allow once, allow always, reject). Resolves `reject` when the prompt was
   * cancelled or the editor answered with an unknown option: a tool never runs unasked.
   */
  ask(request: PermissionRequest, signal?: AbortSignal): Promise<PermissionDecision>;
  /**
   * The workspace tools' approver (their ApprovalBroker's): asks about an edit (shown as its diff),
   * a write or a command (its text the title), with paths made absolute against the project folder
   * `root`. It remembers nothing itself: `allow_always` goes back to the broker, which remembers it
   * under the request's own scope (the tool for edits and writes, a command's prefix for commands),
   * and is not offered when the request has none (a chained command is asked about each time).
   * A cancelled question is a deny.
   */
  approve(request: ApprovalRequest, root: string, signal?: AbortSignal): Promise<ApprovalDecision>;
  /** Closes a tool call that no tool use of the session's log will close (one the back end gave no id for). */
  close(update: ToolCallUpdate): void;
}

export interface ClientFiles {
  /** What the editor offers: a file tool uses the disk for what it does not. */
  readonly offers: { read: boolean; write: boolean };
  /** The file's text as the editor has it (unsaved changes included); `line` is 1-based. */
  readTextFile(path: string, options?: { line?: number; limit?: number }): Promise<string>;
  writeTextFile(path: string, content: string): Promise<void>;
}

const OPTIONS: PermissionOption[] = [
  { optionId: 'allow_once', name: 'Allow once', kind: 'allow_once' },
  { optionId: 'allow_always', name: 'Allow always', kind: 'allow_always' },
  { optionId: 'reject_once', name: 'Reject', kind: 'reject_once' },
];

/**
 * Asks through `session/request_permission`, each time after `calls` told the editor of the tool
 * call asked about; remembers "allow always" per tool name for the session.
 */
export function createPermissionBridge(
  client: AgentContext,
  sessionId: string,
  calls: ToolCallAnnouncer,
): AcpPermissionBridge {
  const alwaysAllowed = new Set<string>();
  return {
    async ask(request, signal) {
      if (alwaysAllowed.has(request.toolName)) return 'allow';
      await calls.announce(request.toolCall);
      const response = await client.request(
        'session/request_permission',
        { sessionId, toolCall: request.toolCall, options: OPTIONS },
        signal ? { cancellationSignal: signal } : undefined,
      );
      if (response.outcome.outcome !== 'selected') return 'reject';
      if (response.outcome.optionId === 'allow_always') {
        alwaysAllowed.add(request.toolName);
        return 'allow';
      }
      return response.outcome.optionId === 'allow_once' ? 'allow' : 'reject';
    },
    async approve(request, root, signal) {
      const options: PermissionOption[] =
        request.allowAlwaysScope === undefined ? OPTIONS.filter((option) => option.kind !== 'allow_always') : OPTIONS;
      const toolCall = approvalToolCallOf(request, root);
      await calls.announce(toolCall);
      const response = await client.request(
        'session/request_permission',
        { sessionId, toolCall, options },
        signal ? { cancellationSignal: signal } : undefined,
      );
      const chosen = response.outcome.outcome === 'selected' ? response.outcome.optionId : undefined;
      const decision: ApprovalDecision =
        chosen === 'allow_always' && request.allowAlwaysScope !== undefined
          ? 'allow_always'
          : chosen === 'allow_once'
            ? 'allow_once'
            : 'deny';
      // A tool use of the log closes its own call (its result); one the back end gave no id for is closed here.
      if (decision === 'deny' && request.toolUseId === undefined)
        calls.update({
          toolCallId: toolCall.toolCallId,
          status: 'failed',
          content: [textContent('Denied by the user.')],
        });
      return decision;
    },
    close(update) {
      calls.update(update);
    },
  };
}

/** The editor's file access, or undefined when it offers neither read nor write (the tools then use the disk). */
export function clientFilesOf(
  client: AgentContext,
  sessionId: string,
  capabilities: ClientCapabilities | undefined,
): ClientFiles | undefined {
  const fs = capabilities?.fs;
  if (!fs?.readTextFile && !fs?.writeTextFile) return undefined;
  return {
    offers: { read: fs.readTextFile === true, write: fs.writeTextFile === true },
    async readTextFile(path, options = {}) {
      if (!fs.readTextFile) throw new Error('The editor does not offer fs/read_text_file.');
      const response = await client.request('fs/read_text_file', {
        sessionId,
        path,
        ...(options.line !== undefined ? { line: options.line } : {}),
        ...(options.limit !== undefined ? { limit: options.limit } : {}),
      });
      return response.content;
    },
    async writeTextFile(path, content) {
      if (!fs.writeTextFile) throw new Error('The editor does not offer fs/write_text_file.');
      await client.request('fs/write_text_file', { sessionId, path, content });
    },
  };
}

/**
 * A tool that asks before it runs. A rejection is the tool's result (an error the model reads and
 * can act on), not a failed turn. The question names the tool use being executed
 * (`ToolExecuteOptions.toolUseId`), whose result closes the call in the editor; without one it
 * names the call `describe` gives, and this closes it with the tool's result.
 */
export function askingFirst(
  tool: ToolDefinition,
  bridge: AcpPermissionBridge,
  describe: (input: unknown) => ToolCallUpdate,
): ToolDefinition {
  const askThenRun = async (
    toolCall: ToolCallUpdate,
    input: unknown,
    options: ToolExecuteOptions,
  ): Promise<ToolOutput> => {
    let decision: PermissionDecision;
    try {
      decision = await bridge.ask({ toolName: tool.name, toolCall }, options.signal);
    } catch (error) {
      return {
        content: `${tool.name} did not run: the editor could not be asked for permission (${error instanceof Error ? error.message : String(error)}).`,
        isError: true,
      };
    }
    if (decision === 'reject')
      return {
        content: `The user declined ${tool.name}; it did not run. Ask them, or go on without it.`,
        isError: true,
      };
    return tool.execute(input, options);
  };
  return {
    ...tool,
    async execute(input, options): Promise<ToolOutput> {
      const described = describe(input);
      const toolCall = options.toolUseId !== undefined ? { ...described, toolCallId: options.toolUseId } : described;
      const output = await askThenRun(toolCall, input, options);
      if (options.toolUseId === undefined)
        bridge.close({
          toolCallId: toolCall.toolCallId,
          status: output.isError ? 'failed' : 'completed',
          content: output.content === '' ? [] : [textContent(output.content)],
        });
      return output;
    },
  };
}
