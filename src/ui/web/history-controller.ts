import { RpcError, type ProtocolClient, type SessionInfo } from '../../protocol/index.js';
import { continueTarget, type DraftTarget, type RewindRestore } from './history-model.js';
import type { Store } from './store.js';
import type { Tone } from './state.js';

/** What the page asked a rewind to do. */
export interface RewindRequest {
  /** The last point the conversation keeps. */
  to: number | string;
  /** The point the files go back to, when not `to` (a user message's own seq: the tree its turn started from). */
  filesTo?: number | string;
  restore: RewindRestore;
  /** Overwrite the files the user changed since (after a RESTORE_CONFLICT listed them). */
  overwrite?: boolean;
}

/**
 * How a rewind ended, for its confirmation: done, or refused with the server's code and words,
 * and for a RESTORE_CONFLICT the files the user changed (nothing was changed; ask again with
 * `overwrite`).
 */
export type RewindOutcome =
  { ok: true; restoredFiles?: string[] } | { ok: false; code: string | undefined; message: string; files?: string[] };

/** The history tree's actions (`rewind`, `switch_branch`, `edit_message`, `fork_session`, `restore_checkpoint`). */
export interface HistoryActions {
  /** Makes a branch of `list_branches` the active one; the view is read again on `history_changed`. */
  switchBranch(branch: string): Promise<boolean>;
  rewind(request: RewindRequest): Promise<RewindOutcome>;
  /** Sends `content` as the edited user message `blockId` on a new branch; resolves to the server's refusal, if any. */
  editMessage(blockId: string, content: string): Promise<string | undefined>;
  /**
   * Forks the selected session at `at` (on `backend`, default its own) and opens the fork; when
   * this window has the source's draft, the draft goes on in the fork (undraft, then `draft {
   * session }`). Resolves to the refusal of the fork itself, if any.
   */
  forkSession(at: number | string, backend?: string): Promise<string | undefined>;
  /** Drafts on the selected session, a fork no draft runs (same role, project and task as its scope): "Continue here". */
  continueHere(): Promise<boolean>;
  /** Makes an older checkpoint version current again (a new version copying it). */
  restoreCheckpoint(version: number): Promise<boolean>;
}

export interface HistoryControllerOptions {
  client: ProtocolClient;
  store: Store;
  notice(tone: Tone, text: string): void;
  /** Opens a session (the fork just made). */
  select(sessionId: string): void;
  /** Reads the selected session's checkpoints again. */
  reloadCheckpoints(sessionId: string): Promise<void>;
  /** Reads the channel's draft (just made on `sessionId`) and opens its session. */
  showDraft(sessionId: string): Promise<void>;
}

/**
 * The history tree's side of the controller: the branches of the selected session and the
 * actions on them. Each action answers its own failure (the confirmation or editor shows it); a
 * success is read back from the server (`history_changed` reloads the view).
 */
export class HistoryController implements HistoryActions {
  /** Bumped per branch listing: an answer overtaken by a newer one is dropped. */
  private listing = 0;

  constructor(private readonly options: HistoryControllerOptions) {}

  /**
   * The session's branches. A session that never branched (no segments, no head) has one: no
   * request is made, since listing reads every branch's history.
   */
  async loadBranches(session: SessionInfo | undefined, sessionId: string): Promise<void> {
    const { client, store } = this.options;
    const run = ++this.listing;
    if (session !== undefined && (session.segments ?? []).length === 0 && session.head === undefined) {
      store.dispatch({ type: 'branches', sessionId, branches: undefined });
      return;
    }
    try {
      const { branches } = await client.request('list_branches', { sessionId });
      if (run === this.listing) store.dispatch({ type: 'branches', sessionId, branches });
    } catch {
      // No switcher then; the conversation itself is read and shown apart from this.
      if (run === this.listing) store.dispatch({ type: 'branches', sessionId, branches: undefined });
    }
  }

  async switchBranch(branch: string): Promise<boolean> {
    const sessionId = this.options.store.state.selectedId;
    if (sessionId === undefined) return false;
    try {
      await this.options.client.request('switch_branch', { sessionId, branch });
      return true;
    } catch (error) {
      this.options.notice('error', messageOf(error));
      return false;
    }
  }

  async rewind(request: RewindRequest): Promise<RewindOutcome> {
    const sessionId = this.options.store.state.selectedId;
    if (sessionId === undefined) return { ok: false, code: undefined, message: 'No session is open.' };
    const call = (to: number | string, restore: RewindRestore) =>
      this.options.client.request(
        'rewind',
        {
          sessionId,
          to,
          restore,
          ...(request.overwrite === true && restore !== 'conversation' ? { overwrite: true } : {}),
        },
        // A file restore of a large project can take a while.
        { timeoutMs: 0 },
      );
    const filesTo = request.filesTo ?? request.to;
    let restored: string[] | undefined;
    try {
      if (request.restore !== 'conversation' && filesTo !== request.to) {
        // The files and the conversation go back to different points: the files first, so a refusal
        // (files the user changed) changes nothing, as the server's own `both` does.
        restored = (await call(filesTo, 'files')).files?.restored;
        if (request.restore === 'both') {
          try {
            await call(request.to, 'conversation');
          } catch (error) {
            return {
              ...refusal(error),
              message: `The files were restored, but the conversation was not: ${messageOf(error)}`,
            };
          }
        }
      } else {
        restored = (await call(request.to, request.restore)).files?.restored;
      }
      this.options.notice(
        'success',
        request.restore === 'files'
          ? `Files restored (${restored?.length ?? 0} changed); the conversation stays as it was.`
          : `Rewound${restored !== undefined ? `, with ${restored.length} file(s) restored` : ''}. What came after stays as a branch (‹ › switches back).`,
      );
      return { ok: true, ...(restored !== undefined ? { restoredFiles: restored } : {}) };
    } catch (error) {
      return refusal(error);
    }
  }

