import {
  commandOf,
  fileEditOf,
  type AssistantTextBlock,
  type BlockStatus,
  type ConversationBlock,
  type ConversationState,
  type SubagentBlock,
  type SystemBlock,
  type ThinkingBlock,
  type ToolResultBlock,
  type ToolUseBlock,
} from '../../../conversation/index.js';
import type { SessionInfo } from '../../../protocol/index.js';
import type { Actions } from '../controller.js';
import { h, replaceChildren } from '../dom.js';
import {
  describeInput,
  formatCost,
  formatCount,
  formatDuration,
  oneLine,
  plural,
  prettyJson,
  wordCount,
} from '../format.js';
import {
  canPrompt,
  firstMessageTarget,
  selectedSession,
  type AppState,
  type FirstMessageTarget,
  type SessionView,
} from '../state.js';
import { chatItems, sessionLabel, type ChatItem } from '../view-model.js';
import { forkOrigin } from './history-views.js';
import { continueTarget } from '../history-model.js';
import { MarkdownView } from '../markdown/markdown-view.js';
import type { MarkdownOptions } from '../markdown/render.js';
import { BackendPicker } from './backend-picker.js';
import { ChatHistory } from './chat-history.js';
import { commandElement, fileEditElement } from './tool-views.js';

const STATUS_GLYPH: Record<BlockStatus, string> = { pending: '○', running: '●', success: '✓', error: '✗' };

/** Blocks a session opens with, and how many more each "show earlier" adds. */
const WINDOW = 300;

/**
 * Blocks rendered per step while a session opens: the newest ones go in a step at a time until
 * they fill the panel and a quarter more (`FIRST_FILL`), and that frame is painted; the rest of the
 * window fills in above them in idle time, `FILL_STEP` blocks at a time, as long as the browser has
 * time to spare (the first slice runs right after that frame, before a reader can scroll far).
 */
const FIRST_STEP = 12;
const FIRST_FILL = 1.25;
const FILL_STEP = 12;

/** Milliseconds an idle slice leaves for the layout of what it added; and how long a fill may wait for idle time. */
const FILL_RESERVE_MS = 4;
const FILL_TIMEOUT_MS = 200;

/** Pixels from the bottom within which the panel keeps following new blocks. */
const FOLLOW_SLACK = 48;

/** Pixels from the top (or the bottom) within which scrolling reads the page of the log before (or after) those held. */
const PAGE_EDGE = 200;

/** The name of a conversation thread's block: "conversation with <role>" (src/draft/conversations.ts). */
const CONVERSATION_PREFIX = 'conversation with ';

const PROMPT_PLACEHOLDER = 'Message the agent… (Enter sends, Shift+Enter is a new line)';

/**
 * Tools whose results are file contents, listings or search hits: shown as they are, in a `<pre>`,
 * because Markdown would fold their lines together. Other tools' results read as Markdown.
 */
const VERBATIM_RESULT_TOOLS = new Set([
  'Read',
  'read_file',
  'read_many_files',
  'Grep',
  'grep',
  'search_file_content',
  'Glob',
  'glob',
  'LS',
  'list_directory',
  'NotebookRead',
]);

/**
 * The chat panel: the selected session's conversation as blocks, live. A block's element is built
 * again only when its block (or its result, or its thread) changed: `applyEvent` keeps unchanged
 * blocks as the same objects, so a streaming turn touches one element per delta.
 */
export class ChatView {
  readonly element: HTMLElement;
  private readonly header = h('header', { class: 'chat-header' });
  private readonly headerMain = h('div', { class: 'chat-header-main' });
  private readonly badge = h('div', { class: 'chat-badge', 'aria-live': 'polite' });
  private readonly scroller = h('div', {
    class: 'blocks',
    role: 'log',
    'aria-live': 'polite',
    'data-testid': 'blocks',
  });
  private readonly footer = h('footer', { class: 'chat-footer' });
  private readonly textarea: HTMLTextAreaElement;
  private readonly sendButton: HTMLButtonElement;
  private readonly cancelButton: HTMLButtonElement;
  private readonly promptForm: HTMLFormElement;
  private readonly backendPicker = new BackendPicker();
  /** The state last rendered: what the prompt form reads when it sends. */
  private state: AppState | undefined;
  private readonly footerNote = h('p', { class: 'muted footer-note', 'data-testid': 'prompt-note' });
  private readonly cache = new Map<string, { signature: unknown[]; element: HTMLElement }>();
  /** `<details>` the user opened (thinking, tool details, worker threads), by key. */
  private readonly open = new Set<string>();
  /** `<details>` shown open by default (edits, commands) that the user closed, by key. */
  private readonly closed = new Set<string>();
  /** The Markdown of texts still streaming, kept across their block's re-renders so only the open tail renders again. */
  private readonly live = new Map<string, MarkdownView>();
  private last: {
    conversation?: ConversationState;
    session?: SessionInfo | undefined;
    view?: unknown;
    mode?: string;
    busy?: unknown;
    turn?: boolean;
    empty?: string;
  } = {};
  /** The prompt box is showing as the first message's (no draft yet): sending drafts first. */
  private firstMessage = false;
  private items: ChatItem[] = [];
  /** Index of the first item the window covers; undefined until the session's first render. */
  private windowStart: number | undefined;
  /** Index of the first item rendered: above `windowStart` while the window fills in after the first frame. */
  private renderedFrom = 0;
  /** The idle callback filling the window in, if one is waiting. */
  private fill: { cancel(): void } | undefined;
  private readonly earlier: HTMLButtonElement;
  private readonly earlierRow: HTMLElement;
  /** Where the held events lie in the session's log (`SessionView.place`): whether to read more above or below. */
  private place: SessionView['place'];
  private readonly olderButton: HTMLButtonElement;
  private readonly olderRow: HTMLElement;
  private readonly newerButton: HTMLButtonElement;
  private readonly newerRow: HTMLElement;
  /** An older page was asked for by the reader: once it is in, the blocks it added are shown. */
  private revealOlder = false;
  /** The block the reader was looking at before the held events changed at the top, and its place in the panel. */
  private anchor: { key: string; top: number } | undefined;
  /** The compaction the pill shows, and the timer that keeps its elapsed time current. */
  private compaction: SessionView['compaction'];
  private compactionTimer: ReturnType<typeof setInterval> | undefined;
  /** The note form of each running conversation thread, kept across its block's re-renders so typed text stays. */
  private readonly noteForms = new Map<string, HTMLFormElement>();
  /** Rewind, edit and fork on the blocks, and the branch switchers (chat-history.ts). */
  private readonly history: ChatHistory;

