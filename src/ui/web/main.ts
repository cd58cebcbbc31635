import { PendingApprovals, ProtocolClient, webSocketTransport } from '../../protocol/index.js';
import { AppView } from './app-view.js';
import { linkOf, type PageLink } from './links.js';
import { deviceName, redeemPairing } from './pairing.js';
import { Controller, type Actions } from './controller.js';
import { prepareMarkdown } from './markdown/markdown-view.js';
import { REHEARSAL_STEPS } from './rehearsal.js';
import { initialState } from './state.js';
import { Store } from './store.js';
import { ApprovalDialog } from './views/approval-dialog.js';
import { rpcUrlFor, tokenFromSearch, withoutToken } from './view-model.js';
import { RunsView } from './views/runs-view.js';
import { SchedulesView } from './views/schedules-view.js';
import { AttentionNotifications, browserAttentionEnvironment } from './attention.js';

/** The browser entry (bundled into dist/web/app.js by scripts/build-web.mjs). */

const TOKEN_KEY = 'parley.token';
const CHANNEL_KEY = 'parley.channel';
/** A paired device's own token (`parley pair`): kept across browser restarts, as an installed web app needs. */
const DEVICE_KEY = 'parley.device';

async function boot(): Promise<void> {
  const root = document.getElementById('app');
  if (!root) throw new Error('The page has no #app element.');
  // A `parley pair` link: its code is traded for this device's token, and leaves the address bar at once.
  let pairingError: string | undefined;
  const opened = linkOf(location.hash);
  if (opened?.kind === 'pair') {
    history.replaceState(history.state, '', `${location.pathname}${location.search}`);
    try {
      const paired = await redeemPairing(opened.code, deviceName(navigator.userAgent));
      localStorage.setItem(DEVICE_KEY, paired.token);
      sessionStorage.removeItem(TOKEN_KEY);
    } catch (error) {
      pairingError = error instanceof Error ? error.message : String(error);
    }
  }
  // The token moves from the address bar to this tab's storage: it does not stay in the history,
  // a bookmark or a screen share, and a reload still connects.
  const fromUrl = tokenFromSearch(location.search);
  if (fromUrl) {
    sessionStorage.setItem(TOKEN_KEY, fromUrl);
    history.replaceState(history.state, '', withoutToken(location.href));
  }
  const token = fromUrl ?? sessionStorage.getItem(TOKEN_KEY) ?? localStorage.getItem(DEVICE_KEY) ?? undefined;
  const store = new Store({
    ...initialState(token ? 'present' : 'missing'),
    ...(pairingError !== undefined ? { connectError: pairingError } : {}),
  });
  const onToken = (value: string) => {
    sessionStorage.setItem(TOKEN_KEY, value);
    location.reload();
  };
  if (!token) {
    const view = new AppView(root, { actions: inertActions, origin: location.origin, onToken });
    view.render(store.state);
    return;
  }
  const channel = sessionStorage.getItem(CHANNEL_KEY) ?? undefined;
  const client = new ProtocolClient({
    transport: webSocketTransport({ url: rpcUrlFor(location), token, ...(channel ? { channel } : {}) }),
  });
  // The same channel after a reload: a draft made in this tab comes back with it.
  const controller = new Controller({
    client,
    store,
    onChannel: (id) => sessionStorage.setItem(CHANNEL_KEY, id),
    afterPaint,
  });
  const runs = new RunsView(client, (sessionId) => controller.select(sessionId));
  const schedules = new SchedulesView(client, {
    openSession: (sessionId) => controller.select(sessionId),
    openRun: (runId) => runs.focus(runId),
  });
  const view = new AppView(root, { actions: controller, origin: location.origin, onToken, runs, schedules });
  store.subscribe((state) => view.render(state));
  view.render(store.state);
  runs.start();
  schedules.start();
  // Approval requests of the workspace tools, every channel's (whatever window or device asked for
  // the draft, this person answers it): a modal over the page, whatever it shows; one a link named first.
  const approvals = new PendingApprovals(client, { all: true });
  let wantedApproval: string | undefined;
  const dialog = new ApprovalDialog((requestId, decision) => void approvals.answer(requestId, decision));
  document.body.append(dialog.element);
  const showApprovals = () => {
    const state = approvals.getState();
    const wanted = state.requests.find((request) => request.requestId === wantedApproval);
    dialog.update(
      wanted ? { ...state, requests: [wanted, ...state.requests.filter((each) => each !== wanted)] } : state,
    );
  };
  approvals.subscribe(showApprovals);
  approvals.start();
  void controller.start();
  // What waits for the person: a system notification while this tab is hidden, and a link's fragment opened.
  new AttentionNotifications({
    client,
    environment: browserAttentionEnvironment(),
    openSession: (sessionId) => controller.select(sessionId),
  }).start();
  // A notification's link (`#approval=…`, `#run=…`, `#session=…`) opens at what waits, now and when the fragment changes.
  const follow = (link: PageLink | undefined) => {
    if (link?.kind === 'session') controller.select(link.sessionId);
    else if (link?.kind === 'run') runs.focus(link.runId);
    else if (link?.kind === 'schedule') schedules.toggle(true);
    else if (link?.kind === 'approval') {
      wantedApproval = link.requestId;
      showApprovals();
    }
  };
  follow(linkOf(location.hash));
  window.addEventListener('hashchange', () => follow(linkOf(location.hash)));
  // The first session opened should not pay for the start-up of the Markdown renderer and of the
  // draw code: both run once on a sample while the page is idle, unless a session is open already.
  warmUp([prepareMarkdown, ...REHEARSAL_STEPS], () => store.state.selectedId === undefined);
}

/** The mark `warmUp` leaves in the page's performance timeline when it is done (the web bench waits for it). */
const WARM_MARK = 'parley:warm';

/**
 * Runs `steps` one per idle slice while `wanted()` holds, then marks the timeline with `WARM_MARK`.
 * A page without idle callbacks skips them: they only save time, they change nothing shown.
 */
function warmUp(steps: ReadonlyArray<() => void>, wanted: () => boolean): void {
  if (typeof requestIdleCallback !== 'function') return;
  const next = (index: number) => {
    if (index >= steps.length || !wanted()) {
      performance.mark(WARM_MARK);
      return;
    }
    requestIdleCallback(
      () => {
        if (wanted()) steps[index]!();
        next(index + 1);
      },
      { timeout: 2_000 },
    );
  };
  next(0);
}

/**
 * Resolves after the next frame has been produced (a frame callback, then a task after it), or
 * after 250 ms in a hidden tab, which gets no frames.
 */
function afterPaint(): Promise<void> {
  return new Promise((resolve) => {
    const fallback = setTimeout(resolve, 250);
    requestAnimationFrame(() =>
      setTimeout(() => {
        clearTimeout(fallback);
        resolve();
      }, 0),
    );
  });
}

/** Without a token only the connect help shows, and it asks nothing of the server. */
const inertActions = new Proxy({}, { get: () => () => undefined }) as Actions;

void boot();
