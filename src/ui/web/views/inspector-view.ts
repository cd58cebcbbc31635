import type { CheckpointWire, SessionInfo } from '../../../protocol/index.js';
import type { Actions } from '../controller.js';
import { h, replaceChildren, setText, svg } from '../dom.js';
import { formatCompact, formatCost, formatCount, formatPercent, formatTime, plural } from '../format.js';
import { onTrace } from '../history-model.js';
import { selectedSession, type AppState, type CheckpointData, type PreviewResult, type SessionView } from '../state.js';
import {
  CHECKPOINT_SECTIONS,
  chartGeometry,
  checkpointHeadline,
  contextGauge,
  foldedRange,
  sectionShares,
  type UsageSeries,
} from '../view-model.js';

const CHART = { width: 280, height: 84, padding: 6 };

/**
 * The right column: session status (context, request breakdown, cost and turns over time, the
 * compaction indicator), checkpoints (current, every earlier version, what each folded in) and the
 * session actions. Each card is rebuilt only when what it shows changed.
 */
export class InspectorView {
  readonly element: HTMLElement;
  private readonly status = h('section', { class: 'card', 'data-testid': 'status', 'aria-label': 'Session status' });
  private readonly checkpoints = h('section', {
    class: 'card',
    'data-testid': 'checkpoints',
    'aria-label': 'Checkpoints',
  });
  private readonly actionsCard = h('section', {
    class: 'card',
    'data-testid': 'actions',
    'aria-label': 'Session actions',
  });
  private readonly overlay = h('div', { class: 'overlay', hidden: true, 'data-testid': 'request-pane' });
  private readonly instructions: HTMLTextAreaElement;
  private confirming: 'clear' | 'archive' | undefined;
  private pinButton: HTMLButtonElement | undefined;
  /** Which confirmation the card shows now (rebuilt only when `confirming` changes). */
  private confirmShown: 'clear' | 'archive' | undefined;
  private readonly confirmSlot = h('div', {});
  private readonly actionButtons: Record<'compact' | 'preview' | 'clear' | 'archive', HTMLButtonElement>;
  private last: Record<string, unknown> = {};
  private lastState: AppState | undefined;

  constructor(private readonly actions: Actions) {
    this.instructions = h('textarea', {
      rows: 2,
      placeholder: 'Instructions for the summary (optional)',
      'aria-label': 'Compaction instructions',
      'data-testid': 'compact-instructions',
    });
    this.actionButtons = {
      compact: h(
        'button',
        {
          type: 'button',
          'data-testid': 'force-compact',
          onclick: () => this.actions.forceCompact(this.instructions.value),
        },
        'Force compact',
      ),
      preview: h(
        'button',
        { type: 'button', 'data-testid': 'preview-request', onclick: () => this.actions.previewRequest('') },
        'Preview request',
      ),
      clear: h(
        'button',
        { type: 'button', 'data-testid': 'clear-messages', onclick: () => this.setConfirming('clear') },
        'Clear messages',
      ),
      archive: h(
        'button',
        { type: 'button', 'data-testid': 'archive', onclick: () => this.setConfirming('archive') },
        'Archive',
      ),
    };
    const buttons = this.actionButtons;
    const rename = h(
      'button',
      {
        type: 'button',
        'data-testid': 'rename-session',
        onclick: () => {
          const title = window.prompt('New title for this session', selectedSession(this.lastState!)?.title ?? '');
          if (title !== null && title.trim() !== '') this.actions.updateSession?.({ title: title.trim() });
        },
      },
      'Rename',
    );
    const tag = h(
      'button',
      {
        type: 'button',
        'data-testid': 'tag-session',
        onclick: () => {
          const typed = window.prompt('Tags to add (a leading - removes one), separated by spaces', '');
          if (typed === null) return;
          const words = typed.split(/\s+/).filter(Boolean);
          this.actions.updateSession?.({
            addTags: words.filter((word) => !word.startsWith('-')),
            removeTags: words.filter((word) => word.startsWith('-')).map((word) => word.slice(1)),
          });
        },
      },
      'Tag',
    );
    this.pinButton = h(
      'button',
      {
        type: 'button',
        'data-testid': 'pin-session',
        onclick: () => this.actions.updateSession?.({ pinned: selectedSession(this.lastState!)?.pinned !== true }),
      },
      'Pin',
    );
    this.actionsCard.append(
      h('h3', {}, 'Actions'),
      h('div', { class: 'compact-box' }, this.instructions, buttons.compact),
      h('div', { class: 'button-row' }, buttons.preview, buttons.clear, buttons.archive),
      h('div', { class: 'button-row' }, rename, tag, this.pinButton),
      this.confirmSlot,
    );
    this.element = h(
      'aside',
      { class: 'inspector', 'aria-label': 'Session details' },
      this.status,
      this.checkpoints,
      this.actionsCard,
      this.overlay,
    );
  }

