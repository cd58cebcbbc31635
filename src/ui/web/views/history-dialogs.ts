import type { BackendInfo } from '../../../protocol/index.js';
import { h, replaceChildren } from '../dom.js';
import type { RewindOutcome, RewindRequest } from '../history-controller.js';
import { rewindSummary, type RewindRestore, type RewindTarget } from '../history-model.js';

/** Why the files options are off, when the server keeps no snapshots. */
const NO_SNAPSHOTS =
  'Files cannot be restored here: this server keeps no file snapshots (it was started with --no-file-snapshots, or as a library without them). The conversation can still go back.';

const RESTORE_LABELS: Record<RewindRestore, string> = {
  conversation: 'Conversation',
  files: 'Files',
  both: 'Both',
};

export interface RewindDialogOptions {
  rewind(request: RewindRequest): Promise<RewindOutcome>;
  /** Stops the running turn (a rewind is refused while one runs). */
  cancelTurn(): void;
  /** The rewind went through. */
  onRewound(target: RewindTarget, restore: RewindRestore): void;
}

/**
 * The confirmation of a rewind, as a modal dialog: what goes back (the conversation, the files or
 * both; the files only when the server keeps snapshots), to which point, and that nothing is
 * deleted. A refusal stays in the dialog: a turn that runs (with a button to stop it), or the files
 * the user changed since (listed, with a button to overwrite them). Escape or Cancel closes it.
 */
export class RewindDialog {
  readonly element: HTMLDialogElement;
  private target: RewindTarget | undefined;
  private restore: RewindRestore = 'conversation';
  private running = false;

  constructor(private readonly options: RewindDialogOptions) {
    this.element = h('dialog', {
      class: 'history-dialog',
      'data-testid': 'rewind-dialog',
      'aria-labelledby': 'rewind-title',
    });
  }

  open(target: RewindTarget, fileSnapshots: boolean | undefined): void {
    this.target = target;
    this.restore = 'conversation';
    this.running = false;
    this.draw(fileSnapshots, undefined);
    if (!this.element.open) this.element.showModal();
    this.element.querySelector<HTMLInputElement>('input[value="conversation"]')?.focus();
  }

  private draw(fileSnapshots: boolean | undefined, outcome: Extract<RewindOutcome, { ok: false }> | undefined): void {
    const target = this.target;
    if (!target) return;
    const summary = rewindSummary(target, this.restore);
    const filesOff = fileSnapshots === false;
    const choice = (restore: RewindRestore) => {
      const disabled = filesOff && restore !== 'conversation';
      return h(
        'label',
        { class: `restore-choice${disabled ? ' disabled' : ''}`, title: disabled ? NO_SNAPSHOTS : '' },
        h('input', {
          type: 'radio',
          name: 'rewind-restore',
          value: restore,
          'data-testid': `rewind-restore-${restore}`,
          checked: this.restore === restore,
          disabled,
          onchange: () => {
            this.restore = restore;
            this.draw(fileSnapshots, undefined);
            this.element.querySelector<HTMLInputElement>(`input[value="${restore}"]`)?.focus();
          },
        }),
        ` ${RESTORE_LABELS[restore]}`,
      );
    };
    const error = outcome ? this.errorOf(outcome, fileSnapshots) : null;
    const confirm = h(
      'button',
      {
        type: 'button',
        class: 'primary',
        'data-testid': 'rewind-confirm',
        disabled: this.running,
        onclick: () => void this.run(fileSnapshots, false),
      },
      this.running ? 'Rewinding…' : 'Rewind',
    );
    replaceChildren(
      this.element,
      h('h2', { id: 'rewind-title' }, summary.title),
      h(
        'fieldset',
        { class: 'restore-choices' },
        h('legend', {}, 'What goes back'),
        choice('conversation'),
        choice('files'),
        choice('both'),
      ),
      filesOff ? h('p', { class: 'muted small', 'data-testid': 'rewind-files-unavailable' }, NO_SNAPSHOTS) : null,
      h(
        'div',
        { class: 'rewind-summary', 'data-testid': 'rewind-summary' },
        h('p', {}, summary.conversation),
        h('p', {}, summary.files),
        h('p', { class: 'muted' }, summary.kept),
      ),
      error,
      h(
        'div',
        { class: 'button-row' },
        confirm,
        h('button', { type: 'button', 'data-testid': 'rewind-cancel', onclick: () => this.element.close() }, 'Cancel'),
      ),
    );
  }

