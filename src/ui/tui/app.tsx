import { Box, Static, Text, useStdout } from 'ink';
import { useCallback, useEffect, useRef, useState, useSyncExternalStore } from 'react';
import type { ProtocolClient } from '../../protocol/index.js';
import { ApprovalPrompt } from './components/approval-prompt.js';
import { DialogView } from './components/dialog-view.js';
import { HistoryItemView } from './components/block-view.js';
import { LiveArea } from './components/live-area.js';
import { Prompt } from './components/prompt.js';
import { RunQuestion } from './components/run-question.js';
import { TitleBar, titleText } from './components/title-bar.js';
import { useApprovals } from './use-approvals.js';
import { useNow, useParley } from './use-parley.js';
import type { NoteLine } from './view-state.js';

export interface AppProps {
  client: ProtocolClient;
  /** `/quit` or Ctrl+C on an empty line. */
  onExit: () => void;
  /** Printed first (which project, how to get help). */
  banner?: NoteLine[];
  /** One line to show once it is known (e.g. that the scripted back end answers, and how to configure a real one). */
  notice?: string;
  /** Milliseconds since the epoch (injectable for tests). */
  clock?: () => number;
  /** Finished blocks printed when a draft's history loads (default 400). */
  historyLimit?: number;
  /** Also set the terminal window's title to the title bar's text. */
  setTerminalTitle?: boolean;
  /** How often spinners move (default 100 ms). */
  tickMs?: number;
  /** Waits between failed first connections. */
  retryDelayMs?: (attempt: number) => number;
}

/** Rows kept for the chrome under the live area: separator, title bar, prompt (two rows), candidates. */
const CHROME_ROWS = 5;

/**
 * Parley's terminal UI. Finished history goes into Ink's `<Static>`, written once into the
 * terminal's own scrollback; only the live area (blocks in flight, workers, spinners) and the
 * chrome (title bar, prompt) re-render.
 */
export function App(props: AppProps) {
  const clock = props.clock ?? Date.now;
  const { state, controller } = useParley({
    client: props.client,
    onExit: props.onExit,
    clock,
    ...(props.banner ? { banner: props.banner } : {}),
    ...(props.historyLimit !== undefined ? { historyLimit: props.historyLimit } : {}),
    ...(props.retryDelayMs ? { retryDelayMs: props.retryDelayMs } : {}),
  });
  const { approvals, pending } = useApprovals(props.client);
  const dialogs = useSyncExternalStore(controller.dialogs.subscribe, controller.dialogs.getState);
  const asking = approvals.requests.length > 0;
  const choosing = dialogs.open !== undefined;
  const { stdout } = useStdout();
  const size = useTerminalSize(stdout);

  const shownNotice = useRef<string | undefined>(undefined);
  useEffect(() => {
    if (props.notice === undefined || props.notice === shownNotice.current) return;
    shownNotice.current = props.notice;
    controller.dispatch({ type: 'note', lines: [{ text: props.notice, tone: 'warning' }] });
  }, [props.notice, controller]);

  const busy = state.activities.length > 0 || state.turn !== undefined || state.open.length > 0;
  const now = useNow(busy, props.tickMs ?? 100, clock);
  const runQuestions = useSyncExternalStore(controller.runs.subscribe, controller.runs.getState);
  // A question with a deadline counts down by the second.
  const questionNow = useNow(
    runQuestions.questions.some((question) => question.prompt.deadline !== undefined),
    1_000,
    clock,
  );

  const openRewind = useCallback(() => void controller.openRewind(), [controller]);
  const title = titleText(state);
  useEffect(() => {
    if (props.setTerminalTitle && stdout.isTTY) stdout.write(`\u001b]2;${title}\u0007`);
  }, [title, props.setTerminalTitle, stdout]);

  const width = Math.max(20, size.columns);
  // Never taller than the screen: past that, Ink clears the terminal and redraws all history each frame.
  const shownQuestion = runQuestions.enabled ? runQuestions.questions[0] : undefined;
  const questionRows = shownQuestion ? (shownQuestion.prompt.choices ? 4 : 3) : 0;
  const liveRows = Math.max(3, size.rows - CHROME_ROWS - questionRows - 1);
  return (
    <>
      <Static items={state.printed}>{(item) => <HistoryItemView key={item.key} item={item} width={width} />}</Static>
      <LiveArea
        state={state}
        now={now}
        width={width}
        maxRows={asking || choosing ? Math.max(3, Math.floor(liveRows / 3)) : liveRows}
      />
      <RunQuestion questions={runQuestions} now={Math.max(now, questionNow)} width={width} />
      {asking ? null : (
        <DialogView
          dialogs={dialogs}
          onChoose={controller.dialogs.choose}
          onExit={props.onExit}
          width={width}
          maxRows={Math.max(3, liveRows - 8)}
        />
      )}
      <ApprovalPrompt
        approvals={approvals}
        onAnswer={(requestId, decision) => void pending.answer(requestId, decision)}
        onExit={props.onExit}
        width={width}
        maxDiffRows={Math.max(3, liveRows - Math.floor(liveRows / 3) - 6)}
      />
      <Box flexDirection="column" marginTop={1}>
        <Text color="gray">{'─'.repeat(Math.max(1, width - 1))}</Text>
        <TitleBar state={state} />
        <Prompt
          onSubmit={(line) => void controller.submit(line)}
          onInterrupt={() => {
            if (!controller.getState().turn) return false;
            void controller.interrupt();
            return true;
          }}
          onExit={props.onExit}
          onToggleDetails={() => controller.dispatch({ type: 'toggle_expanded' })}
          sources={{ roles: state.roles, tasks: state.tasks, projects: state.projects }}
          width={width}
          active={!asking && !choosing}
          onRewind={openRewind}
          {...(state.prefill ? { prefill: state.prefill } : {})}
        />
      </Box>
    </>
  );
}

function useTerminalSize(stdout: NodeJS.WriteStream): { columns: number; rows: number } {
  const read = () => ({ columns: stdout.columns || 80, rows: stdout.rows || 24 });
  const [size, setSize] = useState(read);
  useEffect(() => {
    const onResize = () => setSize(read());
    stdout.on('resize', onResize);
    return () => {
      stdout.off('resize', onResize);
    };
  }, [stdout]);
  return size;
}