  update(state: AppState): void {
    this.lastState = state;
    const view = state.view;
    const session = selectedSession(state);
    if (this.pinButton !== undefined) this.pinButton.textContent = session?.pinned === true ? 'Unpin' : 'Pin';
    this.element.hidden = view === undefined;
    if (!view) {
      this.last = {};
      return;
    }
    if (
      changed(this.last, 'status', [
        view.conversation.metrics,
        view.series,
        view.preview,
        view.previewError,
        view.compaction,
        view.lastCompaction,
        session,
      ])
    )
      this.renderStatus(view, session);
    // Which versions lie on the active branch (restorable): a string, so a streaming turn does not redraw the card.
    const onBranch = (view.checkpoints?.versions ?? [])
      .map((version) => (onTrace(view.trace, version.covers.throughSeq) ? '1' : '0'))
      .join('');
    if (changed(this.last, 'checkpoints', [view.checkpoints, view.checkpointsError, view.sessionId, onBranch]))
      this.renderCheckpoints(view.checkpoints, view.checkpointsError, onBranch);
    if (changed(this.last, 'actions', [session, state.busy, view.compaction, view.sessionId, this.confirming]))
      this.renderActions(view, session, state);
    if (changed(this.last, 'pane', [view.requestPane])) this.renderPane(view);
  }

  // ---- status ----

