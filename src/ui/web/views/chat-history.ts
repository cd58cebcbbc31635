import type { ConversationBlock } from '../../../conversation/index.js';
import type { Actions } from '../controller.js';
import {
  forkPoints,
  placeForkPoints,
  rewindTargetOf,
  type ForkPoint,
  type RewindRestore,
  type RewindTarget,
} from '../history-model.js';
import { canPrompt, selectedSession, type AppState } from '../state.js';
import { ForkDialog, RewindDialog } from './history-dialogs.js';
import { blockActions, branchSwitcher, MessageEditor } from './history-views.js';

export interface ChatHistoryOptions {
  /** Puts text in the prompt box when it is empty (a message rewound before, to edit and send again). */
  offerPrompt(text: string): void;
  /** Something the chat shows changed outside a state change (the editor opened or closed): draw again. */
  redraw(): void;
}

/**
 * The history tree in the chat panel: which blocks get which actions (rewind, edit, fork), the
 * switchers at the fork points, the inline editor and the two dialogs. The chat view asks it, per
 * block, for an action key (part of the block's signature, so a block is rebuilt when its actions
 * change) and for the elements to show.
 */
export class ChatHistory {
  readonly dialogs: HTMLElement[];
  private readonly rewindDialog: RewindDialog;
  private readonly forkDialog: ForkDialog;
  private state: AppState | undefined;
  private blocks: readonly ConversationBlock[] = [];
  /** What the actions depend on; a change rebuilds the blocks that have actions. */
  private context = '';
  private placement: { before: Map<string, ForkPoint[]>; end: ForkPoint[] } = { before: new Map(), end: [] };
  private placedFrom: { branches: unknown; blocks: unknown; session: unknown } = {
    branches: undefined,
    blocks: undefined,
    session: undefined,
  };
  private editor: MessageEditor | undefined;
  private readonly switchers = new Map<string, { signature: string; element: HTMLElement }>();

  constructor(
    private readonly actions: Actions,
    private readonly options: ChatHistoryOptions,
  ) {
    this.rewindDialog = new RewindDialog({
      rewind: (request) =>
        actions.rewind
          ? actions.rewind(request)
          : Promise.resolve({ ok: false, code: undefined, message: 'This page cannot rewind.' }),
      cancelTurn: () => actions.cancel(),
      onRewound: (target, restore) => this.rewound(target, restore),
    });
    this.forkDialog = new ForkDialog({
      fork: (at, backend) =>
        actions.forkSession ? actions.forkSession(at, backend) : Promise.resolve('This page cannot fork.'),
    });
    this.dialogs = [this.rewindDialog.element, this.forkDialog.element];
  }

  /** Takes the state to draw; true when the switchers or the actions changed (the blocks are placed again). */
  update(state: AppState): boolean {
    this.state = state;
    const view = state.view;
    const session = selectedSession(state);
    this.blocks = view?.conversation.blocks ?? [];
    const writable = session !== undefined && session.status !== 'archived' && session.readOnly !== true;
    const editing = this.editor?.blockId;
    // The message being edited left the branch shown (another window rewound it away): the editor goes.
    if (editing !== undefined && view?.reloading !== true && !this.blocks.some((block) => block.id === editing))
      this.editor = undefined;
    const context = [
      writable ? 'w' : '',
      canPrompt(state) ? 'e' : '',
      this.editor?.blockId ?? '',
      view?.trace.pointsBefore.size ?? 0,
    ].join('|');
    let changed = context !== this.context;
    this.context = context;
    const from = { branches: view?.branches, blocks: this.blocks, session: session?.segments };
    if (
      from.branches !== this.placedFrom.branches ||
      from.session !== this.placedFrom.session ||
      (from.blocks !== this.placedFrom.blocks && view?.branches !== undefined)
    ) {
      this.placedFrom = from;
      const points = session && view?.branches ? forkPoints(session, view.branches) : [];
      const next = placeForkPoints(points, this.blocks);
      changed ||= !samePlacement(this.placement, next);
      this.placement = next;
    }
    return changed;
  }

  /** What a block's actions depend on (empty for a block with none). */
  actionKey(block: ConversationBlock, inThread: boolean): string {
    if (inThread || !hasActions(block)) return '';
    return `${this.context}|${this.editor?.blockId === block.id ? 'editing' : ''}`;
  }

  /** The editor, when this user message is being edited. */
  editorFor(blockId: string): HTMLElement | undefined {
    return this.editor?.blockId === blockId ? this.editor.element : undefined;
  }

