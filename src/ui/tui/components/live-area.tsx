import { Box, Text } from 'ink';
import type { ConversationBlock } from '../../../conversation/index.js';
import { formatDuration } from '../format.js';
import { openBlocks, threadOf, type ViewState } from '../view-state.js';
import { LiveBlock, spinnerFrame, WorkerThread } from './block-view.js';

/**
 * Everything still in progress, between the history and the prompt: the blocks in flight (cut to
 * fit the screen), running worker threads, and a spinner line per piece of long work with what it
 * is and how long it has run. This is the only part of the screen that re-renders.
 */
export function LiveArea({
  state,
  now,
  width,
  maxRows,
}: {
  state: ViewState;
  now: number;
  width: number;
  maxRows: number;
}) {
  const spinner = spinnerFrame(now);
  const activities = activityLines(state, now);
  const blocks = openBlocks(state);
  const workers = blocks.filter((block) => block.type === 'subagent');
  const others = blocks.filter((block) => block.type !== 'subagent');
  // The spinner lines and the blank row above them.
  let budget = Math.max(2, maxRows - (activities.length > 0 ? activities.length + 1 : 0));
  const perWorker = state.expanded ? 6 : 3;
  const workerRows = Math.min(workers.length * perWorker, Math.floor(budget / 2));
  budget -= workerRows;
  // Blocks before the last one in flight get a line each (plus margin); the last one gets the rest.
  const lastRows = Math.max(2, budget - Math.max(0, others.length - 1) * 2);
  return (
    <Box flexDirection="column">
      {others.map((block, index) => (
        <LiveBlock
          key={block.id}
          block={block}
          expanded={state.expanded}
          width={width}
          maxRows={index === others.length - 1 ? lastRows : 2}
          spinner={spinner}
        />
      ))}
      {workers.map((block) => (
        <WorkerThread
          key={block.id}
          block={block}
          thread={threadOf(state, block.subagentId)}
          cost={state.threadCosts[block.subagentId]}
          expanded={state.expanded}
          width={width}
          now={now}
          spinner={spinner}
          maxRows={Math.max(2, Math.floor(workerRows / Math.max(1, workers.length)))}
        />
      ))}
      {activities.length > 0 ? (
        <Box flexDirection="column" marginTop={1}>
          {activities.map((line) => (
            <Text key={line.id} color={line.tone === 'error' ? 'red' : 'yellow'} wrap="truncate-end">
              {line.tone === 'error' ? '○' : spinner} {line.text}
            </Text>
          ))}
        </Box>
      ) : null}
    </Box>
  );
}

interface ActivityLine {
  id: string;
  text: string;
  tone?: 'error';
}

/** One line per long piece of work: connecting, drafting, compacting, the turn in flight. */
export function activityLines(state: ViewState, now: number): ActivityLine[] {
  const lines: ActivityLine[] = [];
  for (const activity of state.activities) {
    lines.push({ id: activity.id, text: `${activity.label}… ${formatDuration(now - activity.startedAt)}` });
  }
  if (state.connection === 'disconnected' && state.connectionError) {
    lines.push({ id: 'connection-error', text: state.connectionError, tone: 'error' });
  }
  if (state.turn) {
    lines.push({
      id: 'turn',
      text: `${turnLabel(openBlocks(state))}… ${formatDuration(now - state.turn.startedAt)} · Esc interrupts`,
    });
  }
  return lines;
}

function turnLabel(blocks: readonly ConversationBlock[]): string {
  const last = [...blocks].reverse().find((block) => block.type !== 'subagent');
  switch (last?.type) {
    case 'assistant_text':
      return 'Writing';
    case 'thinking':
      return 'Thinking';
    case 'tool_use':
      return `Running ${last.name}`;
    default:
      return 'Waiting for the model';
  }
}
