import type { BackendInfo } from '../../../protocol/index.js';
import { h, replaceChildren } from '../dom.js';
import type { AppState } from '../state.js';

/**
 * The back end the draft's next message goes to (`submit_prompt { backend }`): the draft's own
 * by default. Choosing another moves the session there with that message, as the TUI's `/backend`
 * does; a back end this server cannot make is shown, disabled, with the reason as its tooltip.
 * Hidden when the server offers one back end only (or predates `list_backends`).
 */
export class BackendPicker {
  readonly element: HTMLLabelElement;
  private readonly select: HTMLSelectElement;
  private last: { backends?: readonly BackendInfo[]; current?: string } = {};

  constructor() {
    this.select = h('select', { 'data-testid': 'backend-picker', 'aria-label': 'Back end for the next message' });
    this.element = h(
      'label',
      {
        class: 'backend-picker muted small',
        title: 'The back end the next message goes to; another one moves the session there.',
      },
      'on ',
      this.select,
    );
  }

  update(state: AppState): void {
    const current = state.draft?.backend;
    const backends = state.backends;
    this.element.hidden = current === undefined || backends.filter((backend) => backend.available).length < 2;
    if (this.last.backends === backends && this.last.current === current) return;
    this.last = { backends, ...(current !== undefined ? { current } : {}) };
    const names = new Set(backends.map((backend) => backend.name));
    const options = backends.map((backend) =>
      h(
        'option',
        {
          value: backend.name,
          ...(backend.available ? {} : { disabled: true, title: backend.reason ?? 'not available on this server' }),
        },
        backend.available ? backend.name : `${backend.name} (not available)`,
      ),
    );
    // The draft's back end is always a choice, even if the server's list does not name it.
    if (current !== undefined && !names.has(current)) options.unshift(h('option', { value: current }, current));
    replaceChildren(this.select, ...options);
    if (current !== undefined) this.select.value = current;
  }

  /** The back end to move to with the next message; undefined to stay on the draft's own. */
  choice(state: AppState): string | undefined {
    const current = state.draft?.backend;
    const chosen = this.select.value;
    return chosen !== '' && chosen !== current ? chosen : undefined;
  }
}
