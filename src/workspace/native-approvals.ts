import { isAbsolute, relative } from 'node:path';
import type { ExecuteRequest, NativeApprovalAsk } from '../backends/index.js';
import type { ApprovalBroker } from './approvals.js';
import { commandPrefix } from './permission-gate.js';

/**
 * A native back end's approvals (`ExecuteRequest.askApproval`: Codex's commands and patches)
 * asked through the same broker as the workspace tools', so every client that shows those (the
 * TUI, the web UI, an ACP editor, a phone) shows these too, and `allow_always` is remembered under
 * the same scopes: the command's prefix, or the tool for edits and writes. Paths and folders are
 * shown relative to `root` (the project folder) when they lie inside it, as the workspace's are.
 */
export function nativeApprover(
  broker: ApprovalBroker,
  owner: { sessionId: string; conversationId?: string; root?: string },
): NonNullable<ExecuteRequest['askApproval']> {
  const shown = (path: string): string => {
    if (!owner.root || !isAbsolute(path)) return path;
    const inside = relative(owner.root, path);
    return inside === '' ? '.' : inside.startsWith('..') || isAbsolute(inside) ? path : inside;
  };
  return async (ask: NativeApprovalAsk, signal?: AbortSignal) => {
    const prefix = ask.kind === 'command' && ask.command !== undefined ? commandPrefix(ask.command) : undefined;
    const scope =
      ask.kind === 'command'
        ? prefix !== undefined
          ? { scopeKey: `command:${prefix}`, allowAlwaysScope: `commands starting with "${prefix}"` }
          : {}
        : { scopeKey: `tool:${ask.tool}`, allowAlwaysScope: `every ${ask.tool} call in this session` };
    const { decision } = await broker.request(
      {
        sessionId: owner.sessionId,
        ...(owner.conversationId !== undefined ? { conversationId: owner.conversationId } : {}),
        tool: ask.tool,
        kind: ask.kind,
        title: ask.title,
        ...(ask.toolUseId !== undefined ? { toolUseId: ask.toolUseId } : {}),
        ...(ask.command !== undefined ? { command: ask.command } : {}),
        ...(ask.cwd !== undefined ? { cwd: shown(ask.cwd) } : {}),
        ...(ask.path !== undefined ? { path: ask.path.split(', ').map(shown).join(', ') } : {}),
        ...(ask.diff !== undefined ? { diff: ask.diff } : {}),
        ...scope,
      },
      signal ? { signal } : {},
    );
    return decision;
  };
}
