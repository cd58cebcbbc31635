import type { GoalStatus } from '../../protocol/index.js';
import type { Actions } from './controller.js';
import { h, replaceChildren } from './dom.js';
import type { AppState } from './state.js';
import { ChatView } from './views/chat-view.js';
import { connectView } from './views/connect-view.js';
import { InspectorView } from './views/inspector-view.js';
import type { RunsView } from './views/runs-view.js';
import type { SchedulesView } from './views/schedules-view.js';
import { SessionsView } from './views/sessions-view.js';

const CONNECTION_TEXT: Record<AppState['connection'], string> = {
  connected: 'connected',
  connecting: 'connecting…',
  reconnecting: 'reconnecting… (resumes from the last event)',
  disconnected: 'disconnected',
};

export interface AppViewOptions {
  actions: Actions;
  /** The page's origin, for the connect help. */
  origin: string;
  /** A token typed into the connect form. */
  onToken(token: string): void;
  now?: () => number;
  /** The Runs view (durable runs): its button goes in the top bar, its panel over the layout. */
  runs?: RunsView;
  /** The Schedules view: its button goes in the top bar, its panel over the layout. */
  schedules?: SchedulesView;
}

/**
 * The page: a top bar (project, this window's draft, the connection), notices, and three columns
 * (sessions, chat, status and checkpoints), or the connect help when there is no usable token.
 * Renders at most once per animation frame, whatever the number of state changes.
 */
export class AppView {
  private readonly root: HTMLElement;
  private readonly topbar = h('header', { class: 'topbar' });
  private readonly notices = h('div', { class: 'notices', 'aria-live': 'polite', 'data-testid': 'notices' });
  private readonly layout: HTMLElement;
  private readonly sessions: SessionsView;
  private readonly chat: ChatView;
  private readonly inspector: InspectorView;
  private readonly now: () => number;
  private state: AppState | undefined;
  private frame: number | undefined;
  private shown: 'app' | 'connect' | undefined;
  private last: Record<string, unknown> = {};

  constructor(
    root: HTMLElement,
    private readonly options: AppViewOptions,
  ) {
    this.root = root;
    this.now = options.now ?? Date.now;
    this.sessions = new SessionsView(options.actions);
    this.chat = new ChatView(options.actions);
    this.inspector = new InspectorView(options.actions);
    this.layout = h('main', { class: 'layout' }, this.sessions.element, this.chat.element, this.inspector.element);
    // Relative times ("5 min ago") move on even when nothing else does.
    setInterval(() => this.schedule(), 30_000);
  }

  /** Asks for a render of `state` on the next frame. */
  render(state: AppState): void {
    // A session's history just came in: drawn at once, not at the next frame, so the work of its
    // first frame is done by the time the browser paints (a busy machine may wait long for the next
    // frame). Everything else, streaming deltas above all, is drawn once per frame.
    const opened =
      state.view !== undefined &&
      !state.view.loading &&
      this.state?.view?.loading === true &&
      this.state.view.sessionId === state.view.sessionId;
    this.state = state;
    if (opened) {
      if (this.frame !== undefined) cancelAnimationFrame(this.frame);
      this.frame = undefined;
      this.draw(state);
      return;
    }
    this.schedule();
  }

