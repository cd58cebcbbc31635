import { RpcError, type ProtocolClient, type ScheduleWire } from '../../../protocol/index.js';
import { h, replaceChildren } from '../dom.js';

/**
 * The Schedules view: every schedule of the server with its timing, what it fires, its next
 * firing and its last result, linked to the run it started (the Runs view) or the session its
 * prompt went to, and a pause / resume button. It reads the schedules after each (re)connection
 * and follows `schedule_updated` / `schedule_removed`. On a server without schedules it stays hidden.
 */
export class SchedulesView {
  /** The topbar's button: hidden until the server is known to keep schedules. */
  readonly button = h(
    'button',
    { type: 'button', class: 'runs-button', hidden: true, 'data-testid': 'schedules-button' },
    'Schedules',
  );
  readonly element = h('aside', {
    class: 'runs-panel',
    hidden: true,
    'data-testid': 'schedules-view',
    'aria-label': 'Schedules',
  });
  private schedules: ScheduleWire[] = [];
  private enabled = false;
  private open = false;
  /** Why the last pause or resume pressed here failed, shown until the next one succeeds. */
  private refusal: string | undefined;

  constructor(
    private readonly client: ProtocolClient,
    private readonly links: { openSession: (sessionId: string) => void; openRun: (runId: string) => void },
  ) {
    this.button.addEventListener('click', () => this.toggle(!this.open));
  }

  start(): void {
    this.client.onStateChange((state) => {
      if (state === 'connected') void this.refresh();
    });
    this.client.on('schedule_updated', ({ schedule }) => {
      const known = this.schedules.some((entry) => entry.id === schedule.id);
      this.schedules = known
        ? this.schedules.map((entry) => (entry.id === schedule.id ? schedule : entry))
        : [...this.schedules, schedule];
      this.draw();
    });
    this.client.on('schedule_removed', ({ scheduleId }) => {
      this.schedules = this.schedules.filter((entry) => entry.id !== scheduleId);
      this.draw();
    });
    if (this.client.state === 'connected') void this.refresh();
  }

  toggle(open: boolean): void {
    this.open = open;
    this.draw();
  }

  async refresh(): Promise<void> {
    try {
      this.schedules = await this.client.listSchedules();
      this.enabled = true;
    } catch (error) {
      // A server without schedules, or one from before them: the view stays hidden.
      if (error instanceof RpcError && (error.reason === 'SCHEDULES_NOT_ENABLED' || error.code === -32601))
        this.enabled = false;
      else return;
    }
    this.draw();
  }

  private draw(): void {
    this.button.hidden = !this.enabled;
    this.button.classList.toggle('open', this.open);
    this.element.hidden = !(this.enabled && this.open);
    const header = h(
      'div',
      { class: 'runs-header' },
      h('h2', {}, 'Schedules'),
      h(
        'button',
        { type: 'button', class: 'close', 'aria-label': 'Close the schedules', onclick: () => this.toggle(false) },
        '×',
      ),
    );
    const cards = this.schedules.map((schedule) => this.card(schedule));
    replaceChildren(
      this.element,
      header,
      this.refusal ? h('p', { class: 'error-text small', 'data-testid': 'schedules-error' }, this.refusal) : null,
      ...(cards.length > 0
        ? cards
        : [h('p', { class: 'muted' }, 'No schedules yet. Add one with `parley schedule add`.')]),
    );
  }

  private card(schedule: ScheduleWire): HTMLElement {
    const timing =
      schedule.timing.kind === 'cron'
        ? `${schedule.timing.cron} (${schedule.timing.timeZone})`
        : `every ${schedule.timing.everySeconds} s`;
    const target = schedule.target;
    const fires =
      target.kind === 'workflow'
        ? `runs ${target.workflow}`
        : target.kind === 'draft'
          ? `prompts ${target.role} in ${target.project}`
          : `prompts session ${target.sessionId}`;
    const last = schedule.last;
    const reached = last?.runId
      ? h(
          'a',
          {
            href: `#run=${encodeURIComponent(last.runId)}`,
            onclick: (event: Event) => this.follow(event, () => this.links.openRun(last.runId!)),
          },
          last.runId,
        )
      : last?.sessionId
        ? h(
            'a',
            {
              href: `#session=${encodeURIComponent(last.sessionId)}`,
              onclick: (event: Event) => this.follow(event, () => this.links.openSession(last.sessionId!)),
            },
            last.sessionId,
          )
        : undefined;
    return h(
      'section',
      // The Runs view's card look; its parts are blocks of their own (a run's `run-part` is
      // `display: contents`, which ran a schedule's lines together into one).
      { class: 'run schedule', 'data-testid': 'schedule', 'data-schedule-id': schedule.id },
      h('div', { class: 'schedule-part' }, h('strong', {}, schedule.name ?? schedule.id), ` · ${timing} · ${fires}`),
      h(
        'div',
        { class: 'schedule-part', 'data-testid': 'schedule-next' },
        schedule.paused ? 'paused' : `next: ${schedule.nextFireAt ? nextFiring(schedule) : 'never'}`,
      ),
      h(
        'div',
        { class: 'schedule-part', 'data-testid': 'schedule-last' },
        last
          ? `last: ${last.outcome}${last.error ? ` (${last.error.code}: ${last.error.message})` : ''} `
          : 'not fired yet',
        ...(reached ? [reached] : []),
      ),
      h(
        'button',
        {
          type: 'button',
          'data-testid': 'schedule-toggle',
          onclick: () => void this.pauseOrResume(schedule),
        },
        schedule.paused ? 'Resume' : 'Pause',
      ),
    );
  }

  /**
   * Presses Pause or Resume on the server. A refusal is shown, not swallowed: a button that does
   * nothing tells the person nothing. A schedule gone from the store (removed through another server
   * on the same PostgreSQL, whose removal this server does not announce) is read again, so its card goes.
   */
  private async pauseOrResume(schedule: ScheduleWire): Promise<void> {
    const action = schedule.paused ? 'resume' : 'pause';
    try {
      await (schedule.paused ? this.client.resumeSchedule(schedule.id) : this.client.pauseSchedule(schedule.id));
      this.refusal = undefined;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.refusal = `Could not ${action} ${schedule.name ?? schedule.id}: ${message}`;
      if (error instanceof RpcError && error.reason === 'SCHEDULE_NOT_FOUND') await this.refresh();
    }
    this.draw();
  }

  private follow(event: Event, open: () => void): void {
    event.preventDefault();
    this.toggle(false);
    open();
  }
}

/**
 * When a schedule fires next, with its zone named: a cron's in its own time zone (the one its times
 * are written in: "0 3 * * *" in Tokyo reads 03:00 GMT+9 from any browser), an interval's in the
 * browser's. Without the zone a person elsewhere read another zone's hour as their own.
 */
function nextFiring(schedule: ScheduleWire): string {
  return new Date(schedule.nextFireAt!).toLocaleString(undefined, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    timeZoneName: 'short',
    ...(schedule.timing.kind === 'cron' ? { timeZone: schedule.timing.timeZone } : {}),
  });
}
