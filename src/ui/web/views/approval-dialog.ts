import { fileEditOf } from '../../../conversation/index.js';
import type { PendingApprovalsState, PermissionDecision, PermissionRequest } from '../../../protocol/index.js';
import { h, replaceChildren, setText } from '../dom.js';
import { fileEditElement } from './tool-views.js';

/**
 * The oldest waiting approval request as a modal dialog: its title, the diff (coloured, the chat's
 * diff view) or the command and its folder, and three buttons: Allow once, Allow always (naming
 * what it remembers; absent when only a one-time answer exists) and Deny. Escape does not close
 * it: the tool waits for an answer, and Deny is one click.
 */
export class ApprovalDialog {
  readonly element: HTMLDialogElement;
  private shown: PermissionRequest | undefined;
  private shownFor: PendingApprovalsState | undefined;
  /** What the dialog's body and buttons were drawn from: redrawn only when it changes, so another request arriving never swallows a click on them. */
  private drawnKey: string | undefined;
  private readonly waitingLine = h('div', { class: 'muted small' });

  constructor(private readonly onAnswer: (requestId: string, decision: PermissionDecision) => void) {
    this.element = h('dialog', {
      class: 'approval',
      'data-testid': 'approval',
      'aria-labelledby': 'approval-title',
      oncancel: (event: Event) => event.preventDefault(),
    });
  }

  update(state: PendingApprovalsState): void {
    if (state === this.shownFor) return;
    this.shownFor = state;
    const request = state.requests[0];
    if (!request) {
      this.shown = undefined;
      this.drawnKey = undefined;
      if (this.element.open) this.element.close();
      return;
    }
    this.shown = request;
    const answering = state.answering === request.requestId;
    setText(this.waitingLine, `1 of ${state.requests.length} waiting`);
    this.waitingLine.hidden = state.requests.length < 2;
    const key = JSON.stringify([request.requestId, answering, state.error ?? null]);
    if (key !== this.drawnKey) {
      this.drawnKey = key;
      this.draw(request, answering, state.error);
    }
    if (!this.element.open) this.element.showModal();
  }

  private draw(request: PermissionRequest, answering: boolean, error: string | undefined): void {
    const answer = (decision: PermissionDecision) => () => this.onAnswer(request.requestId, decision);
    replaceChildren(
      this.element,
      h('h2', { id: 'approval-title' }, 'Approve? ', h('span', { class: 'approval-title' }, request.title)),
      this.waitingLine,
      h('div', { class: 'approval-body' }, bodyOf(request)),
      error !== undefined ? h('div', { class: 'notice tone-error', role: 'alert' }, error) : null,
      h(
        'div',
        { class: 'button-row' },
        h(
          'button',
          {
            type: 'button',
            class: 'primary',
            'data-decision': 'allow_once',
            disabled: answering,
            onclick: answer('allow_once'),
          },
          'Allow once',
        ),
        request.allowAlwaysScope !== undefined
          ? h(
              'button',
              {
                type: 'button',
                'data-decision': 'allow_always',
                disabled: answering,
                title: `Remembered for this session: ${request.allowAlwaysScope}`,
                onclick: answer('allow_always'),
              },
              `Allow always: ${request.allowAlwaysScope}`,
            )
          : null,
        h(
          'button',
          { type: 'button', class: 'danger', 'data-decision': 'deny', disabled: answering, onclick: answer('deny') },
          'Deny',
        ),
      ),
    );
  }

  /** The request on screen (for tests and focus). */
  get current(): PermissionRequest | undefined {
    return this.shown;
  }
}

function bodyOf(request: PermissionRequest): HTMLElement {
  if (request.kind === 'command') {
    // The terminal block's look, without an output or exit code: nothing has run yet.
    return h(
      'div',
      { class: 'terminal', 'data-testid': 'terminal' },
      h('div', { class: 'terminal-cwd' }, `in ${request.cwd ?? '.'}`),
      h(
        'div',
        { class: 'terminal-command' },
        h('span', { class: 'terminal-prompt', 'aria-hidden': 'true' }, '$ '),
        request.command ?? '',
      ),
    );
  }
  const edit = fileEditOf(
    { name: request.tool, input: { path: request.path } },
    { output: { path: request.path ?? '', diff: request.diff ?? '' }, isError: false },
  );
  return edit ? fileEditElement(edit) : h('div', { class: 'muted' }, request.path ?? '');
}