  private renderStatus(view: SessionView, session: SessionInfo | undefined): void {
    // The page holds the log's last pages only: totals are the session's (the server's), not those pages'.
    const metrics =
      view.place?.atStart === false && session?.metrics !== undefined ? session.metrics : view.conversation.metrics;
    const preview = view.preview;
    const gauge = contextGauge(metrics, preview);
    const parts: HTMLElement[] = [h('h3', {}, 'Session status')];

    if (view.compaction) {
      parts.push(
        h(
          'div',
          { class: 'compacting', role: 'status', 'data-testid': 'compaction-indicator' },
          h('span', { class: 'spinner', 'aria-hidden': 'true' }),
          `Compacting (${view.compaction.trigger})…${view.compaction.tokensBefore !== undefined ? ` ${formatCount(view.compaction.tokensBefore)} tokens before` : ''}`,
        ),
      );
    } else if (view.lastCompaction) {
      const last = view.lastCompaction;
      parts.push(
        last.ok
          ? h(
              'div',
              { class: 'compacted muted', 'data-testid': 'last-compaction' },
              `⟳ Compacted into v${last.version}: ${formatCount(last.tokensBefore)} → ${formatCount(last.tokensAfter)} tokens`,
            )
          : h('div', { class: 'error-text', 'data-testid': 'last-compaction' }, `Compaction failed: ${last.message}`),
      );
    }

    // Context occupancy, with the compaction point marked on the same scale.
    const fill = h('div', { class: `gauge-fill level-${gauge.level}` });
    fill.style.width = `${Math.min(100, gauge.percent ?? 0)}%`;
    const bar = h(
      'div',
      {
        class: 'gauge',
        role: 'meter',
        'aria-label': 'Context used',
        'aria-valuemin': 0,
        'aria-valuemax': 100,
        'aria-valuenow': Math.round(gauge.percent ?? 0),
      },
      fill,
    );
    if (gauge.thresholdPercent !== undefined) {
      const marker = h('div', {
        class: 'gauge-threshold',
        title: `compaction at ${formatPercent(gauge.thresholdPercent)}`,
        'data-testid': 'threshold-marker',
      });
      marker.style.left = `${Math.min(100, gauge.thresholdPercent)}%`;
      bar.append(marker);
    }
    parts.push(
      h(
        'div',
        { class: 'metric-line', 'data-testid': 'context' },
        h('span', {}, 'Context'),
        h('strong', {}, gauge.percent === undefined ? 'unknown' : formatPercent(gauge.percent)),
        h(
          'span',
          { class: 'muted' },
          gauge.windowTokens
            ? `${formatCompact(gauge.usedTokens)} of ${formatCompact(gauge.windowTokens)}`
            : 'window not reported yet',
        ),
      ),
      bar,
    );
    if (gauge.thresholdPercent !== undefined && preview?.threshold !== undefined) {
      parts.push(
        h(
          'div',
          { class: 'muted small' },
          `▲ compacts at ${formatPercent(gauge.thresholdPercent)} of the window (${formatCount(preview.threshold)} tokens, ${preview.budget ? `${formatPercent((preview.threshold / preview.budget) * 100)} of the ${formatCompact(preview.budget)} budget` : "the budget's threshold"})`,
        ),
      );
    }

    parts.push(
      h(
        'dl',
        { class: 'stats' },
        stat('Turns', String(metrics.turns)),
        stat('Cost', formatCost(metrics.costUsd, metrics.costUnknown, metrics.costEstimated === true)),
        stat('Input', formatCompact(metrics.inputTokens)),
        stat('Output', formatCompact(metrics.outputTokens)),
        stat('Cache', `${formatCompact(metrics.cacheReadTokens)} / ${formatCompact(metrics.cacheWriteTokens)}`),
        stat('Compactions', String(session?.stats.totalCompactions ?? 0)),
        metrics.model ? stat('Model', metrics.model, true) : null,
      ),
    );

    parts.push(h('h4', {}, 'Next request'), ...breakdown(preview, view.previewError));
    parts.push(h('h4', {}, 'Cost and turns over time'), usageChart(view.series));
    replaceChildren(this.status, parts);
  }

  // ---- checkpoints ----

  private renderCheckpoints(data: CheckpointData | undefined, error: string | undefined, onBranch: string): void {
    const parts: HTMLElement[] = [h('h3', {}, 'Checkpoints')];
    if (error) parts.push(h('p', { class: 'error-text' }, error));
    else if (!data) parts.push(h('p', { class: 'muted' }, 'Loading…'));
    else if (!data.current)
      parts.push(
        h('p', { class: 'muted', 'data-testid': 'no-checkpoint' }, 'No checkpoint yet: nothing has been compacted.'),
      );
    else {
      const current = data.current;
      parts.push(
        h(
          'div',
          { class: 'checkpoint current', 'data-testid': 'current-checkpoint', 'data-version': current.version },
          h('div', { class: 'checkpoint-head' }, h('strong', {}, `Current: ${checkpointHeadline(current)}`)),
          ...checkpointBody(current),
        ),
      );
      const restorable = new Set(data.versions.filter((_version, index) => onBranch[index] === '1'));
      const earlier = data.versions.filter((version) => version.version !== current.version).reverse();
      if (earlier.length > 0) {
        parts.push(
          h('h4', {}, `Earlier versions (${earlier.length})`),
          h(
            'div',
            { class: 'versions', 'data-testid': 'checkpoint-versions' },
            earlier.map((version) =>
              h(
                'details',
                { class: 'checkpoint', 'data-version': version.version },
                h(
                  'summary',
                  {},
                  checkpointHeadline(version),
                  h('span', { class: 'muted small' }, ` · ${formatTime(version.createdAt)}`),
                  restorable.has(version) ? null : h('span', { class: 'muted small' }, ' · another branch'),
                ),
                this.restoreButton(version, restorable.has(version)),
                ...checkpointBody(version),
              ),
            ),
          ),
        );
      }
    }
    replaceChildren(this.checkpoints, parts);
  }