  /** The block's action buttons, or nothing when it has none here. */
  actionsFor(block: ConversationBlock, inThread: boolean): HTMLElement | null {
    if (inThread || !hasActions(block) || !this.state) return null;
    const state = this.state;
    const session = selectedSession(state);
    const writable = session !== undefined && session.status !== 'archived' && session.readOnly !== true;
    const trace = state.view?.trace;
    const rewindable =
      writable &&
      trace !== undefined &&
      (block.type !== 'user_message' || trace.pointsBefore.has(block.id)) &&
      this.actions.rewind !== undefined;
    const fork = this.actions.forkSession
      ? () =>
          this.forkDialog.open(
            block.id,
            block.type === 'user_message'
              ? 'this message'
              : block.type === 'system'
                ? 'this checkpoint'
                : 'this answer',
            session?.type ?? 'its back end',
            state.backends,
          )
      : undefined;
    if (block.type === 'assistant_text') return fork ? blockActions('answer', { fork }) : null;
    const rewind = rewindable
      ? () => {
          const target = rewindTargetOf(this.blocks, block.id, trace);
          if (target) this.rewindDialog.open(target, this.state?.fileSnapshots);
        }
      : undefined;
    const edit =
      block.type === 'user_message' && writable && canPrompt(state) && this.actions.editMessage
        ? () => this.openEditor(block.id, block.content)
        : undefined;
    return blockActions(block.type === 'user_message' ? 'message' : 'checkpoint', {
      ...(rewind ? { rewind } : {}),
      ...(edit ? { edit } : {}),
      ...(fork ? { fork } : {}),
    });
  }

  /** The switchers that go before this block. */
  switchersBefore(blockId: string): HTMLElement[] {
    return (this.placement.before.get(blockId) ?? []).map((point) => this.switcher(point));
  }

  /** The switchers after the last block (the active branch was rewound to its end). */
  switchersAtEnd(): HTMLElement[] {
    return this.placement.end.map((point) => this.switcher(point));
  }

  private switcher(point: ForkPoint): HTMLElement {
    const key = String(point.seq);
    const signature = JSON.stringify([
      point.activeIndex,
      point.options.map((option) => [option.branch.id, option.next, option.branch.lastMessage, option.branch.turns]),
    ]);
    const cached = this.switchers.get(key);
    if (cached && cached.signature === signature) return cached.element;
    const element = branchSwitcher(point, (branch) =>
      this.actions.switchBranch ? this.actions.switchBranch(branch) : Promise.resolve(false),
    );
    this.switchers.set(key, { signature, element });
    return element;
  }

  private openEditor(blockId: string, text: string): void {
    this.editor = new MessageEditor(blockId, text, {
      submit: async (content) => {
        const refused = await (this.actions.editMessage?.(blockId, content) ??
          Promise.resolve('This page cannot edit.'));
        if (refused === undefined) this.closeEditor();
        return refused;
      },
      cancel: () => this.closeEditor(),
    });
    this.options.redraw();
    this.editor.focus();
  }

  private closeEditor(): void {
    const blockId = this.editor?.blockId;
    this.editor = undefined;
    this.options.redraw();
    // Back to the message's own Edit button, for a keyboard user.
    if (blockId !== undefined)
      document.querySelector<HTMLElement>(`[data-block-id="${CSS.escape(blockId)}"] [data-testid="edit"]`)?.focus();
  }

  private rewound(target: RewindTarget, restore: RewindRestore): void {
    // As Claude Code does: the message rewound before is offered again in the prompt box.
    if (target.kind === 'message' && restore !== 'files') this.options.offerPrompt(target.text);
  }
}

function hasActions(block: ConversationBlock): boolean {
  return (
    block.type === 'user_message' ||
    block.type === 'assistant_text' ||
    (block.type === 'system' && block.subtype === 'compaction')
  );
}

function samePlacement(
  a: { before: Map<string, ForkPoint[]>; end: ForkPoint[] },
  b: { before: Map<string, ForkPoint[]>; end: ForkPoint[] },
): boolean {
  const describe = (placement: typeof a) =>
    JSON.stringify([
      [...placement.before.entries()].map(([id, points]) => [id, points.map(pointKey)]),
      placement.end.map(pointKey),
    ]);
  return describe(a) === describe(b);
}

function pointKey(point: ForkPoint): unknown {
  return [point.seq, point.activeIndex, point.options.map((option) => [option.branch.id, option.next])];
}
