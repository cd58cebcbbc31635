import { RpcError, type ProtocolClient, type RunPromptWire, type RunWire } from '../../../protocol/index.js';
import { h, replaceChildren, setText } from '../dom.js';

interface RunCard {
  /** The run drawn, or undefined before the first draw. */
  run: RunWire | undefined;
  element: HTMLElement;
  head: HTMLElement;
  questions: HTMLElement;
  tail: HTMLElement;
  /** What the questions were drawn from (the prompts and their refusals). */
  questionsKey: string | undefined;
  countdowns: Array<{ element: HTMLElement; deadline: string }>;
}

/**
 * The Runs view: every durable workflow run of the server, with its status, phases and
 * agents (each linked to its session), and the question it waits on, answered with a button per
 * choice or a text field, with a countdown to its deadline. A topbar button opens it and counts the
 * questions waiting. It speaks the protocol itself: it follows every run (`subscribe_runs`, renewed
 * by the client after a reconnect), reads them again after each (re)connection (run notifications
 * are not replayed) and on `run_updated` / `run_prompt`. On a server without runs it stays hidden.
 */
export class RunsView {
  /** The topbar's button: hidden until the server is known to run workflows. */
  readonly button = h('button', { type: 'button', class: 'runs-button', hidden: true, 'data-testid': 'runs-button' });
  readonly element = h('aside', {
    class: 'runs-panel',
    hidden: true,
    'data-testid': 'runs-view',
    'aria-label': 'Runs',
  });
  private runs: RunWire[] = [];
  private enabled = false;
  private subscribed = false;
  private open = false;
  /** Why an answer was refused, by prompt id, until the prompt is answered. */
  private readonly refusals = new Map<string, string>();
  /** What is typed in each text field, by prompt id, so a re-render keeps it. */
  private readonly drafts = new Map<string, string>();
  private readonly countdowns: Array<{ element: HTMLElement; deadline: string }> = [];
  /**
   * Each run's card, kept across draws and patched: a question (its buttons, the field being typed
   * in) is rebuilt only when its run's questions change, so another run's update never takes the
   * user's focus or swallows a click.
   */
  private readonly cards = new Map<string, RunCard>();
  private readonly badge = h('span', { class: 'badge', 'data-testid': 'runs-waiting' });
  private readonly header = h(
    'div',
    { class: 'runs-header' },
    h('h2', {}, 'Runs'),
    h(
      'button',
      { type: 'button', class: 'close', 'aria-label': 'Close the runs', onclick: () => this.toggle(false) },
      '×',
    ),
  );
  private readonly empty = h('p', { class: 'muted' }, 'No runs yet. Start one with `parley run <workflow> --detach`.');
  private timer: ReturnType<typeof setInterval> | undefined;
  private reading: Promise<void> | undefined;
  /** The run a link asked for, until its card is drawn. */
  private focused: string | undefined;

  constructor(
    private readonly client: ProtocolClient,
    /** Opens a session in the main view (an agent's link). */
    private readonly openSession: (sessionId: string) => void,
    private readonly now: () => number = Date.now,
  ) {
    this.button.addEventListener('click', () => this.toggle(!this.open));
  }

  start(): void {
    this.client.onStateChange((state) => {
      if (state === 'connected') void this.refresh();
    });
    this.client.on('run_updated', ({ run }) => this.setRun(run));
    this.client.on('run_prompt', ({ runId }) => {
      // A new run's first notice may be its question: read the run whole.
      if (!this.runs.some((run) => run.id === runId)) void this.refresh();
    });
    if (this.client.state === 'connected') void this.refresh();
  }

  toggle(open: boolean): void {
    this.open = open;
    this.draw();
  }

  /** Opens the view at one run (a notification's link): scrolled to it once it is read, and marked. */
  focus(runId: string): void {
    this.focused = runId;
    this.toggle(true);
  }

  /** Reads every run (newest first), after following them all once. */
  refresh(): Promise<void> {
    this.reading ??= (async () => {
      try {
        if (!this.subscribed) {
          await this.client.subscribeRuns();
          this.subscribed = true;
        }
        this.runs = await this.client.listRuns();
        this.enabled = true;
      } catch (error) {
        // A server that runs no workflows, or one from before runs: the view stays hidden.
        if (error instanceof RpcError && (error.reason === 'RUNS_NOT_ENABLED' || error.code === -32601))
          this.enabled = false;
        else throw error;
      } finally {
        this.reading = undefined;
      }
      this.draw();
    })().catch(() => undefined);
    return this.reading ?? Promise.resolve();
  }