  /** Makes an earlier version current again (a copy; none is deleted); one of a branch not shown cannot be. */
  private restoreButton(version: CheckpointWire, onBranch: boolean): HTMLElement {
    const reason = onBranch
      ? `A new version copying v${version.version} becomes current; every version is kept.`
      : `v${version.version} summarizes a branch that is not active: switch to that branch first (‹ › in the conversation).`;
    const button: HTMLButtonElement = h(
      'button',
      {
        type: 'button',
        'data-testid': 'restore-checkpoint',
        'data-version': version.version,
        disabled: !onBranch || this.actions.restoreCheckpoint === undefined,
        title: reason,
        onclick: () => {
          button.disabled = true;
          void this.actions.restoreCheckpoint?.(version.version).finally(() => (button.disabled = false));
        },
      },
      `Make v${version.version} current again`,
    );
    return h('div', { class: 'restore-row' }, button, h('span', { class: 'muted small' }, reason));
  }

  // ---- actions ----

  /**
   * Updates the action buttons in place. They are built once: a card rebuilt under the pointer (a
   * `session_updated` lands between mousedown and mouseup) would swallow the user's click.
   */
  private renderActions(view: SessionView, session: SessionInfo | undefined, state: AppState): void {
    const busy = state.busy;
    const archived = session?.status === 'archived';
    const buttons = this.actionButtons;
    buttons.compact.disabled = busy.compact === true || view.compaction !== undefined || archived;
    setText(buttons.compact, busy.compact || view.compaction ? 'Compacting…' : 'Force compact');
    buttons.clear.disabled = busy.clear === true || archived;
    buttons.archive.disabled = busy.archive === true || archived;
    setText(buttons.archive, archived ? 'Archived' : 'Archive');
    if (this.confirmShown === this.confirming) return;
    this.confirmShown = this.confirming;
    const confirm = (what: 'clear' | 'archive', question: string, run: () => void) =>
      h(
        'div',
        { class: 'confirm', role: 'alertdialog' },
        h('p', {}, question),
        h(
          'div',
          { class: 'button-row' },
          h(
            'button',
            {
              type: 'button',
              class: 'danger',
              'data-testid': `confirm-${what}`,
              onclick: () => ((this.confirming = undefined), run()),
            },
            what === 'clear' ? 'Clear' : 'Archive',
          ),
          h('button', { type: 'button', onclick: () => this.setConfirming(undefined) }, 'Keep'),
        ),
      );
    replaceChildren(
      this.confirmSlot,
      this.confirming === 'clear'
        ? confirm('clear', 'Start the next request from the checkpoint? The messages stay in the history.', () =>
            this.actions.clearMessages(),
          )
        : null,
      this.confirming === 'archive'
        ? confirm('archive', 'Archive this session? It stays readable and takes no new messages.', () =>
            this.actions.archive(),
          )
        : null,
    );
  }

  private setConfirming(what: 'clear' | 'archive' | undefined): void {
    this.confirming = what;
    if (this.lastState) this.update(this.lastState);
  }

  // ---- the request preview pane ----