  constructor(private readonly actions: Actions) {
    this.textarea = h('textarea', {
      rows: 3,
      placeholder: PROMPT_PLACEHOLDER,
      'aria-label': 'Prompt',
      'data-testid': 'prompt',
      onkeydown: (event: Event) => {
        const key = event as KeyboardEvent;
        if (key.key === 'Enter' && !key.shiftKey && !key.isComposing) {
          key.preventDefault();
          this.promptForm.requestSubmit();
        }
      },
    });
    this.sendButton = h('button', { type: 'submit', class: 'primary', 'data-testid': 'send' }, 'Send');
    this.cancelButton = h(
      'button',
      { type: 'button', 'data-testid': 'cancel-turn', onclick: () => actions.cancel() },
      'Stop',
    );
    this.promptForm = h(
      'form',
      {
        class: 'prompt-form',
        onsubmit: (event: Event) => {
          event.preventDefault();
          const content = this.textarea.value;
          if (content.trim() === '') return;
          const backend = this.state ? this.backendPicker.choice(this.state) : undefined;
          const send = this.firstMessage ? actions.submitFirstMessage(content) : actions.submitPrompt(content, backend);
          void send.then((accepted) => {
            if (accepted && this.textarea.value === content) this.textarea.value = '';
          });
        },
      },
      this.textarea,
      h('div', { class: 'prompt-buttons' }, this.backendPicker.element, this.cancelButton, this.sendButton),
    );
    this.earlier = h('button', {
      type: 'button',
      class: 'link',
      'data-testid': 'show-earlier',
      onclick: () => this.showEarlier(),
    });
    this.earlierRow = h('div', { class: 'earlier' }, this.earlier);
    this.olderButton = h('button', {
      type: 'button',
      class: 'link',
      'data-testid': 'load-older',
      onclick: () => this.loadOlder(),
    });
    this.olderRow = h('div', { class: 'earlier' }, this.olderButton);
    this.newerButton = h('button', {
      type: 'button',
      class: 'link',
      'data-testid': 'load-newer',
      onclick: () => this.actions.loadNewerEvents?.(),
    });
    this.newerRow = h('div', { class: 'earlier' }, this.newerButton);
    this.scroller.addEventListener('scroll', () => this.pageOnScroll(), { passive: true });
    this.header.append(this.headerMain, this.badge);
    this.history = new ChatHistory(actions, {
      offerPrompt: (text) => {
        if (this.textarea.value.trim() === '' && this.state && canPrompt(this.state)) this.textarea.value = text;
      },
      redraw: () => {
        if (this.state) this.update(this.state);
      },
    });
    this.element = h(
      'section',
      { class: 'chat', 'aria-label': 'Conversation' },
      this.header,
      this.scroller,
      this.footer,
      ...this.history.dialogs,
    );
  }

  /** The compaction indicator, where the user is looking: its trigger and how long it has run. */
  private renderCompaction(compaction: SessionView['compaction']): void {
    if (compaction === this.compaction) return;
    this.compaction = compaction;
    clearInterval(this.compactionTimer);
    this.compactionTimer = undefined;
    if (!compaction) {
      replaceChildren(this.badge);
      return;
    }
    const elapsed = h('span', { class: 'elapsed', 'data-testid': 'chat-compacting-elapsed' });
    const tick = () => (elapsed.textContent = formatDuration(Date.now() - compaction.startedAt));
    tick();
    this.compactionTimer = setInterval(tick, 1_000);
    replaceChildren(
      this.badge,
      h(
        'span',
        { class: 'compacting-pill', 'data-testid': 'chat-compacting' },
        h('span', { class: 'spinner', 'aria-hidden': 'true' }),
        `Compacting (${compaction.trigger})… `,
        elapsed,
      ),
    );
  }