  private setRun(run: RunWire): void {
    const index = this.runs.findIndex((entry) => entry.id === run.id);
    if (index < 0) this.runs = [run, ...this.runs];
    else this.runs = this.runs.map((entry) => (entry.id === run.id ? run : entry));
    for (const promptId of [...this.refusals.keys()])
      if (!this.runs.some((entry) => entry.pendingPrompts.some((prompt) => prompt.promptId === promptId)))
        this.refusals.delete(promptId);
    this.draw();
  }

  private async answer(run: RunWire, prompt: RunPromptWire, response: string): Promise<void> {
    try {
      const outcome = await this.client.answerPrompt(run.id, prompt.promptId, response);
      if (outcome.accepted) {
        this.refusals.delete(prompt.promptId);
        this.drafts.delete(prompt.promptId);
        // The run's `run_updated` follows; reading it here too covers a link that dropped meanwhile.
        this.setRun(await this.client.getRun(run.id));
      } else {
        this.refusals.set(prompt.promptId, outcome.message);
        this.draw();
      }
    } catch (error) {
      this.refusals.set(prompt.promptId, error instanceof Error ? error.message : String(error));
      this.draw();
    }
  }

  private draw(): void {
    const waiting = this.runs.reduce((count, run) => count + run.pendingPrompts.length, 0);
    this.button.hidden = !this.enabled;
    this.button.classList.toggle('attention', waiting > 0);
    this.button.classList.toggle('open', this.open);
    // Patched, not rebuilt: the user's click on the button must not land on a replaced badge.
    if (this.button.firstChild === null) this.button.append('Runs');
    setText(this.badge, `${waiting} waiting`);
    if (waiting === 0) this.badge.remove();
    else if (this.badge.parentNode !== this.button) this.button.append(this.badge);
    this.element.hidden = !(this.enabled && this.open);
    const shown: HTMLElement[] = [this.header];
    if (this.runs.length === 0) shown.push(this.empty);
    for (const run of this.runs) shown.push(this.cardOf(run).element);
    const ids = new Set(this.runs.map((run) => run.id));
    for (const id of [...this.cards.keys()]) if (!ids.has(id)) this.cards.delete(id);
    shown.forEach((element, index) => {
      const current = this.element.children[index];
      if (current !== element) this.element.insertBefore(element, current ?? null);
    });
    while (this.element.children.length > shown.length) this.element.lastElementChild!.remove();
    this.countdowns.length = 0;
    for (const run of this.runs) this.countdowns.push(...this.cards.get(run.id)!.countdowns);
    this.tick();
    this.keepTicking(this.countdowns.length > 0);
    const focused = this.focused !== undefined ? this.cards.get(this.focused) : undefined;
    if (focused) {
      this.focused = undefined;
      for (const card of this.cards.values()) card.element.classList.toggle('focused', card === focused);
      focused.element.scrollIntoView({ block: 'start' });
    }
  }

  /** The run's card, made or patched to show this run. */
  private cardOf(run: RunWire): RunCard {
    let card = this.cards.get(run.id);
    if (!card) {
      const part = () => h('div', { class: 'run-part' });
      const head = part();
      const questions = part();
      const tail = part();
      card = {
        run: undefined,
        element: h('section', { 'data-testid': 'run', 'data-run-id': run.id }, head, questions, tail),
        head,
        questions,
        tail,
        questionsKey: undefined,
        countdowns: [],
      };
      this.cards.set(run.id, card);
    }
    const questionsKey = run.pendingPrompts
      .map((prompt) => JSON.stringify([prompt, this.refusals.get(prompt.promptId) ?? null]))
      .join('\n');
    if (card.run === run && card.questionsKey === questionsKey) return card;
    card.run = run;
    card.element.className = `run status-${run.status}`;
    replaceChildren(card.head, ...this.runHead(run));
    if (card.questionsKey !== questionsKey) {
      card.questionsKey = questionsKey;
      const countdowns: RunCard['countdowns'] = [];
      replaceChildren(
        card.questions,
        run.pendingPrompts.map((prompt) => this.questionElement(run, prompt, countdowns)),
      );
      card.countdowns = countdowns;
    }
    replaceChildren(
      card.tail,
      run.status === 'complete' && run.result !== undefined
        ? h('pre', { class: 'run-result small' }, JSON.stringify(run.result, null, 2))
        : null,
      run.error
        ? h(
            'p',
            { class: 'error-text small' },
            `${run.error.code}: ${run.error.message}${run.error.step ? ` (at ${run.error.step})` : ''}`,
          )
        : null,
    );
    return card;
  }

