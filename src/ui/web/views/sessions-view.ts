import type { SessionInfo, SessionSearchHitInfo } from '../../../protocol/index.js';
import type { Actions } from '../controller.js';
import { h, replaceChildren, setText } from '../dom.js';
import { formatAgo, formatCompact, formatCost, formatTime, plural } from '../format.js';
import type { AppState } from '../state.js';
import { withCode } from './connect-view.js';
import {
  FILTER_KEYS,
  FILTER_LABELS,
  filterOptions,
  filterSessions,
  sessionLabel,
  sessionStats,
} from '../view-model.js';

/**
 * The sidebar: this window's draft (or the form to draft one), full-text search, the filters and
 * every session of the project with its last activity, tokens, cost and compactions.
 */
export class SessionsView {
  readonly element: HTMLElement;
  private readonly draftBox = h('div', { class: 'draft-box', 'data-testid': 'draft-box' });
  private readonly searchInput: HTMLInputElement;
  private readonly searchStatus = h('div', { class: 'search-status muted', 'data-testid': 'search-status' });
  private readonly filters = h('div', { class: 'filters' });
  private readonly count = h('span', { class: 'muted', 'data-testid': 'session-count' });
  private readonly list = h('ul', { class: 'session-list', 'data-testid': 'session-list' });
  private readonly selects = new Map<string, HTMLSelectElement>();
  private last: {
    sessions?: SessionInfo[];
    filters?: unknown;
    search?: unknown;
    selectedId?: string | undefined;
    now?: number;
  } = {};
  private lastDraft: { draft?: unknown; catalog?: unknown; busy?: unknown } = {};
  private appliedTask: string | undefined;
  private rows = new Map<string, { session: SessionInfo; selected: boolean; minute: number; element: HTMLElement }>();
  private shown: SessionInfo[] = [];
  private now = 0;
  private rowHeight: number | undefined;
  private readonly above = h('li', { class: 'spacer', 'aria-hidden': 'true' });
  private readonly below = h('li', { class: 'spacer', 'aria-hidden': 'true' });
  private readonly hits = h('ol', { class: 'search-hits', 'data-testid': 'search-hits' });
  private scrollFrame = 0;

  constructor(private readonly actions: Actions) {
    this.list.addEventListener('scroll', () => {
      if (this.scrollFrame !== 0) return;
      this.scrollFrame = requestAnimationFrame(() => {
        this.scrollFrame = 0;
        this.renderWindow();
      });
    });
    this.searchInput = h('input', {
      type: 'search',
      placeholder: 'Search sessions and their content…',
      'aria-label': 'Search sessions',
      'data-testid': 'session-search',
      oninput: () => actions.search(this.searchInput.value),
    });
    for (const key of FILTER_KEYS) {
      const select = h('select', {
        'aria-label': FILTER_LABELS[key],
        'data-filter': key,
        onchange: () => actions.setFilter(key, select.value || undefined),
      });
      this.selects.set(key, select);
      this.filters.append(h('label', { class: 'filter' }, h('span', {}, FILTER_LABELS[key]), select));
    }
    this.element = h(
      'aside',
      { class: 'sidebar', 'aria-label': 'Sessions' },
      this.draftBox,
      h('div', { class: 'panel-title' }, h('h2', {}, 'Sessions'), this.count),
      h('div', { class: 'search' }, this.searchInput, this.searchStatus, this.hits),
      this.filters,
      this.list,
    );
  }