  update(state: AppState): void {
    const view = state.view;
    const session = selectedSession(state);
    if (!view) {
      const first = firstMessageTarget(state);
      const empty = first ? firstMessagePlaceholder(first) : '';
      if (this.last.view !== undefined || this.scroller.childElementCount === 0 || this.last.empty !== empty) {
        this.last = { empty };
        this.cache.clear();
        replaceChildren(this.headerMain, h('h2', {}, 'No session selected'));
        this.renderCompaction(undefined);
        const invitation = first
          ? `Pick a session on the left, or type a first message below: Parley ${first.task !== undefined ? `drafts ${first.role} on task ${first.task}` : `creates a task named after it and drafts ${first.role}`} to answer.`
          : 'Pick a session on the left, or draft an agent to chat with.';
        replaceChildren(
          this.scroller,
          h(
            'div',
            { class: 'empty-state', 'data-testid': 'empty-chat' },
            h('p', {}, invitation),
            h('p', { class: 'muted' }, 'Everything here updates live from the server.'),
          ),
        );
      }
      this.renderFirstMessageFooter(state, first);
      return;
    }
    if (this.last.view !== undefined && (this.last.view as { sessionId: string }).sessionId !== view.sessionId) {
      this.cache.clear();
      this.open.clear();
      this.closed.clear();
      this.live.clear();
      this.noteForms.clear();
      this.resetWindow();
    }
    if (
      session !== this.last.session ||
      this.last.view === undefined ||
      (this.last.view as { sessionId: string }).sessionId !== view.sessionId
    )
      this.renderHeader(session, view.sessionId, state);
    this.renderFooter(state, session);
    this.renderCompaction(view.compaction);
    this.last.view = view;
    this.last.session = session;

    if (view.loading) {
      replaceChildren(this.scroller, h('div', { class: 'empty-state muted' }, 'Loading the conversation…'));
      this.cache.clear();
      this.resetWindow();
      this.last.conversation = undefined;
      return;
    }
    if (view.loadError) {
      replaceChildren(this.scroller, h('div', { class: 'empty-state error-text' }, view.loadError));
      return;
    }
    const historyChanged = this.history.update(state);
    const placeChanged = !samePlace(this.place, view.place);
    this.place = view.place;
    if (this.last.conversation === view.conversation && !historyChanged && !placeChanged) return;
    if (this.last.conversation !== view.conversation) {
      const before = this.items;
      this.items = chatItems(view.conversation);
      // The held events changed at the top (a page read above, or one dropped): the window follows its blocks.
      if (this.windowStart !== undefined && before.length > 0 && before[0]!.key !== this.items[0]?.key)
        this.rebase(before);
    }
    // The older page asked for is in (or its read is over): later changes at the top are not its.
    if (this.place?.loading !== 'older') this.revealOlder = false;
    this.last.conversation = view.conversation;
    this.renderBlocks();
  }

  /** Shows up to a window's worth of the held blocks above those shown (the rest of the window first, while it fills in). */
  private showEarlier(): void {
    // Keep the blocks the user is reading where they are while older ones go in above.
    const fromBottom = this.scroller.scrollHeight - this.scroller.scrollTop;
    // While the window is still filling in, the button shows the rest of it at once.
    if (this.renderedFrom <= (this.windowStart ?? 0)) this.windowStart = Math.max(0, (this.windowStart ?? 0) - WINDOW);
    this.renderedFrom = this.windowStart ?? 0;
    this.renderBlocks();
    this.scroller.scrollTop = this.scroller.scrollHeight - fromBottom;
  }

  /** Asks for the page of the log before the oldest held; its blocks are shown once it is in. */
  private loadOlder(): void {
    if (!this.place || this.place.atStart || this.place.loading) return;
    this.revealOlder = true;
    this.actions.loadOlderEvents?.();
  }

  /**
   * Near the top, the held blocks above those shown go in, and once all are shown the page of the
   * log before them is read; near the bottom (the tail not held), the page after.
   */
  private pageOnScroll(): void {
    const place = this.place;
    if (!place || place.loading || this.items.length === 0) return;
    const { scrollTop, scrollHeight, clientHeight } = this.scroller;
    const allShown = (this.windowStart ?? 0) === 0 && this.renderedFrom === 0;
    if (scrollTop < PAGE_EDGE && !allShown) this.showEarlier();
    else if (!place.atStart && allShown && scrollTop < PAGE_EDGE) this.loadOlder();
    else if (!place.atTail && scrollHeight - scrollTop - clientHeight < PAGE_EDGE) this.actions.loadNewerEvents?.();
  }