  /** A run's title, phases and agents (each linked to its session). */
  private runHead(run: RunWire): Array<HTMLElement | null> {
    return [
      h(
        'div',
        { class: 'run-title' },
        h('strong', {}, run.harness),
        h('span', { class: 'muted small' }, ` ${run.id}`),
        h('span', { class: `run-status status-${run.status}`, 'data-testid': 'run-status' }, run.status),
      ),
      run.phases.length > 0
        ? h(
            'ol',
            { class: 'run-phases', 'aria-label': 'Phases' },
            run.phases.map((phase) => h('li', { class: phase === run.phase ? 'current' : '' }, phase)),
          )
        : null,
      run.agents.length > 0
        ? h(
            'div',
            { class: 'run-agents small' },
            'Agents: ',
            run.agents.map((agent) =>
              agent.sessionId !== undefined
                ? h(
                    'button',
                    {
                      type: 'button',
                      class: 'link',
                      'data-testid': 'run-agent',
                      title: `Open session ${agent.sessionId}`,
                      onclick: () => this.openAgent(agent.sessionId!),
                    },
                    agent.name,
                  )
                : h('span', { class: 'muted', title: 'No session yet' }, agent.name),
            ),
          )
        : null,
    ];
  }

  private questionElement(run: RunWire, prompt: RunPromptWire, countdowns: RunCard['countdowns']): HTMLElement {
    const countdown =
      prompt.deadline !== undefined ? h('span', { class: 'countdown', 'data-testid': 'run-countdown' }) : null;
    if (countdown && prompt.deadline !== undefined) countdowns.push({ element: countdown, deadline: prompt.deadline });
    const refusal = this.refusals.get(prompt.promptId);
    let answerPart: HTMLElement;
    if (prompt.choices) {
      answerPart = h(
        'div',
        { class: 'button-row' },
        prompt.choices.map((choice) =>
          h(
            'button',
            {
              type: 'button',
              class: choice === prompt.defaultChoice ? 'primary' : '',
              'data-testid': 'run-choice',
              onclick: () => void this.answer(run, prompt, choice),
            },
            choice,
          ),
        ),
      );
    } else {
      const field = h('input', {
        type: 'text',
        'aria-label': 'Your answer',
        'data-testid': 'run-answer-text',
        value: this.drafts.get(prompt.promptId) ?? '',
        oninput: (event: Event) => this.drafts.set(prompt.promptId, (event.target as HTMLInputElement).value),
      });
      answerPart = h(
        'form',
        {
          class: 'run-answer',
          onsubmit: (event: Event) => {
            event.preventDefault();
            if (field.value.trim() !== '') void this.answer(run, prompt, field.value);
          },
        },
        field,
        h('button', { type: 'submit', class: 'primary', 'data-testid': 'run-answer-send' }, 'Answer'),
      );
    }
    return h(
      'div',
      { class: 'run-question', 'data-testid': 'run-question', 'data-prompt-id': prompt.promptId },
      h('p', { class: 'question-text' }, prompt.prompt),
      h(
        'p',
        { class: 'muted small' },
        prompt.defaultChoice !== undefined ? `Default: ${prompt.defaultChoice}. ` : '',
        countdown,
      ),
      answerPart,
      refusal !== undefined
        ? h('p', { class: 'error-text small', role: 'alert', 'data-testid': 'run-refused' }, `Refused: ${refusal}`)
        : null,
    );
  }

  private openAgent(sessionId: string): void {
    this.toggle(false);
    this.openSession(sessionId);
  }

  private tick(): void {
    const now = this.now();
    for (const { element, deadline } of this.countdowns) element.textContent = countdownText(deadline, now);
  }

  private keepTicking(active: boolean): void {
    if (active && this.timer === undefined) this.timer = setInterval(() => this.tick(), 1_000);
    if (!active && this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}

/** `Answer within 4:05` (`1:02:03` past an hour), or `The deadline has passed`. */
export function countdownText(deadline: string, now: number): string {
  const left = Date.parse(deadline) - now;
  if (Number.isNaN(left)) return '';
  if (left <= 0) return 'The deadline has passed.';
  const seconds = Math.floor(left / 1000);
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const rest = String(seconds % 60).padStart(2, '0');
  return `Answer within ${hours > 0 ? `${hours}:${String(minutes).padStart(2, '0')}` : minutes}:${rest}.`;
}
