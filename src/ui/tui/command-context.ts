import type { ProtocolClient } from '../../protocol/index.js';
import { oneLine } from './format.js';
import type { Dialogs } from './dialogs.js';
import type { NoteLine, ViewAction, ViewState } from './view-state.js';

/**
 * What a slash command's module is given by the controller: the protocol client, the view state
 * and its reducer, the notes it prints, and the dialogs it asks with. The commands are split by
 * area (catalog-commands.ts, session-commands.ts, history-commands.ts, backend-command.ts); the
 * controller keeps the connection, the draft's history and the turns.
 */
export interface CommandContext {
  readonly client: ProtocolClient;
  readonly dialogs: Dialogs;
  state(): ViewState;
  dispatch(action: ViewAction): void;
  clock(): number;
  note(lines: NoteLine[]): void;
  /** A note in red starting with ✗. */
  error(text: string): void;
  /** Roles and tasks of the active project, read again (for completion and /draft). */
  refreshCatalog(): Promise<void>;
  /**
   * Closes the channel's draft and drafts its role again on `sessionId` (a fork of its session),
   * then shows that session; with `backend`, the next message moves it there. Resolves false,
   * having said why, when the new draft could not be made.
   */
  continueIn(sessionId: string, backend?: string): Promise<boolean>;
}

/** True when `args` is empty; otherwise says how the command is typed and returns false. */
export function noArguments(context: CommandContext, command: string, args: string): boolean {
  if (args === '') return true;
  context.error(`/${command} takes no arguments (got "${oneLine(args, 40)}"). Usage: /${command}`);
  return false;
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