  update(state: AppState, now: number): void {
    this.updateDraftBox(state);
    const { sessions, filters, search, selectedId } = state;
    const minute = Math.floor(now / 30_000);
    if (
      this.last.sessions === sessions &&
      this.last.filters === filters &&
      this.last.search === search &&
      this.last.selectedId === selectedId &&
      this.last.now === minute
    )
      return;
    this.last = { sessions, filters, search, selectedId, now: minute };

    for (const key of FILTER_KEYS) {
      const select = this.selects.get(key)!;
      const value = filters[key] ?? '';
      const options = filterOptions(sessions, key);
      if (value && !options.includes(value)) options.push(value);
      replaceChildren(
        select,
        h('option', { value: '' }, `any`),
        options.map((option) => h('option', { value: option }, option)),
      );
      select.value = value;
      select.classList.toggle('set', value !== '');
    }

    if (search.query === '') replaceChildren(this.searchStatus);
    else if (search.running) replaceChildren(this.searchStatus, 'Searching…');
    else if (search.error) replaceChildren(this.searchStatus, h('span', { class: 'error-text' }, search.error));
    else if (search.matches)
      replaceChildren(
        this.searchStatus,
        `${plural(search.hits?.length ?? search.matches.size, 'message')} in ${plural(search.matches.size, 'session')} hold “${search.query}”`,
      );
    this.renderHits(search.query !== '' && !search.running ? (search.hits ?? []) : [], sessions);

    const shown = filterSessions(
      sessions,
      filters,
      search.query !== '' && !search.running ? search.matches : undefined,
    );
    this.count.textContent =
      shown.length === sessions.length ? String(sessions.length) : `${shown.length} of ${sessions.length}`;
    if (!state.sessionsLoaded) {
      replaceChildren(this.list, h('li', { class: 'empty muted' }, 'Loading sessions…'));
      return;
    }
    if (shown.length === 0) {
      replaceChildren(
        this.list,
        h(
          'li',
          { class: 'empty muted' },
          sessions.length === 0
            ? withCode(
                'No sessions yet: draft an agent above, or import a Claude Code or Gemini CLI session with `parley import <path>`.',
              )
            : 'No session matches.',
        ),
      );
      return;
    }
    this.shown = shown;
    this.now = now;
    this.renderWindow();
  }

  /**
   * Only the rows on screen (and a few either side) are in the document: a spacer above and below
   * keeps the scroll height of the whole list, so 100,000 sessions cost what 40 do. Rows are one
   * height (measured from the first one drawn). Near the end of what is loaded, the next page is read.
   */
  private renderWindow(): void {
    const shown = this.shown;
    const selectedId = this.last.selectedId;
    const now = this.now;
    const minute = Math.floor(now / 30_000);
    const rowHeight = this.rowHeight ?? ESTIMATED_ROW_HEIGHT;
    const viewport = this.list.clientHeight > 0 ? this.list.clientHeight : 900;
    const start = Math.max(0, Math.floor(this.list.scrollTop / rowHeight) - OVERSCAN_ROWS);
    const end = Math.min(shown.length, start + Math.ceil(viewport / rowHeight) + 2 * OVERSCAN_ROWS);
    // A streaming session updates its record on every batch: rebuild only the rows that changed.
    const rows = new Map<string, { session: SessionInfo; selected: boolean; minute: number; element: HTMLElement }>();
    const elements = shown.slice(start, end).map((session) => {
      const selected = session.sessionId === selectedId;
      const cached = this.rows.get(session.sessionId);
      let element: HTMLElement;
      if (!cached) element = this.row(session, selected, now);
      else {
        element = cached.element;
        // In place: a row rebuilt between the user's mousedown and mouseup would swallow the click.
        if (cached.session !== session || cached.selected !== selected || cached.minute !== minute)
          fillRow(element.firstElementChild as HTMLButtonElement, session, selected, now);
      }
      rows.set(session.sessionId, { session, selected, minute, element });
      return element;
    });
    this.rows = rows;
    if (this.list.querySelector(':scope > .empty')) this.list.replaceChildren();
    this.above.style.height = `${start * rowHeight}px`;
    this.below.style.height = `${(shown.length - end) * rowHeight}px`;
    const wanted = [this.above, ...elements, this.below];
    wanted.forEach((element, index) => {
      const current = this.list.children[index];
      if (current !== element) this.list.insertBefore(element, current ?? null);
    });
    while (this.list.children.length > wanted.length) this.list.lastElementChild!.remove();
    if (this.rowHeight === undefined && elements[0] !== undefined && elements[0].offsetHeight > 0)
      this.rowHeight = elements[0].offsetHeight;
    if (end >= shown.length - OVERSCAN_ROWS * 2) this.actions.loadMoreSessions?.();
  }

