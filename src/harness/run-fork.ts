import type { RunJournalEntry, RunRecord } from '../store/index.js';
import { HarnessError, truncate } from './errors.js';
import { describeStep, JournalStepSchema, type JournalStep } from './run-journal.js';
import { pickChoice } from './user-prompts.js';

/** Where `forkRun` cuts the source run's journal, and what the fork answers there. */
export interface ForkRunOptions {
  /**
   * The last journal step (its `seq`, from 0) the fork replays; the run goes on live after it.
   * A step that starts an agent turn keeps the turn's result, which is journaled with it.
   */
  atStep: number;
  /**
   * The answer the fork gives the question at `atStep` in place of the one journaled: the step is
   * the question (`prompt`), its answer (`reply`) or its timeout. The answer goes through the
   * question's choices and validator as a live answer does.
   */
  answer?: string;
}

/** An agent session the fork's journal names: the fork gets its own, cut after `turns` turns. */
export interface ForkedAgentSession {
  /** The position of its `session` step in the fork's journal. */
  position: number;
  agent: string;
  sessionId: string;
  /** The agent's turns on the session that the fork replays. */
  turns: number;
}

/** The fork of a run's journal: the entries to replay, the sessions to fork, and the question to answer. */
export interface RunForkPlan {
  entries: Array<{ kind: string; data: Record<string, unknown> }>;
  sessions: ForkedAgentSession[];
  /** The question the fork answers once its replay ends, with `answer`. */
  answer?: { promptId: string; content: string };
}

/**
 * Plans the fork of `source` at `options.atStep`: every check is made here, before anything is
 * written, so a refused fork changes nothing. A question the fork leaves open gets its whole
 * timeout again from `now`: its journaled deadline belongs to the source's time.
 */
export function planRunFork(
  source: RunRecord,
  journal: readonly RunJournalEntry[],
  options: ForkRunOptions,
  now: number,
): RunForkPlan {
  const steps = journal.map((entry) => parseStep(source.id, entry));
  const at = options.atStep;
  if (!Number.isInteger(at) || at < 0 || at >= steps.length) {
    throw new HarnessError(
      'RUN_STEP_NOT_FOUND',
      steps.length === 0
        ? `Run ${source.id} has no journal steps yet, so it cannot be forked at step ${String(at)}.`
        : `Run ${source.id} has no step ${String(at)}: its journal holds steps 0 to ${steps.length - 1}. Give a whole number in that range.${questionsOf(steps)}`,
      { fault: 'user', data: { runId: source.id, atStep: at, journalLength: steps.length } },
    );
  }
  const chosen = steps[at]!;
  let through = at;
  let answer: RunForkPlan['answer'];
  if (options.answer !== undefined) {
    if (chosen.kind !== 'prompt' && chosen.kind !== 'reply' && chosen.kind !== 'timeout') {
      throw new HarnessError(
        'NOT_A_QUESTION',
        `Step ${at} of run ${source.id} is ${describeStep(chosen)}, not a question: an answer replaces the reply to a question. Give the step of a question (its prompt, reply or timeout), or leave the answer out.${questionsOf(steps)}`,
        { fault: 'user', data: { runId: source.id, atStep: at, kind: chosen.kind } },
      );
    }
    const prompt = steps.find(
      (step): step is Extract<JournalStep, { kind: 'prompt' }> =>
        step.kind === 'prompt' && step.promptId === chosen.promptId,
    );
    if (prompt?.choices && pickChoice(prompt.choices, options.answer) === undefined) {
      throw new HarnessError(
        'ANSWER_REFUSED',
        `"${truncate(options.answer, 60)}" is not one of the choices of ${describeStep(prompt)} (${prompt.choices.join(', ')}). Answer with one of them or its number.`,
        { fault: 'user', data: { runId: source.id, atStep: at, choices: prompt.choices } },
      );
    }
    // The fork keeps the question and leaves out how the source's ended.
    if (chosen.kind !== 'prompt') through = at - 1;
    answer = { promptId: chosen.promptId, content: options.answer };
  } else if (chosen.kind === 'turn-start') {
    const next = steps[at + 1];
    if (next?.kind === 'turn' && next.agent === chosen.agent && next.turn === chosen.turn) through = at + 1;
  }

  const kept = steps.slice(0, through + 1);
  const ended = new Set(
    kept.flatMap((step) => (step.kind === 'reply' || step.kind === 'timeout' ? [step.promptId] : [])),
  );
  const sessions: ForkedAgentSession[] = [];
  const entries: RunForkPlan['entries'] = [];
  const open = new Map<string, ForkedAgentSession>();
  for (const step of kept) {
    if (step.kind === 'session') {
      const session = { position: entries.length, agent: step.agent, sessionId: step.sessionId, turns: 0 };
      open.set(step.agent, session);
      sessions.push(session);
    } else if (step.kind === 'turn') {
      const session = open.get(step.agent);
      if (session) session.turns += 1;
    }
    entries.push(entryOf(reopened(step, ended, now)));
  }
  return { entries, sessions, ...(answer ? { answer } : {}) };
}

/** The run's questions by step, so a refused fork says where the questions are. */
function questionsOf(steps: readonly JournalStep[]): string {
  const questions = steps.flatMap((step, index) =>
    step.kind === 'prompt' ? [`step ${index}: ${describeStep(step)}`] : [],
  );
  return questions.length === 0 ? ' The run asked no question.' : ` Its questions: ${questions.join('; ')}.`;
}

function parseStep(runId: string, entry: RunJournalEntry): JournalStep {
  const parsed = JournalStepSchema.safeParse({ ...(entry.data as object), kind: entry.kind });
  if (parsed.success) return parsed.data;
  throw new HarnessError(
    'INVALID_JOURNAL',
    `Entry ${entry.seq} of run ${runId}'s journal is not a step this Parley knows, so the run cannot be forked.`,
    { fault: 'system', data: { runId, seq: entry.seq } },
  );
}

/** A question the fork leaves open is asked again now, with the time it had. */
function reopened(step: JournalStep, ended: ReadonlySet<string>, now: number): JournalStep {
  if (step.kind !== 'prompt' || ended.has(step.promptId)) return step;
  return {
    ...step,
    askedAt: now,
    ...(step.deadline !== undefined ? { deadline: now + (step.deadline - step.askedAt) } : {}),
  };
}

function entryOf(step: JournalStep): { kind: string; data: Record<string, unknown> } {
  const { kind, ...data } = step;
  return { kind, data };
}
