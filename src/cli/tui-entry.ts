/**
 * What `parley`'s TUI loads before its first frame: the UI and the protocol client, in one module so
 * `npm run build` can bundle them (scripts/build-tui.mjs) into one file with Ink and React. Loading
 * ~730 ES modules one by one was most of the TUI's start-up; one bundled file parses in a third of
 * the time. The protocol comes from the same module as the UI so the client's errors are the
 * classes the UI tests with `instanceof` (a second copy of protocol/ would not match).
 */
export { runTui } from '../ui/tui/index.js';
export * as protocol from '../protocol/index.js';
