import type { SessionInfo } from '../../../protocol/index.js';
import { h } from '../dom.js';
import { describeOption, type ForkPoint } from '../history-model.js';
import { sessionLabel } from '../view-model.js';

/**
 * The history tree's pieces in the conversation: the `‹ 2/3 ›` switcher at a fork point, the
 * actions on a block (rewind, edit, fork) and the inline editor of a user message. Buttons are
 * real buttons (keyboard and screen readers reach them; 44 px on a phone, styles.css).
 */

/** The switcher of one fork point: the previous and next ways on from it, and which one is shown. */
export function branchSwitcher(point: ForkPoint, onSwitch: (branch: string) => Promise<boolean>): HTMLElement {
  const count = point.options.length;
  const shown = point.activeIndex;
  const label = h('span', { class: 'branch-count', 'data-testid': 'branch-count' }, `${shown + 1}/${count}`);
  const go = (index: number) => {
    const option = point.options[index];
    if (!option || option.active) return;
    for (const button of [previous, next]) button.disabled = true;
    label.textContent = `${index + 1}/${count}…`;
    void onSwitch(option.branch.id).then((switched) => {
      // Switched: `history_changed` redraws the conversation, and this switcher with it.
      if (!switched) {
        previous.disabled = shown === 0;
        next.disabled = shown === count - 1;
        label.textContent = `${shown + 1}/${count}`;
      }
    });
  };
  const previous = h(
    'button',
    {
      type: 'button',
      class: 'branch-step',
      'data-testid': 'branch-previous',
      'aria-label': shown > 0 ? `Previous branch. ${describeOption(point, shown - 1)}` : 'No earlier branch',
      title: shown > 0 ? describeOption(point, shown - 1) : '',
      disabled: shown === 0,
      onclick: () => go(shown - 1),
    },
    '‹',
  );
  const next = h(
    'button',
    {
      type: 'button',
      class: 'branch-step',
      'data-testid': 'branch-next',
      'aria-label': shown < count - 1 ? `Next branch. ${describeOption(point, shown + 1)}` : 'No later branch',
      title: shown < count - 1 ? describeOption(point, shown + 1) : '',
      disabled: shown === count - 1,
      onclick: () => go(shown + 1),
    },
    '›',
  );
  const rewoundHere = point.options[shown]?.next === undefined;
  return h(
    'div',
    {
      class: 'branch-switch',
      role: 'group',
      'aria-label': `Branches at this point: ${describeOption(point, shown)}`,
      'data-testid': 'branch-switch',
      'data-fork-seq': point.seq,
    },
    previous,
    label,
    next,
    h(
      'span',
      { class: 'muted small branch-note' },
      rewoundHere
        ? 'You rewound here: your next message starts a new branch.'
        : `branch ${shown + 1} of ${count} from here`,
    ),
  );
}

export interface BlockActionHandlers {
  rewind?: () => void;
  edit?: () => void;
  fork?: () => void;
}

/** The actions of one block, each a button named for what it does there. */
export function blockActions(kind: 'message' | 'checkpoint' | 'answer', handlers: BlockActionHandlers): HTMLElement {
  const what = kind === 'message' ? 'this message' : kind === 'checkpoint' ? 'this checkpoint' : 'this answer';
  const button = (name: string, glyph: string, text: string, label: string, onclick: () => void) =>
    h(
      'button',
      { type: 'button', class: 'block-action', 'data-testid': name, 'aria-label': label, title: label, onclick },
      h('span', { 'aria-hidden': 'true' }, glyph),
      ` ${text}`,
    );
  return h(
    'div',
    { class: 'block-actions', role: 'group', 'aria-label': `Actions on ${what}` },
    handlers.rewind
      ? button(
          'rewind',
          '↶',
          'Rewind',
          kind === 'message' ? 'Rewind to before this message' : 'Rewind to this checkpoint',
          handlers.rewind,
        )
      : null,
    handlers.edit ? button('edit', '✎', 'Edit', 'Edit and resend this message', handlers.edit) : null,
    handlers.fork ? button('fork', '⋔', 'Fork', `Fork a new session from ${what}`, handlers.fork) : null,
  );
}

/**
 * The inline editor of a user message: its text in a textarea, sent on a new branch (Enter, or
 * the button; Shift+Enter is a new line) or dropped (Escape, or Cancel). The server's refusal
 * shows under it and the text stays.
 */
export class MessageEditor {
  readonly element: HTMLElement;
  readonly blockId: string;
  private readonly textarea: HTMLTextAreaElement;
  private readonly send: HTMLButtonElement;
  private readonly error = h('p', { class: 'error-text small', role: 'alert', 'data-testid': 'edit-error' });

  constructor(
    blockId: string,
    text: string,
    private readonly handlers: { submit(content: string): Promise<string | undefined>; cancel(): void },
  ) {
    this.blockId = blockId;
    this.error.hidden = true;
    this.textarea = h('textarea', {
      rows: Math.min(10, Math.max(3, text.split('\n').length)),
      'aria-label': 'Edit your message',
      'data-testid': 'edit-text',
      value: text,
      onkeydown: (event: Event) => {
        const key = event as KeyboardEvent;
        if (key.key === 'Escape') {
          key.preventDefault();
          handlers.cancel();
        } else if (key.key === 'Enter' && !key.shiftKey && !key.isComposing) {
          key.preventDefault();
          this.submit();
        }
      },
    });
    this.send = h(
      'button',
      { type: 'button', class: 'primary', 'data-testid': 'edit-send', onclick: () => this.submit() },
      'Send as a new branch',
    );
    this.element = h(
      'div',
      { class: 'message-editor', 'data-testid': 'message-editor' },
      this.textarea,
      h(
        'p',
        { class: 'muted small' },
        'The edited message starts a new branch here; the original and what followed stay, and ‹ › switches back.',
      ),
      this.error,
      h(
        'div',
        { class: 'button-row' },
        this.send,
        h('button', { type: 'button', 'data-testid': 'edit-cancel', onclick: () => handlers.cancel() }, 'Cancel'),
      ),
    );
  }

  focus(): void {
    this.textarea.focus();
    this.textarea.setSelectionRange(this.textarea.value.length, this.textarea.value.length);
  }

  private submit(): void {
    const content = this.textarea.value;
    if (content.trim() === '' || this.send.disabled) return;
    this.send.disabled = true;
    void this.handlers.submit(content).then((refused) => {
      this.send.disabled = false;
      this.error.hidden = refused === undefined;
      this.error.textContent = refused ?? '';
    });
  }
}

/** Where a fork came from, for the chat's header: its source (a button that opens it) and the seq. */
export function forkOrigin(
  session: SessionInfo,
  sessions: readonly SessionInfo[],
  open: (sessionId: string) => void,
): HTMLElement | null {
  const origin = session.forkedFrom;
  if (!origin) return null;
  const source = sessions.find((entry) => entry.sessionId === origin.sessionId);
  return h(
    'div',
    { class: 'muted small forked-from', 'data-testid': 'forked-from' },
    '⋔ Forked from ',
    h(
      'button',
      {
        type: 'button',
        class: 'link',
        'data-testid': 'open-fork-source',
        title: `Open ${origin.sessionId}`,
        onclick: () => open(origin.sessionId),
      },
      source ? sessionLabel(source).title : origin.sessionId,
    ),
    ` at seq ${origin.seq}`,
  );
}