  /**
   * The items changed at the top: the window's indexes move with the block the reader is looking
   * at (the topmost one in view), which is kept in its place on screen. When the reader asked for an
   * older page, up to a window's worth of its blocks are shown; a block no longer held starts the window again at the newest.
   */
  private rebase(before: ChatItem[]): void {
    const top = this.scroller.getBoundingClientRect().top;
    let anchor: { key: string; top: number; index: number } | undefined;
    for (let index = this.renderedFrom; index < before.length; index += 1) {
      const element = this.cache.get(before[index]!.key)?.element;
      if (!element?.isConnected) continue;
      const rect = element.getBoundingClientRect();
      if (rect.bottom > top) {
        anchor = { key: before[index]!.key, top: rect.top - top, index };
        break;
      }
    }
    const found = anchor ? this.items.findIndex((item) => item.key === anchor.key) : -1;
    if (!anchor || found === -1) {
      this.resetWindow();
      this.anchor = undefined;
      return;
    }
    const shift = found - anchor.index;
    this.windowStart = Math.max(0, (this.windowStart ?? 0) + shift);
    this.renderedFrom = Math.max(0, this.renderedFrom + shift);
    if (this.revealOlder && shift > 0) {
      this.windowStart = Math.max(0, this.windowStart - WINDOW);
      this.renderedFrom = this.windowStart;
    }
    this.revealOlder = false;
    this.anchor = { key: anchor.key, top: anchor.top };
  }

  private renderHeader(session: SessionInfo | undefined, sessionId: string, state: AppState): void {
    if (!session) {
      replaceChildren(this.headerMain, h('h2', {}, sessionId));
      return;
    }
    const label = sessionLabel(session);
    replaceChildren(
      this.headerMain,
      h(
        'div',
        { class: 'chat-title' },
        h('span', { class: `kind kind-${label.kind}` }, label.kind),
        h('h2', { 'data-testid': 'chat-title' }, label.title),
      ),
      h('div', { class: 'muted small' }, `${label.detail} · `, h('code', {}, session.sessionId)),
      forkOrigin(session, state.sessions, (sessionId) => this.actions.select(sessionId)),
    );
  }

  private renderFooter(state: AppState, session: SessionInfo | undefined): void {
    this.state = state;
    this.backendPicker.update(state);
    const prompting = canPrompt(state);
    let mode: string;
    if (prompting) mode = 'prompt';
    else if (!session) mode = 'none';
    else if (session.status === 'archived') mode = 'archived';
    else if (session.readOnly) mode = 'readonly';
    else if (continueTarget(session) !== undefined) mode = state.draft === undefined ? 'fork' : 'fork-drafted';
    else if (session.scope.kind === 'draft') mode = 'other-draft';
    else mode = 'not-draft';
    if (this.last.mode === mode && this.last.busy === state.busy && this.last.turn === state.turnRunning) return;
    this.last.mode = mode;
    this.last.busy = state.busy;
    this.last.turn = state.turnRunning;
    if (mode === 'prompt') {
      this.firstMessage = false;
      this.textarea.placeholder = PROMPT_PLACEHOLDER;
      this.sendButton.disabled = state.turnRunning || state.busy.submit === true;
      this.sendButton.textContent = state.turnRunning ? 'Working…' : 'Send';
      this.cancelButton.hidden = !state.turnRunning;
      this.cancelButton.disabled = state.busy.cancel === true;
      if (this.footer.firstChild !== this.promptForm) replaceChildren(this.footer, this.promptForm);
      return;
    }
    const notes: Record<string, string> = {
      none: '',
      archived: 'This session is archived: it stays readable and takes no new messages.',
      readonly: 'This session is read only (imported): search it, read it, inspect its checkpoints.',
      'other-draft': 'This draft belongs to another window (channel). Draft the role here to chat from this page.',
      'not-draft': 'The prompt box is for drafts: draft an agent on the left to chat.',
      fork: 'A fork no draft runs from this window: Continue here drafts on it, so you can type into it.',
      'fork-drafted': 'A fork: this window has a draft already. Undraft it to continue this fork here.',
    };
    this.footerNote.textContent = notes[mode] ?? '';
    if (mode === 'fork') {
      const busy = state.busy.draft === true;
      const button = h(
        'button',
        { type: 'button', 'data-testid': 'continue-fork', onclick: () => void this.actions.continueHere?.() },
        busy ? 'Drafting…' : 'Continue here',
      );
      button.disabled = busy;
      replaceChildren(this.footer, this.footerNote, button);
      return;
    }
    replaceChildren(this.footer, this.footerNote);
  }

  /** With no session selected and no draft: the prompt box for a first message, saying what sending it does. */
  private renderFirstMessageFooter(state: AppState, first: FirstMessageTarget | undefined): void {
    this.state = state;
    this.backendPicker.update(state);
    const mode = first ? `first:${firstMessagePlaceholder(first)}` : 'none';
    if (this.last.mode === mode && this.last.busy === state.busy && this.last.turn === state.turnRunning) return;
    this.last.mode = mode;
    this.last.busy = state.busy;
    this.last.turn = state.turnRunning;
    if (!first) {
      this.firstMessage = false;
      replaceChildren(this.footer);
      return;
    }
    this.firstMessage = true;
    this.textarea.placeholder = firstMessagePlaceholder(first);
    const drafting = state.busy.draft === true;
    this.sendButton.disabled = drafting || state.busy.submit === true;
    this.sendButton.textContent = drafting ? 'Drafting…' : 'Send';
    this.cancelButton.hidden = true;
    if (this.footer.firstChild !== this.promptForm) replaceChildren(this.footer, this.promptForm);
  }

