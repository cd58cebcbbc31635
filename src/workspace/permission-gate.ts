import type { ApprovalAsk } from './approvals.js';
import type { WorkspaceToolContext, WorkspaceToolResult } from './workspace-tool.js';
import type { ApprovalKind, PermissionMode } from './types.js';

/**
 * Whether a change may go ahead under the session's permission mode, asking the user through the
 * broker when the mode says so. Returns undefined when allowed, or the result the model gets
 * instead: a denial ("denied by the user") or a refusal (`plan` mode), with nothing changed.
 * `toolUseId` names the tool use that asks, so a client shows the question with that call.
 */
export async function gate(
  context: WorkspaceToolContext,
  ask: Omit<ApprovalAsk, 'sessionId' | 'conversationId' | 'toolUseId'>,
  signal: AbortSignal | undefined,
  toolUseId?: string,
): Promise<WorkspaceToolResult | undefined> {
  const mode = context.mode();
  const what = describeKind(ask.kind);
  if (mode === 'plan') {
    return {
      content: `Refused: the session is in plan mode, which allows reading only, so this ${what} was not made. Describe the change you would make instead; the user can switch the mode when they want it made.`,
      isError: true,
      data: { refused: 'plan', ...(ask.path ? { path: ask.path } : {}) },
    };
  }
  if (!needsApproval(mode, ask.kind)) return undefined;
  const { decision } = await context.broker.request(
    {
      ...ask,
      sessionId: context.sessionId,
      ...(toolUseId !== undefined ? { toolUseId } : {}),
      ...(context.conversationId ? { conversationId: context.conversationId } : {}),
    },
    signal ? { signal } : {},
  );
  if (decision !== 'deny') return undefined;
  return {
    content: `Denied by the user: this ${what} was not made${ask.path ? ` (${ask.path} is unchanged)` : ''}. Do not retry it as it is; ask the user what they want instead, or take another approach.`,
    isError: true,
    data: { denied: true, ...(ask.path ? { path: ask.path } : {}), ...(ask.command ? { command: ask.command } : {}) },
  };
}

/** `default` asks for every write and command; `acceptEdits` for commands only; `bypassPermissions` never. */
export function needsApproval(mode: PermissionMode, kind: ApprovalKind): boolean {
  if (mode === 'bypassPermissions') return false;
  if (mode === 'acceptEdits') return kind === 'command';
  return true;
}

function describeKind(kind: ApprovalKind): string {
  return kind === 'command' ? 'command' : kind === 'edit' ? 'edit' : 'write';
}

/**
 * The prefix "allow always" remembers for a command: its program and, when the next word is a
 * plain subcommand (`npm test`, `git status`), that too. A command that chains or redirects
 * (`;`, `&&`, `||`, `|`, `&`, `>`, `<`, backquotes, `$(`, a newline) gets none: approving
 * `npm test` must not approve `npm test && rm -rf ~`.
 */
export function commandPrefix(command: string): string | undefined {
  if (/[;&|`<>\n\r]|\$\(/.test(command)) return undefined;
  const words = command.trim().split(/\s+/);
  const program = words[0];
  if (!program) return undefined;
  const next = words[1];
  return next !== undefined && /^[A-Za-z][\w:-]*$/.test(next) ? `${program} ${next}` : program;
}
