/**
 * Parley's terminal UI (Ink + React): a client of the protocol only. It imports nothing but
 * `protocol/` and `conversation/`; the CLI composes it with a server (`parley`, `parley tui`).
 */
export { App, type AppProps } from './app.js';
export { runTui, type RunTuiOptions, type RunningTui } from './run.js';
export { TuiController, type ControllerOptions } from './controller.js';
export { useParley, useNow } from './use-parley.js';
export {
  COMMANDS,
  complete,
  parseInput,
  suggestCommand,
  helpLines,
  type CommandSpec,
  type Completion,
  type CompletionSources,
  type ParsedInput,
} from './commands.js';
export { titleText, TitleBar } from './components/title-bar.js';
export {
  activeWorkers,
  contextLevel,
  initialViewState,
  openBlocks,
  reduceView,
  type Activity,
  type ContextLevel,
  type DraftView,
  type HistoryItem,
  type NoteLine,
  type Tone,
  type ViewAction,
  type ViewState,
} from './view-state.js';