  async editMessage(blockId: string, content: string): Promise<string | undefined> {
    if (content.trim() === '') return 'Type the new text of the message first.';
    const { client, store } = this.options;
    store.dispatch({ type: 'turn_started' });
    try {
      await client.request('edit_message', { blockId, content }, { timeoutMs: 0 });
      return undefined;
    } catch (error) {
      store.dispatch({ type: 'turn_ended' });
      return messageOf(error);
    }
  }

  async forkSession(at: number | string, backend?: string): Promise<string | undefined> {
    const { client, store } = this.options;
    const sessionId = store.state.selectedId;
    if (sessionId === undefined) return 'No session is open.';
    // Read before the fork: the window's draft of the source is what goes on in the fork.
    const draft = store.state.draft?.sessionId === sessionId ? store.state.draft : undefined;
    let session: SessionInfo;
    try {
      ({ session } = await client.request('fork_session', {
        sessionId,
        at,
        ...(backend !== undefined ? { backend } : {}),
      }));
    } catch (error) {
      return messageOf(error);
    }
    store.dispatch({ type: 'session_updated', session });
    this.options.select(session.sessionId);
    const forked = `Forked into a new session at seq ${session.forkedFrom?.seq ?? '?'}, on ${session.type}; the source is unchanged`;
    if (!draft) {
      const offered = store.state.draft === undefined && continueTarget(session) !== undefined;
      this.options.notice('success', `${forked}.${offered ? ' Continue here drafts on it.' : ''}`);
      return undefined;
    }
    const target = { role: draft.role, project: draft.project, task: draft.taskSlug };
    if (!(await this.draftOn(session.sessionId, target, true))) return undefined;
    // The draft runs on its role's back end: a fork made on another moves there with a message sent on it.
    const moved = store.state.draft !== undefined && store.state.draft.backend !== session.type;
    this.options.notice(
      'success',
      `${forked}, and the draft goes on in the fork: type to continue it${moved ? ` (choose ${session.type} in the back-end picker to send it there)` : ''}.`,
    );
    return undefined;
  }

  async continueHere(): Promise<boolean> {
    const { store } = this.options;
    const session = store.state.sessions.find((entry) => entry.sessionId === store.state.selectedId);
    const target = session ? continueTarget(session) : undefined;
    if (!session || !target) {
      this.options.notice('error', "Only a fork of a task's draft can be continued here: open one first.");
      return false;
    }
    if (store.state.draft !== undefined) {
      this.options.notice('error', 'This window already has a draft: undraft it first, then continue here.');
      return false;
    }
    const done = await this.draftOn(session.sessionId, target, false);
    if (done) this.options.notice('success', `Drafted ${target.role} on this fork: type to continue it.`);
    return done;
  }

  /**
   * The channel's draft goes on in `sessionId` (undrafting this window's first when `undraft`).
   * A failed step is said as such: after the undraft, the window has no draft any more.
   */
  private async draftOn(sessionId: string, target: DraftTarget, undraft: boolean): Promise<boolean> {
    const { client, store, notice } = this.options;
    store.dispatch({ type: 'busy', key: 'draft', value: true });
    try {
      if (undraft) {
        try {
          await client.request('undraft');
        } catch (error) {
          notice('error', `The fork is session ${sessionId}, but the draft could not move to it: ${messageOf(error)}`);
          return false;
        }
        store.dispatch({ type: 'draft', status: undefined });
      }
      try {
        await client.request('draft', { ...target, session: sessionId });
      } catch (error) {
        notice(
          'error',
          `Drafting ${target.role} on session ${sessionId} failed: ${messageOf(error)}${undraft ? ' The draft of the source was closed; draft again to go on.' : ''}`,
        );
        return false;
      }
      await this.options.showDraft(sessionId);
      return true;
    } finally {
      store.dispatch({ type: 'busy', key: 'draft', value: false });
    }
  }

  async restoreCheckpoint(version: number): Promise<boolean> {
    const sessionId = this.options.store.state.selectedId;
    if (sessionId === undefined) return false;
    try {
      const { checkpoint } = await this.options.client.request('restore_checkpoint', { sessionId, version });
      this.options.notice(
        'success',
        `Checkpoint v${version} is current again, as v${checkpoint.version} (a copy); no version was deleted.`,
      );
      await this.options.reloadCheckpoints(sessionId);
      return true;
    } catch (error) {
      this.options.notice('error', messageOf(error));
      return false;
    }
  }
}

/** A refused rewind as the confirmation shows it: the code, the words, and the files a RESTORE_CONFLICT lists. */
function refusal(error: unknown): Extract<RewindOutcome, { ok: false }> {
  const files = error instanceof RpcError ? error.data['files'] : undefined;
  return {
    ok: false,
    code: error instanceof RpcError ? error.reason : undefined,
    message: messageOf(error),
    ...(Array.isArray(files) ? { files: files.filter((file): file is string => typeof file === 'string') } : {}),
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