  /** Each matching message: its session, a snippet; a click opens the session at that message. */
  private renderHits(hits: readonly SessionSearchHitInfo[], sessions: readonly SessionInfo[]): void {
    const titles = new Map(sessions.map((session) => [session.sessionId, sessionLabel(session).title]));
    replaceChildren(
      this.hits,
      hits.map((hit) =>
        h(
          'li',
          {},
          h(
            'button',
            {
              type: 'button',
              class: 'search-hit',
              'data-session-id': hit.sessionId,
              'data-block-id': hit.blockId,
              onclick: () => openAtMessage(this.actions, hit),
            },
            h('span', { class: 'hit-title' }, hit.title ?? titles.get(hit.sessionId) ?? hit.sessionId),
            h('span', { class: 'hit-snippet muted' }, `${hit.role === 'user' ? 'You' : 'Agent'}: ${hit.snippet}`),
          ),
        ),
      ),
    );
  }

  private row(session: SessionInfo, selected: boolean, now: number): HTMLElement {
    const button = h('button', {
      type: 'button',
      'data-session-id': session.sessionId,
      onclick: () => this.actions.select(session.sessionId),
    });
    fillRow(button, session, selected, now);
    return h('li', {}, button);
  }

  private updateDraftBox(state: AppState): void {
    const { draft, catalog, busy } = state;
    if (this.lastDraft.draft === draft && this.lastDraft.catalog === catalog && this.lastDraft.busy === busy) return;
    this.lastDraft = { draft, catalog, busy };
    if (draft) {
      replaceChildren(
        this.draftBox,
        h(
          'div',
          { class: 'draft-title' },
          h('span', { class: 'dot live' }),
          `Drafted in this window: `,
          h('strong', {}, draft.role),
        ),
        h(
          'div',
          { class: 'muted' },
          `${draft.project}/${draft.taskSlug} · ${draft.backend}${draft.model ? ` · ${draft.model}` : ''}`,
        ),
        h(
          'div',
          { class: 'button-row' },
          h('button', { type: 'button', onclick: () => this.actions.select(draft.sessionId) }, 'Open'),
          h(
            'button',
            {
              type: 'button',
              'data-testid': 'undraft',
              disabled: busy.undraft === true,
              onclick: () => this.actions.undraft(),
            },
            'Undraft',
          ),
        ),
      );
      return;
    }
    // Re-rendered when the catalog changes: keep what the user picked where it still exists.
    const picked = (name: string) => this.draftBox.querySelector<HTMLSelectElement>(`select[name="${name}"]`)?.value;
    const keep = (select: HTMLSelectElement, value: string | undefined) => {
      if (value && Array.from(select.options).some((option) => option.value === value)) select.value = value;
    };
    const previousRole = picked('role');
    const previousTask = picked('task');
    const project = h(
      'select',
      { name: 'project', 'aria-label': 'Project', onchange: () => this.actions.chooseProject(project.value) },
      catalog.projects.map((entry) => h('option', { value: entry.name }, entry.name)),
    );
    if (catalog.project !== undefined) project.value = catalog.project;
    const task = h(
      'select',
      { name: 'task', 'aria-label': 'Task' },
      catalog.tasks.length === 0
        ? h('option', { value: '' }, 'no tasks')
        : catalog.tasks.map((entry) => h('option', { value: entry.slug }, `${entry.title} (${entry.state})`)),
    );
    const role = h(
      'select',
      { name: 'role', 'aria-label': 'Role' },
      catalog.roles.map((entry) => h('option', { value: entry.name, title: entry.description }, entry.name)),
    );
    keep(role, previousRole);
    // A task just created is picked once; after that the user's choice stands.
    if (catalog.task !== undefined && catalog.task !== this.appliedTask) {
      this.appliedTask = catalog.task;
      keep(task, catalog.task);
    } else keep(task, previousTask);
    // What the user is typing survives a re-render (a catalog refresh must not wipe a half-typed title).
    const previousTitle = this.draftBox.querySelector<HTMLInputElement>('input[name="task-title"]');
    const typing = previousTitle !== null && previousTitle === document.activeElement;
    const title = h('input', {
      type: 'text',
      name: 'task-title',
      placeholder: 'New task title',
      'aria-label': 'New task title',
      autocomplete: 'off',
    });
    if (previousTitle) title.value = previousTitle.value;
    const newTask = h(
      'form',
      {
        class: 'inline-form new-task',
        'data-testid': 'new-task',
        onsubmit: (event: Event) => {
          event.preventDefault();
          if (!title.value.trim() || !project.value) return;
          void this.actions.createTask(project.value, title.value).then((created) => {
            if (created) title.value = '';
          });
        },
      },
      title,
      h('button', { type: 'submit', disabled: busy.task === true }, 'Add task'),
    );
    const form = h(
      'form',
      {
        class: 'draft-form',
        'data-testid': 'draft-form',
        onsubmit: (event: Event) => {
          event.preventDefault();
          if (!project.value || !task.value || !role.value) return;
          this.actions.createDraft({ role: role.value, project: project.value, task: task.value });
        },
      },
      h('div', { class: 'draft-title' }, 'Draft an agent'),
      h('label', {}, h('span', {}, 'Role'), role),
      h('label', {}, h('span', {}, 'Project'), project),
      h('label', {}, h('span', {}, 'Task'), task),
      h(
        'button',
        { type: 'submit', class: 'primary', disabled: busy.draft === true || catalog.tasks.length === 0 },
        busy.draft ? 'Drafting…' : 'Draft',
      ),
    );
    replaceChildren(this.draftBox, form, newTask);
    if (typing) title.focus();
  }
}