  /** Forgets the window (a session closed or loading again) and any fill still waiting. */
  private resetWindow(): void {
    this.windowStart = undefined;
    this.anchor = undefined;
    this.renderedFrom = 0;
    this.fill?.cancel();
    this.fill = undefined;
  }

  private renderBlocks(): void {
    // Below the held events there are more (the tail is not held): the panel does not follow.
    const follow =
      (this.place?.atTail ?? true) &&
      this.scroller.scrollHeight - this.scroller.scrollTop - this.scroller.clientHeight < FOLLOW_SLACK;
    const anchor = this.anchor;
    this.anchor = undefined;
    if (this.items.length === 0) {
      this.cache.clear();
      replaceChildren(this.scroller, h('div', { class: 'empty-state muted' }, 'No messages yet.'));
      return;
    }
    if (this.scroller.querySelector(':scope > .empty-state')) this.scroller.replaceChildren();
    if (this.windowStart === undefined) {
      // A long session opens on its newest blocks; older ones come a page at a time, on request.
      this.windowStart = Math.max(0, this.items.length - WINDOW);
      this.openNewest();
    } else {
      this.placeBlocks();
    }
    if (follow) this.scroller.scrollTop = this.scroller.scrollHeight;
    else if (anchor) {
      const element = this.cache.get(anchor.key)?.element;
      if (element?.isConnected)
        this.scroller.scrollTop +=
          element.getBoundingClientRect().top - this.scroller.getBoundingClientRect().top - anchor.top;
    }
  }

  /**
   * The first render of a session: the newest blocks, a step at a time, until they fill the panel
   * (each check lays out only what is in so far), so the first frame shows the end of the
   * conversation without waiting for the whole window; the rest fills in when the page is idle.
   */
  private openNewest(): void {
    const start = this.windowStart ?? 0;
    this.renderedFrom = this.items.length;
    while (this.renderedFrom > start) {
      this.renderedFrom = Math.max(start, this.renderedFrom - FIRST_STEP);
      this.placeBlocks();
      if (this.scroller.scrollHeight > this.scroller.clientHeight * FIRST_FILL) break;
    }
    this.scheduleFill();
  }

  private scheduleFill(): void {
    if (this.fill || this.renderedFrom <= (this.windowStart ?? 0)) return;
    const run = (deadline?: IdleDeadline) => {
      this.fill = undefined;
      this.fillWindow(deadline);
    };
    if (typeof requestIdleCallback === 'function') {
      const handle = requestIdleCallback(run, { timeout: FILL_TIMEOUT_MS });
      this.fill = { cancel: () => cancelIdleCallback(handle) };
    } else {
      const handle = setTimeout(run, 0);
      this.fill = { cancel: () => clearTimeout(handle) };
    }
  }

  /** One idle slice: older blocks of the window go in above, the reader's place kept, until the window is whole. */
  private fillWindow(deadline?: IdleDeadline): void {
    const start = Math.min(this.windowStart ?? 0, this.items.length);
    if (this.renderedFrom <= start) return;
    const follow = this.scroller.scrollHeight - this.scroller.scrollTop - this.scroller.clientHeight < FOLLOW_SLACK;
    const fromBottom = this.scroller.scrollHeight - this.scroller.scrollTop;
    do {
      const from = Math.max(start, this.renderedFrom - FILL_STEP);
      for (let index = from; index < this.renderedFrom; index += 1)
        this.elementFor(this.items[index]!, this.cache, false);
      this.renderedFrom = from;
    } while (this.renderedFrom > start && (deadline?.timeRemaining() ?? 0) > FILL_RESERVE_MS);
    this.placeBlocks();
    this.scroller.scrollTop = follow ? this.scroller.scrollHeight : this.scroller.scrollHeight - fromBottom;
    this.scheduleFill();
  }

  /** Puts the rendered items (from `renderedFrom`) in the panel, moving or inserting only what changed. */
  private placeBlocks(): void {
    const start = Math.min(Math.max(this.renderedFrom, this.windowStart ?? 0), this.items.length);
    this.renderedFrom = start;
    const keep = new Set<string>();
    const elements: HTMLElement[] = [];
    for (const item of this.items.slice(start)) {
      keep.add(item.key);
      elements.push(...this.history.switchersBefore(item.block.id), this.elementFor(item, this.cache, false));
    }
    elements.push(...this.history.switchersAtEnd());
    if (start > 0) {
      const filling = start > (this.windowStart ?? 0);
      const more = filling ? start - (this.windowStart ?? 0) : Math.min(WINDOW, start);
      this.earlier.textContent = `Show ${formatCount(more)} earlier blocks (${formatCount(start)} not shown)`;
      elements.unshift(this.earlierRow);
    } else if (this.place && !this.place.atStart) {
      // Every block held is shown, and the log goes further back: the next page is read on scrolling up, or here.
      const loading = this.place.loading === 'older';
      this.olderButton.textContent = loading ? 'Reading earlier messages…' : 'Show earlier messages';
      this.olderButton.disabled = loading;
      elements.unshift(this.olderRow);
    }
    if (this.place && !this.place.atTail) {
      const loading = this.place.loading === 'newer';
      this.newerButton.textContent = loading ? 'Reading newer messages…' : 'Show newer messages';
      this.newerButton.disabled = loading;
      elements.push(this.newerRow);
    }
    for (const key of [...this.cache.keys()]) if (!keep.has(key)) this.cache.delete(key);
    // Unchanged elements (and their open <details>) stay put.
    elements.forEach((element, index) => {
      const current = this.scroller.children[index];
      if (current !== element) this.scroller.insertBefore(element, current ?? null);
    });
    while (this.scroller.children.length > elements.length) this.scroller.lastElementChild!.remove();
  }

