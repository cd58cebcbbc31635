/**
 * The web UI: a page served by `parley serve` (dist/web, built by scripts/build-web.mjs) that talks
 * to the server over the same JSON-RPC WebSocket protocol as the TUI and rebuilds conversations
 * with `applyEvent` from `conversation/`. The browser entry is `main.ts`; what is exported here is
 * the pure part (state, reducer, view model), usable and tested without a browser.
 */
export * from './view-model.js';
export * from './format.js';
export * from './history-model.js';
export {
  reduce,
  initialState,
  emptyView,
  foldHistory,
  HistoryFold,
  canPrompt,
  selectedSession,
  firstMessageTarget,
  type FirstMessageTarget,
  type FoldedHistory,
  type AppState,
  type AppAction,
  type SessionView,
  type CheckpointData,
  type RequestPane,
  type Notice,
} from './state.js';
