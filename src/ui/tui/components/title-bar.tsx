import { Text } from 'ink';
import type { ConnectionState, GoalStatus } from '../../../protocol/index.js';
import { formatCost, formatPercent } from '../format.js';
import { activeWorkers, contextLevel, type ViewState } from '../view-state.js';

const CONNECTION: Record<ConnectionState, { dot: string; word: string; color: string }> = {
  connected: { dot: '●', word: 'Connected', color: 'green' },
  connecting: { dot: '●', word: 'Connecting', color: 'yellow' },
  reconnecting: { dot: '●', word: 'Reconnecting', color: 'yellow' },
  disconnected: { dot: '○', word: 'Disconnected', color: 'red' },
};

const LEVEL_COLOR = { normal: undefined, warning: 'yellow', critical: 'red' } as const;

/**
 * Seed 000's title bar, as text: `Parley ● Connected | Draft: dev | Context: 34% | Turns: 5 | $0.23`
 * with a draft, `Parley ● Connected | No draft | Agents: 0` without. Also the terminal's title.
 */
export function titleText(state: ViewState): string {
  const connection = CONNECTION[state.connection];
  const head = `Parley ${connection.dot} ${connection.word}`;
  const draft = state.draft;
  if (!draft) return `${head} | No draft | Agents: ${activeWorkers(state).length}`;
  return `${head} | Draft: ${draft.role} | Context: ${formatPercent(draft.contextPct)} | Turns: ${draft.turnCount} | ${formatCost(draft.costUsd, draft.costUnknown)}${goalText(draft.goal)}`;
}

/** ` | Goal: tests pass 2/10 turns, $0.12/$1.00` while a goal runs; ` | Goal met` (or why it stopped) once it ended. */
export function goalText(goal: GoalStatus | undefined): string {
  if (!goal) return '';
  const condition = goal.condition.length > 40 ? `${goal.condition.slice(0, 39)}…` : goal.condition;
  if (goal.ended)
    return ` | Goal ${goal.ended.reason === 'met' ? 'met' : `stopped (${goal.ended.reason})`}: ${condition}`;
  const { used, budget } = goal;
  const cost = budget.costUsd !== undefined ? `, $${used.costUsd.toFixed(2)}/$${budget.costUsd.toFixed(2)}` : '';
  return ` | Goal: ${condition} ${used.turns}/${budget.turns} turns${cost}`;
}

/** The title bar: the connection dot coloured by state, the context figure by its distance to compaction. */
export function TitleBar({ state }: { state: ViewState }) {
  const connection = CONNECTION[state.connection];
  const draft = state.draft;
  const head = (
    <>
      <Text bold>Parley</Text> <Text color={connection.color}>{connection.dot}</Text> {connection.word}
    </>
  );
  if (!draft) {
    return (
      <Text wrap="truncate-end">
        {head} | No draft | Agents: {activeWorkers(state).length}
      </Text>
    );
  }
  const color = LEVEL_COLOR[contextLevel(draft.contextPct, draft.compactionPct)];
  return (
    <Text wrap="truncate-end">
      {head} | Draft: <Text bold>{draft.role}</Text> | Context:{' '}
      <Text {...(color ? { color, bold: true } : {})}>{formatPercent(draft.contextPct)}</Text> | Turns:{' '}
      {draft.turnCount} | {formatCost(draft.costUsd, draft.costUnknown)}
      {draft.goal ? <Text color={draft.goal.ended ? undefined : 'cyan'}>{goalText(draft.goal)}</Text> : null}
    </Text>
  );
}