  private elementFor(
    item: ChatItem,
    cache: Map<string, { signature: unknown[]; element: HTMLElement }>,
    inThread: boolean,
  ): HTMLElement {
    const signature = [...signatureOf(item), this.history.actionKey(item.block, inThread)];
    const cached = cache.get(item.key);
    if (cached && sameSignature(cached.signature, signature)) return cached.element;
    const block = item.block;
    const before = cached?.signature[0];
    // A streaming answer's element stays and its text updates in place: only the Markdown tail
    // changes in the page, so layout and paint per delta cover that tail, not the whole answer.
    if (
      cached &&
      block.type === 'assistant_text' &&
      this.live.has(item.key) &&
      before !== undefined &&
      (before as ConversationBlock).type === 'assistant_text' &&
      (before as AssistantTextBlock).model === block.model
    ) {
      const streaming = block.completedAt === undefined;
      this.markdown(item.key, block.content, streaming);
      cached.element.classList.toggle('streaming', streaming);
      // A finished answer gets its actions (none while it streams).
      if (!streaming && !cached.element.querySelector(':scope > .block-actions')) {
        const actions = this.history.actionsFor(block, inThread);
        if (actions) cached.element.append(actions);
      }
      cache.set(item.key, { signature, element: cached.element });
      return cached.element;
    }
    const element = this.blockElement(item, inThread);
    cache.set(item.key, { signature, element });
    return element;
  }

  private blockElement(item: ChatItem, inThread: boolean): HTMLElement {
    const block = item.block;
    const attributes = { 'data-block-id': block.id, 'data-block-type': block.type };
    switch (block.type) {
      case 'user_message': {
        // In a worker's thread the "user" is the agent that dispatched it; in a conversation's, the
        // opener (metadata.from: its role) or the user's own note (from: 'user').
        const from = block.metadata?.from;
        const who = !inThread
          ? block.pinned
            ? 'You · pinned'
            : 'You'
          : from === 'user'
            ? 'You · note to both agents'
            : typeof from === 'string'
              ? `From ${from}`
              : 'Task from the parent agent';
        const editor = inThread ? undefined : this.history.editorFor(block.id);
        return h(
          'div',
          { ...attributes, class: `block user${editor ? ' editing' : ''}` },
          h('div', { class: 'who' }, who),
          editor ?? clampedText(this.markdown(item.key, block.content, false, { breaks: true }), block.content.length),
          ...attachmentButtons(block.metadata?.attachments),
          editor ? null : this.history.actionsFor(block, inThread),
        );
      }
      case 'assistant_text':
        return h(
          'div',
          { ...attributes, class: `block assistant${block.completedAt === undefined ? ' streaming' : ''}` },
          h('div', { class: 'who' }, block.model ? `Agent · ${block.model}` : 'Agent'),
          h('div', { class: 'text' }, this.markdown(item.key, block.content, block.completedAt === undefined)),
          block.completedAt === undefined ? null : this.history.actionsFor(block, inThread),
        );
      case 'thinking':
        return this.thinking(block, attributes);
      case 'tool_use':
        return this.toolCall(block, item.result, attributes);
      case 'tool_result':
        return h(
          'div',
          { ...attributes, class: `block tool-result${block.isError ? ' error' : ''}` },
          h('span', { class: 'muted' }, '↳ '),
          oneLine(block.content, 200) || '(empty)',
        );
      case 'system': {
        const line = systemLine(block, attributes);
        const actions = this.history.actionsFor(block, inThread);
        if (actions) line.append(actions);
        return line;
      }
      case 'subagent':
        return this.worker(block, item.thread ?? [], attributes);
    }
  }

  /**
   * A text as Markdown. A streaming text keeps its view (its finished blocks stay rendered) until it
   * completes; a finished one gets a view of its own, rendered once.
   */
  private markdown(key: string, text: string, streaming: boolean, options: MarkdownOptions = {}): HTMLElement {
    let view = this.live.get(key);
    if (!view) {
      view = new MarkdownView(options);
      if (streaming) this.live.set(key, view);
    } else if (!streaming) {
      this.live.delete(key);
    }
    view.update(text, !streaming);
    return view.element;
  }