  private renderPane(view: SessionView): void {
    const pane = view.requestPane;
    this.overlay.hidden = pane === undefined;
    if (!pane) {
      this.overlay.replaceChildren();
      return;
    }
    const prompt = h('input', {
      type: 'text',
      value: pane.prompt,
      placeholder: 'Next message to preview with (optional)',
      'aria-label': 'Next message',
      'data-testid': 'preview-prompt',
    });
    const parts: HTMLElement[] = [
      h(
        'header',
        { class: 'pane-head' },
        h('h3', {}, 'The request the next turn would send'),
        h(
          'button',
          {
            type: 'button',
            class: 'close',
            'aria-label': 'Close',
            'data-testid': 'close-preview',
            onclick: () => this.actions.closeRequestPane(),
          },
          '×',
        ),
      ),
      h(
        'form',
        {
          class: 'inline-form',
          onsubmit: (event: Event) => {
            event.preventDefault();
            this.actions.previewRequest(prompt.value);
          },
        },
        prompt,
        h('button', { type: 'submit' }, 'Preview'),
      ),
    ];
    if (pane.loading) parts.push(h('p', { class: 'muted' }, 'Building the request…'));
    else if (pane.error) parts.push(h('p', { class: 'error-text', 'data-testid': 'preview-error' }, pane.error));
    else if (pane.result) {
      const result = pane.result;
      parts.push(
        h(
          'div',
          { class: 'pane-grid' },
          h('div', {}, ...breakdown(result, undefined)),
          h(
            'div',
            { class: 'prompts' },
            h('h4', {}, 'System prompt'),
            h('pre', { class: 'prompt-text', 'data-testid': 'system-prompt' }, result.systemPrompt),
            h('h4', {}, 'User prompt'),
            h('pre', { class: 'prompt-text', 'data-testid': 'user-prompt' }, result.userPrompt || '(empty)'),
          ),
        ),
      );
    }
    replaceChildren(
      this.overlay,
      h('div', { class: 'pane', role: 'dialog', 'aria-modal': 'true', 'aria-label': 'Request preview' }, parts),
    );
  }
}

function changed(last: Record<string, unknown>, key: string, inputs: unknown[]): boolean {
  const previous = last[key] as unknown[] | undefined;
  if (previous && previous.length === inputs.length && previous.every((value, index) => value === inputs[index]))
    return false;
  last[key] = inputs;
  return true;
}

function stat(label: string, value: string, wide = false): HTMLElement {
  return h('div', { class: wide ? 'wide' : undefined }, h('dt', {}, label), h('dd', { title: value }, value));
}

/** Tokens per section of the request as one stacked bar and a table. */
function breakdown(preview: PreviewResult | undefined, error: string | undefined): HTMLElement[] {
  if (error)
    return [h('p', { class: 'muted small', 'data-testid': 'breakdown-unavailable' }, `Not available: ${error}`)];
  if (!preview) return [h('p', { class: 'muted small' }, 'Reading…')];
  const shares = sectionShares(preview.sections);
  const bar = h('div', { class: 'stack', 'aria-hidden': 'true' });
  for (const share of shares) {
    const segment = h('div', {
      class: `segment section-${share.name}`,
      title: `${share.label}: ${formatCount(share.tokens)} tokens`,
    });
    segment.style.width = `${share.percent}%`;
    bar.append(segment);
  }
  const budget = preview.budget !== undefined ? ` of the ${formatCount(preview.budget)}-token budget` : '';
  return [
    h(
      'div',
      { class: 'request-total', 'data-testid': 'request-total' },
      h('strong', {}, `${formatCount(preview.totalTokens)} tokens`),
      h('span', { class: 'muted small' }, budget),
    ),
    bar,
    h(
      'table',
      { class: 'sections', 'data-testid': 'sections' },
      h(
        'tbody',
        {},
        shares.map((share) =>
          h(
            'tr',
            { 'data-section': share.name },
            h('td', {}, h('span', { class: `swatch section-${share.name}` }), share.label),
            h('td', { class: 'number' }, formatCount(share.tokens)),
            h('td', { class: 'number muted' }, formatPercent(share.percent)),
          ),
        ),
      ),
    ),
  ];
}

