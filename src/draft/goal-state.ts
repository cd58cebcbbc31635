import type { GoalStatus } from '../protocol/index.js';
import type { DraftServiceState } from './draft-state.js';

// The goals a draft service holds in memory, by session id: what the session's log says of each,
// plus the loop that drives it (goals.ts). Kept apart so the status (draft-status.ts) reads them
// without depending on the loop.

/** A goal in memory: what the log says, plus the loop that drives it. */
export interface ActiveGoal {
  status: GoalStatus;
  costBefore: number;
  /** The judgements in a row that made no progress. */
  stalled: number;
  /** A person asked it to stop. */
  stopping: boolean;
  /** The judge's last word on what is missing, for the next continuation prompt. */
  lastMissing?: string;
  /** The last command output, to tell progress (a changed output) from none. */
  lastOutput?: string;
  loop?: Promise<void>;
}

const goals = new WeakMap<DraftServiceState, Map<string, ActiveGoal>>();

export function goalsOf(state: DraftServiceState): Map<string, ActiveGoal> {
  let map = goals.get(state);
  if (!map) {
    map = new Map();
    goals.set(state, map);
  }
  return map;
}

/** The goal of a draft's session, running or the last ended one this server saw. */
export function goalOf(state: DraftServiceState, sessionId: string): GoalStatus | undefined {
  const goal = goalsOf(state).get(sessionId);
  return goal ? withUsage(state, goal) : undefined;
}

/** The goal as the wire shows it, its usage computed now (a copy). */
export function withUsage(state: DraftServiceState, goal: ActiveGoal): GoalStatus {
  const draft = [...state.drafts.values()].find((entry) => goalsOf(state).get(entry.session.sessionId) === goal);
  const cost = draft ? Math.max(0, draft.session.cumulativeCostUsd - goal.costBefore) : goal.status.used.costUsd;
  const endAt = goal.status.ended ? Date.parse(goal.status.ended.at) : state.clock();
  goal.status.used = {
    turns: goal.status.used.turns,
    costUsd: cost,
    timeMs: Math.max(0, endAt - Date.parse(goal.status.startedAt)),
  };
  return structuredClone(goal.status);
}