  /** `<details>` that remember being opened (or, with `openByDefault`, closed) across re-renders. */
  private details(
    key: string,
    summary: HTMLElement,
    body: HTMLElement[],
    attributes: Record<string, string>,
    className: string,
    openByDefault = false,
  ): HTMLElement {
    const remembered = openByDefault ? this.closed : this.open;
    const details = h(
      'details',
      { ...attributes, class: className, open: openByDefault !== remembered.has(key) },
      summary,
      ...body,
    );
    details.addEventListener('toggle', () => {
      if (details.open === openByDefault) remembered.delete(key);
      else remembered.add(key);
    });
    return details;
  }

  private thinking(block: ThinkingBlock, attributes: Record<string, string>): HTMLElement {
    const live = block.completedAt === undefined;
    const words = wordCount(block.content);
    const summary = block.redacted ? 'hidden by the model' : plural(words, 'word');
    return this.details(
      block.id,
      h(
        'summary',
        {},
        h('span', { class: 'glyph' }, '✻'),
        ` ${live ? 'Thinking…' : 'Thought'} `,
        h('span', { class: 'muted' }, `(${summary})`),
      ),
      block.redacted ? [] : [h('div', { class: 'text thinking-text' }, this.markdown(block.id, block.content, live))],
      attributes,
      `block thinking${live ? ' live' : ''}`,
    );
  }

  private toolCall(
    block: ToolUseBlock,
    result: ToolResultBlock | undefined,
    attributes: Record<string, string>,
  ): HTMLElement {
    const status = result?.isError && block.status === 'success' ? 'error' : block.status;
    const edit = fileEditOf(block, result);
    const command = edit ? undefined : commandOf(block, result);
    const body: HTMLElement[] = [];
    if (edit) body.push(fileEditElement(edit));
    else if (command) body.push(commandElement(command));
    else body.push(h('div', { class: 'label muted' }, 'Input'), h('pre', {}, prettyJson(block.input)));
    if (block.error) body.push(h('div', { class: 'error-text' }, block.error));
    // A command's output is in its terminal block; an edit's result is only worth showing when it failed.
    if (result && !command && (!edit || result.isError)) {
      const content = result.content || '(empty)';
      const shown =
        result.isError || VERBATIM_RESULT_TOOLS.has(block.name)
          ? h('pre', { class: result.isError ? 'error-text' : '' }, content)
          : h('div', { class: 'text tool-result-text' }, this.markdown(`${block.id}:result`, content, false));
      body.push(h('div', { class: 'label muted' }, result.isError ? 'Result (error)' : 'Result'), shown);
    }
    const summary = h(
      'summary',
      {},
      h('span', { class: `status status-${status}`, 'data-status': status, title: status }, STATUS_GLYPH[status]),
      ' ',
      h('strong', {}, block.name),
      h(
        'span',
        { class: 'muted' },
        ` ${edit ? `${edit.path} (+${edit.added} −${edit.removed})` : command ? oneLine(command.command, 90) : describeInput(block.input, 90)}`,
      ),
      result
        ? h(
            'div',
            { class: `result-line${result.isError ? ' error-text' : ' muted'}` },
            `↳ ${oneLine(result.content, 140) || '(empty)'}`,
          )
        : null,
    );
    return this.details(
      block.id,
      summary,
      body,
      { ...attributes, 'data-status': status },
      `block tool status-${status}${edit ? ' edit' : command ? ' command' : ''}`,
      edit !== undefined || command !== undefined,
    );
  }

  private worker(block: SubagentBlock, thread: ChatItem[], attributes: Record<string, string>): HTMLElement {
    const cost = block.costUsd !== undefined ? ` · ${formatCost(block.costUsd)}` : '';
    const summary = h(
      'summary',
      {},
      h('span', { class: `status status-${block.status}`, 'data-status': block.status }, STATUS_GLYPH[block.status]),
      ' ',
      h('strong', {}, block.name),
      h('span', { class: 'muted' }, ` · ${plural(thread.length, 'block')}${cost}`),
      h('div', { class: 'muted small' }, oneLine(block.input, 160)),
    );
    const inner = new Map<string, { signature: unknown[]; element: HTMLElement }>();
    const body = h(
      'div',
      { class: 'thread', 'data-thread-id': block.subagentId },
      thread.map((entry) => this.elementFor(entry, inner, true)),
    );
    const parts: HTMLElement[] = [body];
    // A conversation between agents (src/draft/conversations.ts) takes a note from the user while it is open.
    if (block.name.startsWith(CONVERSATION_PREFIX) && block.status === 'running')
      parts.push(this.noteForm(block.subagentId, block.name.slice(CONVERSATION_PREFIX.length)));
    else this.noteForms.delete(block.subagentId);
    if (block.output)
      parts.push(
        h(
          'div',
          { class: 'worker-output' },
          h('div', { class: 'label muted' }, 'Answer'),
          h('div', { class: 'text' }, this.markdown(`${block.id}:output`, block.output, false)),
        ),
      );
    return this.details(
      `thread:${block.subagentId}`,
      summary,
      parts,
      { ...attributes, 'data-status': block.status },
      `block worker status-${block.status}`,
    );
  }

