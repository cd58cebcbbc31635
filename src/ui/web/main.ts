import { PendingApprovals, ProtocolClient, webSocketTransport } from '../../protocol/index.js';
import { AppView } from './app-view.js';
import { Controller, type Actions } from './controller.js';
import { prepareMarkdown } from './markdown/markdown-view.js';
import { initialState } from './state.js';
import { Store } from './store.js';
import { ApprovalDialog } from './views/approval-dialog.js';
import { rpcUrlFor, tokenFromSearch, withoutToken } from './view-model.js';
import { RunsView } from './views/runs-view.js';

/** The browser entry (bundled into dist/web/app.js by scripts/build-web.mjs). */

const TOKEN_KEY = 'parley.token';
const CHANNEL_KEY = 'parley.channel';

function boot(): void {
  const root = document.getElementById('app');
  if (!root) throw new Error('The page has no #app element.');
  // The token moves from the address bar to this tab's storage: it does not stay in the history,
  // a bookmark or a screen share, and a reload still connects.
  const fromUrl = tokenFromSearch(location.search);
  if (fromUrl) {
    sessionStorage.setItem(TOKEN_KEY, fromUrl);
    history.replaceState(history.state, '', withoutToken(location.href));
  }
  const token = fromUrl ?? sessionStorage.getItem(TOKEN_KEY) ?? undefined;
  const store = new Store(initialState(token ? 'present' : 'missing'));
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
  const controller = new Controller({ client, store, onChannel: (id) => sessionStorage.setItem(CHANNEL_KEY, id), afterPaint });
  const runs = new RunsView(client, (sessionId) => controller.select(sessionId));
  const view = new AppView(root, { actions: controller, origin: location.origin, onToken, runs });
  store.subscribe((state) => view.render(state));
  view.render(store.state);
  runs.start();
  // Approval requests of the workspace tools: a modal over the page, whatever it shows.
  const approvals = new PendingApprovals(client);
  const dialog = new ApprovalDialog((requestId, decision) => void approvals.answer(requestId, decision));
  document.body.append(dialog.element);
  approvals.subscribe(() => dialog.update(approvals.getState()));
  approvals.start();
  void controller.start();
  // The first session opened should not pay for the Markdown renderer's start-up: do it while idle.
  if (typeof requestIdleCallback === 'function') requestIdleCallback(() => prepareMarkdown(), { timeout: 2_000 });
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

boot();