  private schedule(): void {
    if (this.frame !== undefined || !this.state) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = undefined;
      if (this.state) this.draw(this.state);
    });
  }

  private draw(state: AppState): void {
    const needsHelp = state.auth === 'missing' || (!state.everConnected && state.connectError !== undefined);
    if (needsHelp) {
      if (this.shown !== 'connect' || this.last['connectError'] !== state.connectError) {
        this.shown = 'connect';
        this.last['connectError'] = state.connectError;
        replaceChildren(
          this.root,
          connectView(state.auth === 'missing' ? 'missing' : 'refused', {
            origin: this.options.origin,
            detail: state.connectError,
            onToken: this.options.onToken,
          }),
        );
      }
      return;
    }
    if (this.shown !== 'app') {
      this.shown = 'app';
      this.last = {};
      replaceChildren(
        this.root,
        h(
          'div',
          { class: 'app' },
          this.topbar,
          this.notices,
          this.layout,
          this.options.runs?.element,
          this.options.schedules?.element,
        ),
      );
    }
    this.drawTopbar(state);
    this.drawNotices(state);
    this.sessions.update(state, this.now());
    this.chat.update(state);
    this.inspector.update(state);
    this.layout.classList.toggle('no-inspector', state.view === undefined);
    document.title = state.draft ? `Parley · ${state.draft.role}${state.turnRunning ? ' · working' : ''}` : 'Parley';
  }

  private drawTopbar(state: AppState): void {
    if (
      this.last['connection'] === state.connection &&
      this.last['projectRoot'] === state.projectRoot &&
      this.last['draft'] === state.draft &&
      this.last['turn'] === state.turnRunning
    )
      return;
    Object.assign(this.last, {
      connection: state.connection,
      projectRoot: state.projectRoot,
      draft: state.draft,
      turn: state.turnRunning,
    });
    const draft = state.draft;
    replaceChildren(
      this.topbar,
      h('div', { class: 'brand' }, h('span', { class: 'brand-mark' }, '◆'), ' Parley'),
      h('div', { class: 'project muted', title: state.projectRoot ?? '' }, state.projectRoot ?? ''),
      draft
        ? h(
            'div',
            { class: 'draft-pill', 'data-testid': 'draft-pill' },
            h('span', { class: `dot ${state.turnRunning ? 'busy' : 'live'}` }),
            `${draft.role} · ${draft.taskSlug} · ${draft.turnCount} turn(s) · $${draft.cumulativeCostUsd.toFixed(4)}`,
            state.turnRunning ? ' · working…' : '',
          )
        : null,
      draft ? this.goalField(draft.goal) : null,
      this.options.runs?.button,
      this.options.schedules?.button,
      h(
        'div',
        { class: `connection state-${state.connection}`, 'data-testid': 'connection', 'data-state': state.connection },
        h('span', { class: 'dot' }),
        CONNECTION_TEXT[state.connection],
      ),
    );
  }

  /** The draft's goal and its budget used, or a field to set one (ten turns, judged by the draft's model). */
  private goalField(goal: GoalStatus | undefined): HTMLElement {
    if (goal && !goal.ended) {
      return h(
        'div',
        { class: 'goal-pill', 'data-testid': 'goal' },
        `Goal: ${goal.condition} · ${goal.used.turns}/${goal.budget.turns} turns`,
        goal.budget.costUsd !== undefined
          ? ` · $${goal.used.costUsd.toFixed(2)}/$${goal.budget.costUsd.toFixed(2)}`
          : '',
        h(
          'button',
          { type: 'button', 'data-testid': 'goal-stop', onclick: () => this.options.actions.stopGoal() },
          'Stop',
        ),
      );
    }
    const input = h('input', {
      type: 'text',
      'aria-label': 'Goal',
      placeholder: goal?.ended
        ? `Last goal ${goal.ended.reason}: ${goal.ended.message}`
        : 'Goal: a condition to work towards',
      'data-testid': 'goal-input',
    });
    const error = h('span', { class: 'error-text small', role: 'alert', 'data-testid': 'goal-error' });
    return h(
      'form',
      {
        class: 'goal-form',
        onsubmit: (event: Event) => {
          event.preventDefault();
          const condition = input.value.trim();
          if (condition === '') return;
          void this.options.actions.setGoal(condition, 10).then((refused) => {
            error.textContent = refused ?? '';
          });
        },
      },
      input,
      error,
    );
  }

  private drawNotices(state: AppState): void {
    if (this.last['notices'] === state.notices) return;
    this.last['notices'] = state.notices;
    replaceChildren(
      this.notices,
      state.notices.map((notice) =>
        h(
          'div',
          { class: `notice tone-${notice.tone}`, role: notice.tone === 'error' ? 'alert' : 'status' },
          h('span', {}, notice.text),
          h(
            'button',
            {
              type: 'button',
              class: 'close',
              'aria-label': 'Dismiss',
              onclick: () => this.options.actions.dismiss(notice.id),
            },
            '×',
          ),
        ),
      ),
    );
  }
}