  /** The field and button that send `say_in_conversation`; the server's refusal shows under them. */
  private noteForm(conversationId: string, role: string): HTMLFormElement {
    const existing = this.noteForms.get(conversationId);
    if (existing) return existing;
    const input = h('input', {
      type: 'text',
      'aria-label': `Note to both agents (the parent and ${role})`,
      placeholder: 'A note both agents read with the next message',
      'data-testid': 'conversation-note',
    });
    const button = h('button', { type: 'submit', 'data-testid': 'conversation-note-send' }, 'Say to both agents');
    const error = h('p', { class: 'error-text small', role: 'alert', 'data-testid': 'conversation-note-error' });
    error.hidden = true;
    const form = h(
      'form',
      {
        class: 'conversation-note',
        onsubmit: (event: Event) => {
          event.preventDefault();
          const message = input.value;
          if (message.trim() === '') return;
          button.disabled = true;
          void this.actions.sayInConversation(conversationId, message).then((refused) => {
            button.disabled = false;
            error.hidden = refused === undefined;
            error.textContent = refused ?? '';
            if (refused === undefined && input.value === message) input.value = '';
          });
        },
      },
      input,
      button,
      error,
    );
    this.noteForms.set(conversationId, form);
    return form;
  }
}

/** What sending a first message does, as the prompt box's placeholder. */
function firstMessagePlaceholder(first: FirstMessageTarget): string {
  return first.task !== undefined
    ? `Type a first message: Parley drafts ${first.role} on task ${first.task} (Enter sends)`
    : `Type a first message: Parley creates a task and drafts ${first.role} (Enter sends)`;
}

/** Characters above which a pasted message shows its start and a button for the rest. */
const CLAMP_CHARS = 1_200;

function clampedText(content: HTMLElement, length: number): HTMLElement {
  const text = h('div', { class: 'text' }, content);
  if (length <= CLAMP_CHARS) return text;
  text.classList.add('clamped');
  const toggle = h('button', { type: 'button', class: 'link' }, `Show all (${formatCount(length)} characters)`);
  toggle.addEventListener('click', () => {
    const clamped = text.classList.toggle('clamped');
    toggle.textContent = clamped ? `Show all (${formatCount(length)} characters)` : 'Show less';
  });
  return h('div', {}, text, toggle);
}

function systemLine(block: SystemBlock, attributes: Record<string, string>): HTMLElement {
  const glyphs: Partial<Record<SystemBlock['subtype'], string>> = {
    compaction: '⟳',
    cleared: '⌫',
    error: '✗',
    interrupted: '⏸',
    aborted: '⏹',
    session_start: '▸',
    subagent_start: '↳',
    subagent_end: '↲',
  };
  const tone =
    block.subtype === 'error'
      ? ' error'
      : block.subtype === 'interrupted' || block.subtype === 'aborted'
        ? ' warning'
        : '';
  return h(
    'div',
    { ...attributes, class: `block system subtype-${block.subtype}${tone}`, 'data-subtype': block.subtype },
    h('span', { class: 'glyph' }, glyphs[block.subtype] ?? '•'),
    ' ',
    block.content || block.subtype,
  );
}

/** What an item's element depends on: its block, its result and (recursively) its thread's blocks. */
function signatureOf(item: ChatItem): unknown[] {
  const signature: unknown[] = [item.block, item.result];
  if (item.thread) for (const entry of item.thread) signature.push(...signatureOf(entry));
  return signature;
}

function sameSignature(a: unknown[], b: unknown[]): boolean {
  return a.length === b.length && a.every((value, index) => value === b[index]);
}

/**
 * An image the user pasted (kept in an imported prompt's `metadata.attachments`): a button that
 * shows it only when clicked, as a Markdown image placeholder does. Its data is in the block, so
 * nothing is fetched; any other attachment is named with its size.
 */
function attachmentButtons(attachments: unknown): HTMLElement[] {
  if (!Array.isArray(attachments)) return [];
  const buttons: HTMLElement[] = [];
  for (const attachment of attachments as Array<Record<string, unknown>>) {
    const mediaType = typeof attachment['mediaType'] === 'string' ? attachment['mediaType'] : '';
    const data = typeof attachment['data'] === 'string' ? attachment['data'] : undefined;
    const size = typeof attachment['bytes'] === 'number' ? ` ${Math.ceil(attachment['bytes'] / 1024)} KiB` : '';
    if (attachment['type'] !== 'image' || data === undefined || !/^image\/(png|jpeg|gif|webp)$/.test(mediaType))
      continue;
    const button = h(
      'button',
      {
        type: 'button',
        class: 'md-image attachment-image',
        onclick: () => {
          const image = document.createElement('img');
          image.alt = `pasted ${mediaType}`;
          image.className = 'md-loaded-image';
          image.src = `data:${mediaType};base64,${data}`;
          button.replaceWith(image);
        },
      },
      `Load image: ${mediaType}${size}`,
    );
    buttons.push(button);
  }
  return buttons;
}

function samePlace(a: SessionView['place'], b: SessionView['place']): boolean {
  return a?.atStart === b?.atStart && a?.atTail === b?.atTail && a?.loading === b?.loading;
}