/** Cumulative cost as a step line over time, a tick per completed turn on the time axis, and the totals. */
function usageChart(series: UsageSeries): HTMLElement {
  const geometry = chartGeometry(series.points, CHART);
  if (!geometry) return h('p', { class: 'muted small', 'data-testid': 'usage-chart-empty' }, 'No turns yet.');
  const chart = svg(
    'svg',
    {
      class: 'chart',
      viewBox: `0 0 ${geometry.width} ${geometry.height}`,
      width: geometry.width,
      height: geometry.height,
      role: 'img',
      'aria-label': `Cost ${formatCost(series.costUsd, series.costUnknown)} and ${plural(series.turns, 'turn')} over time`,
      'data-testid': 'usage-chart',
    },
    svg('path', { d: geometry.costArea, class: 'area-cost' }),
    svg('line', {
      x1: CHART.padding,
      x2: geometry.width - CHART.padding,
      y1: geometry.baseline,
      y2: geometry.baseline,
      class: 'axis',
    }),
    svg('path', { d: geometry.costPath, class: 'line-cost' }),
    geometry.turnTicks.map((x) =>
      svg('line', { x1: x, x2: x, y1: geometry.baseline - 9, y2: geometry.baseline + 3, class: 'tick-turn' }),
    ),
  );
  return h(
    'figure',
    { class: 'chart-figure' },
    chart,
    h(
      'figcaption',
      {},
      h('span', { class: 'legend cost' }, `cost ${formatCost(series.costUsd, series.costUnknown)}`),
      h('span', { class: 'legend turns' }, plural(series.turns, 'turn')),
      h(
        'span',
        { class: 'muted small' },
        `${formatTime(geometry.startAt).slice(11)} → ${formatTime(geometry.endAt).slice(11)}`,
      ),
    ),
  );
}

/** Checkpoint items can be whole pinned messages: the first lines show, all of it on hover. */
const ITEM_CHARS = 280;

function item(text: string): HTMLElement {
  if (text.length <= ITEM_CHARS) return h('li', {}, text);
  return h(
    'li',
    { title: text },
    `${text.slice(0, ITEM_CHARS - 1)}…`,
    h('span', { class: 'muted small' }, ` (+${formatCount(text.length - ITEM_CHARS + 1)} characters)`),
  );
}

function checkpointBody(checkpoint: CheckpointWire): HTMLElement[] {
  const parts: HTMLElement[] = [
    h(
      'div',
      { class: 'folded', 'data-testid': 'folded-range' },
      h('span', { class: 'muted' }, 'Folded in: '),
      foldedRange(checkpoint),
    ),
  ];
  if (checkpoint.instructions)
    parts.push(h('div', { class: 'small' }, h('span', { class: 'muted' }, 'Instructions: '), checkpoint.instructions));
  for (const [key, label] of CHECKPOINT_SECTIONS) {
    const items = checkpoint.summary[key];
    if (items.length === 0) continue;
    parts.push(
      h(
        'div',
        { class: `checkpoint-section section-${key}` },
        h('h5', {}, `${label} (${items.length})`),
        h('ul', {}, items.map(item)),
      ),
    );
  }
  if (checkpoint.pinned.length > 0)
    parts.push(
      h('div', { class: 'checkpoint-section' }, h('h5', {}, 'Pinned intent'), h('ul', {}, checkpoint.pinned.map(item))),
    );
  if (checkpoint.liveHandles.length > 0)
    parts.push(
      h(
        'div',
        { class: 'checkpoint-section' },
        h('h5', {}, 'Live handles'),
        h(
          'ul',
          {},
          checkpoint.liveHandles.map((handle) =>
            h('li', {}, `${handle.label ?? handle.id} (${handle.kind}, ${handle.status})`),
          ),
        ),
      ),
    );
  if (checkpoint.ralphLoop) {
    const loop = checkpoint.ralphLoop;
    parts.push(
      h(
        'div',
        { class: 'small' },
        h('span', { class: 'muted' }, 'Ralph loop: '),
        `iteration ${loop.currentIteration}, ${loop.passedChecks.length} passed, ${loop.failedChecks.length} failing${loop.lastError ? ` · ${loop.lastError}` : ''}`,
      ),
    );
  }
  return parts;
}