  private errorOf(outcome: Extract<RewindOutcome, { ok: false }>, fileSnapshots: boolean | undefined): HTMLElement {
    const parts: HTMLElement[] = [h('p', {}, outcome.message)];
    if (outcome.code === 'RESTORE_CONFLICT' && outcome.files && outcome.files.length > 0) {
      parts.push(
        h('p', {}, 'You changed these files since the agent last touched them; nothing was changed:'),
        h(
          'ul',
          { class: 'conflict-files', 'data-testid': 'rewind-conflicts' },
          outcome.files.map((file) => h('li', {}, h('code', {}, file))),
        ),
        h(
          'button',
          {
            type: 'button',
            class: 'danger',
            'data-testid': 'rewind-overwrite',
            disabled: this.running,
            onclick: () => void this.run(fileSnapshots, true),
          },
          'Overwrite my changes and rewind',
        ),
      );
    }
    if (outcome.code === 'TURN_IN_PROGRESS') {
      parts.push(
        h(
          'button',
          {
            type: 'button',
            'data-testid': 'rewind-stop-turn',
            onclick: () => this.options.cancelTurn(),
          },
          'Stop the turn',
        ),
      );
    }
    return h(
      'div',
      { class: 'notice tone-error', role: 'alert', 'data-testid': 'rewind-error', 'data-code': outcome.code ?? '' },
      parts,
    );
  }

  private async run(fileSnapshots: boolean | undefined, overwrite: boolean): Promise<void> {
    const target = this.target;
    if (!target || this.running) return;
    this.running = true;
    const restore = this.restore;
    this.draw(fileSnapshots, undefined);
    const outcome = await this.options.rewind({
      to: target.to,
      ...(target.kind === 'message' ? { filesTo: target.filesTo } : {}),
      restore,
      ...(overwrite ? { overwrite: true } : {}),
    });
    this.running = false;
    if (outcome.ok) {
      this.element.close();
      this.options.onRewound(target, restore);
      return;
    }
    this.draw(fileSnapshots, outcome);
    this.element
      .querySelector<HTMLElement>('[data-testid="rewind-error"] button, [data-testid="rewind-confirm"]')
      ?.focus();
  }
}

export interface ForkDialogOptions {
  fork(at: number | string, backend?: string): Promise<string | undefined>;
}

/**
 * Forking from a block: a new session whose history is this one's through the block, on this
 * session's back end or another the server offers; the source is unchanged. The fork opens.
 */
export class ForkDialog {
  readonly element: HTMLDialogElement;

  constructor(private readonly options: ForkDialogOptions) {
    this.element = h('dialog', {
      class: 'history-dialog',
      'data-testid': 'fork-dialog',
      'aria-labelledby': 'fork-title',
    });
  }

  open(at: number | string, what: string, currentBackend: string, backends: readonly BackendInfo[]): void {
    const picker = h(
      'select',
      { 'aria-label': 'Back end of the fork', 'data-testid': 'fork-backend' },
      h('option', { value: '' }, `Same back end (${currentBackend})`),
      backends
        .filter((backend) => backend.name !== currentBackend)
        .map((backend) =>
          h(
            'option',
            { value: backend.name, disabled: !backend.available, title: backend.reason ?? '' },
            backend.available ? backend.name : `${backend.name} (not available)`,
          ),
        ),
    );
    const error = h('div', { class: 'notice tone-error', role: 'alert', 'data-testid': 'fork-error' });
    error.hidden = true;
    const confirm: HTMLButtonElement = h(
      'button',
      {
        type: 'button',
        class: 'primary',
        'data-testid': 'fork-confirm',
        onclick: () => {
          confirm.disabled = true;
          void this.options.fork(at, picker.value === '' ? undefined : picker.value).then((refused) => {
            confirm.disabled = false;
            if (refused === undefined) {
              this.element.close();
              return;
            }
            error.hidden = false;
            error.textContent = refused;
          });
        },
      },
      'Fork and open it',
    );
    replaceChildren(
      this.element,
      h('h2', { id: 'fork-title' }, `Fork a new session from ${what}`),
      h(
        'p',
        {},
        'The new session holds this conversation through this point and goes on by itself; this session is unchanged. Its history is shared, not copied.',
      ),
      h('label', { class: 'fork-backend' }, 'Continue on ', picker),
      error,
      h(
        'div',
        { class: 'button-row' },
        confirm,
        h('button', { type: 'button', 'data-testid': 'fork-cancel', onclick: () => this.element.close() }, 'Cancel'),
      ),
    );
    if (!this.element.open) this.element.showModal();
    picker.focus();
  }
}