/** Rows drawn beyond the screen on each side, so a fast scroll does not show blank space. */
const OVERSCAN_ROWS = 10;
/** A row's height until the first one is measured. */
const ESTIMATED_ROW_HEIGHT = 66;

/** Opens the hit's session and, once its history is drawn, scrolls its message into view and marks it. */
function openAtMessage(actions: Actions, hit: SessionSearchHitInfo): void {
  actions.select(hit.sessionId, { atSeq: hit.seq });
  const started = performance.now();
  const look = () => {
    const block = document.querySelector<HTMLElement>(`[data-block-id="${CSS.escape(hit.blockId)}"]`);
    if (block !== null) {
      block.scrollIntoView({ block: 'center' });
      block.classList.add('search-target');
      setTimeout(() => block.classList.remove('search-target'), 2_000);
    } else if (performance.now() - started < 5_000) requestAnimationFrame(look);
  };
  requestAnimationFrame(look);
}

/**
 * A session row's look and text, written into the row's existing elements: nothing under the
 * pointer is replaced, so a click is never lost to a live update (mousedown and mouseup must land on
 * the same element).
 */
function fillRow(button: HTMLButtonElement, session: SessionInfo, selected: boolean, now: number): void {
  const label = sessionLabel(session);
  const stats = sessionStats(session);
  button.className = `session-row${selected ? ' selected' : ''}${session.status === 'archived' ? ' archived' : ''}`;
  if (selected) button.setAttribute('aria-current', 'true');
  else button.removeAttribute('aria-current');
  if (!button.firstElementChild) {
    const span = () => h('span', {});
    button.append(
      h('span', { class: 'row-top' }, span(), h('span', { class: 'row-title' })),
      h('span', { class: 'row-detail muted' }),
      h(
        'span',
        { class: 'row-stats' },
        span(),
        h('span', { title: 'tokens' }),
        h('span', { title: 'cost' }),
        h('span', { title: 'compactions' }),
      ),
    );
  }
  const [top, detail, statsRow] = Array.from(button.children) as HTMLElement[];
  const [kind, title] = Array.from(top!.children) as HTMLElement[];
  const [ago, tokens, cost, compactions] = Array.from(statsRow!.children) as HTMLElement[];
  kind!.className = `kind kind-${label.kind}`;
  setText(kind!, label.kind);
  setText(title!, `${session.pinned === true ? '📌 ' : ''}${label.title}`);
  setText(detail!, `${label.detail}${session.tags?.length ? ` · #${session.tags.join(' #')}` : ''}`);
  ago!.title = formatTime(stats.lastActivity);
  setText(ago!, formatAgo(stats.lastActivity, now));
  setText(tokens!, `${formatCompact(stats.tokens)} tok`);
  setText(cost!, formatCost(stats.costUsd, stats.costUnknown, stats.costEstimated));
  compactions!.className = stats.compactions > 0 ? 'compactions' : 'muted';
  setText(compactions!, `⟳ ${stats.compactions}`);
}
