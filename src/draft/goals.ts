import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { constants as fsConstants, promises as fs } from 'node:fs';
import path from 'node:path';
import * as z from 'zod';
import {
  MAIN_CONVERSATION,
  type ConversationBlock,
  type StreamEvent,
  type UnsequencedEvent,
} from '../conversation/index.js';
import {
  GoalBudgetSchema,
  GoalJudgeSchema,
  type GoalBudget,
  type GoalEndReason,
  type GoalJudge,
  type GoalJudgement,
  type GoalStatus,
} from '../protocol/index.js';
import type { AgentBackend } from '../backends/index.js';
import { resolveBackend } from './draft-backends.js';
import { goalsOf, withUsage, type ActiveGoal } from './goal-state.js';
import { assertOpen, findLast, type ActiveDraft, type DraftServiceState, type RunningTurn } from './draft-state.js';
import { emitStatus } from './draft-status.js';
import { DraftError, invalidInput } from './errors.js';
import { compileOutputSchema } from './structured-output.js';

// Goals: a condition a draft works towards, turn after turn. After each turn a judge (a model or a
// command) says whether the condition holds; if not, the draft goes on with a prompt saying what is
// missing, until the condition is met, the budget is spent, three judgements in a row make no
// progress, or a person stops it. Every step is a system block in the session's log, so a goal
// outlives the server: `resumeGoals` reads the log at start and goes on.

/** Judgements in a row without progress after which a goal stops as stuck. */
export const GOAL_STUCK_AFTER = 3;
const DEFAULT_COMMAND_TIMEOUT_MS = 600_000;
/** What of a judge command's output goes into the continuation prompt. */
const OUTPUT_TAIL_CHARS = 4_000;

export const SetGoalParamsSchema = z.strictObject({
  channelId: z.string().min(1),
  condition: z.string().trim().min(1, 'the goal needs a condition').max(8_000),
  judge: GoalJudgeSchema.default({ kind: 'model' }),
  budget: GoalBudgetSchema,
});
export type SetGoalParams = z.input<typeof SetGoalParamsSchema>;

/** The verdict a model judge answers with. */
export const GoalVerdictSchema = z.strictObject({
  met: z.boolean().describe('true only when the condition holds now'),
  missing: z.string().describe('what is still missing; empty when met'),
  progress: z.boolean().describe('whether the last turn brought the condition closer'),
});

/** The records a goal writes into the session's log, as `data.goal` of `info` system blocks. */
const GoalRecordSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('set'),
    goalId: z.string(),
    condition: z.string(),
    judge: GoalJudgeSchema,
    budget: GoalBudgetSchema,
    startedAt: z.string(),
    /** The draft's cost when the goal was set: the cost budget counts from here. */
    costBefore: z.number().nonnegative(),
  }),
  z.object({
    kind: z.literal('judgement'),
    goalId: z.string(),
    turn: z.number().int().positive(),
    met: z.boolean(),
    missing: z.string(),
    progress: z.boolean(),
    at: z.string(),
  }),
  z.object({
    kind: z.literal('ended'),
    goalId: z.string(),
    reason: z.enum(['met', 'turns', 'cost', 'time', 'stuck', 'stopped', 'error']),
    message: z.string(),
    at: z.string(),
  }),
]);
type GoalRecord = z.infer<typeof GoalRecordSchema>;

/** What starts one turn of a draft and resolves, once it is accepted, with the turn running (draft-turns.ts provides it). */
export type StartTurn = (draft: ActiveDraft, content: string) => Promise<RunningTurn>;

/**
 * Sets a goal on the channel's draft and starts its first turn. Refused, with nothing stored, when
 * the input is wrong: no budget or one of zero, a judge command that cannot be found, a judge back
 * end that does not exist, a goal already running, a turn running.
 */
export async function setGoal(
  state: DraftServiceState,
  params: SetGoalParams,
  startTurn: StartTurn,
): Promise<GoalStatus> {
  assertOpen(state);
  const parsed = SetGoalParamsSchema.safeParse(params);
  if (!parsed.success) throw invalidInput('set_goal', parsed.error.issues);
  const { channelId, condition, judge, budget } = parsed.data;
  const draft = state.drafts.get(channelId);
  if (!draft) {
    throw new DraftError(
      'NO_ACTIVE_DRAFT',
      `Channel "${channelId}" has no active draft to set a goal on. Draft an agent first (/draft <role>).`,
      { fault: 'user', data: { channelId } },
    );
  }
  const running = goalsOf(state).get(draft.session.sessionId);
  if (running?.status.state === 'running') {
    throw new DraftError(
      'GOAL_IN_PROGRESS',
      `The draft on channel "${channelId}" already works towards a goal ("${running.status.condition}"); stop it first (/goal stop).`,
      { fault: 'user', data: { channelId, goalId: running.status.goalId } },
    );
  }
  if (draft.turn) {
    throw new DraftError(
      'TURN_IN_PROGRESS',
      `A turn is still running on channel "${channelId}"; wait for it or cancel it, then set the goal.`,
      { fault: 'user', data: { channelId } },
    );
  }
  await checkJudge(state, draft, judge);
  const now = state.clock();
  const record: GoalRecord = {
    kind: 'set',
    goalId: randomUUID(),
    condition,
    judge,
    budget,
    startedAt: new Date(now).toISOString(),
    costBefore: draft.session.cumulativeCostUsd,
  };
  const goal = fromSetRecord(record);
  goalsOf(state).set(draft.session.sessionId, goal);
  await appendRecord(state, draft.session.sessionId, record, `Goal set: ${condition} (${describeBudget(budget)}).`);
  goal.loop = drive(state, draft, goal, startTurn, firstPrompt(condition));
  emitGoal(state, draft, goal);
  return withUsage(state, goal);
}

/**
 * Stops the channel's goal: a turn running is cancelled (it ends as aborted, its history kept) and
 * the goal ends as stopped. Answers with the goal as it ended.
 */
export async function stopGoal(state: DraftServiceState, params: { channelId: string }): Promise<GoalStatus> {
  assertOpen(state);
  const parsed = z.strictObject({ channelId: z.string().min(1) }).safeParse(params);
  if (!parsed.success) throw invalidInput('stop_goal', parsed.error.issues);
  const draft = state.drafts.get(parsed.data.channelId);
  const goal = draft ? goalsOf(state).get(draft.session.sessionId) : undefined;
  if (!draft || !goal || goal.status.state !== 'running') {
    throw new DraftError('NO_GOAL', `Channel "${parsed.data.channelId}" has no goal running.`, {
      fault: 'user',
      data: { channelId: parsed.data.channelId },
    });
  }
  goal.stopping = true;
  draft.turn?.controller.abort();
  await goal.loop;
  return withUsage(state, goal);
}

/** Resolves once the goal of the channel's draft has ended (or at once without one): tests and `parley goal --wait`. */
export async function goalSettled(state: DraftServiceState, channelId: string): Promise<GoalStatus | undefined> {
  const draft = state.drafts.get(channelId);
  const goal = draft ? goalsOf(state).get(draft.session.sessionId) : undefined;
  await goal?.loop;
  return goal ? withUsage(state, goal) : undefined;
}

/**
 * At start: each recovered draft whose log holds a goal set and not ended goes on with it. A turn
 * the crash cut was closed as interrupted by recovery and has no judgement, so it does not count.
 */
export async function resumeGoals(state: DraftServiceState, startTurn: StartTurn): Promise<number> {
  let resumed = 0;
  for (const draft of state.drafts.values()) {
    const sessionId = draft.session.sessionId;
    if (goalsOf(state).has(sessionId)) continue;
    const conversation = await state.manager.loadConversation(sessionId);
    const goal = goalFromBlocks(conversation.blocks);
    if (!goal) continue;
    goalsOf(state).set(sessionId, goal);
    if (goal.status.state !== 'running') continue;
    resumed += 1;
    const prompt = goal.lastMissing === undefined ? firstPrompt(goal.status.condition) : continuation(goal);
    goal.loop = drive(state, draft, goal, startTurn, prompt, 'resumed');
  }
  return resumed;
}

/** The last goal of a session's blocks, rebuilt from its records. */
export function goalFromBlocks(blocks: readonly ConversationBlock[]): ActiveGoal | undefined {
  const records: GoalRecord[] = [];
  for (const block of blocks) {
    if (block.type !== 'system' || block.subtype !== 'info') continue;
    const data = block.data as { goal?: unknown } | undefined;
    if (data?.goal === undefined) continue;
    const parsed = GoalRecordSchema.safeParse(data.goal);
    if (parsed.success) records.push(parsed.data);
  }
  let goal: ActiveGoal | undefined;
  for (const record of records) {
    if (record.kind === 'set') goal = fromSetRecord(record);
    else if (goal && record.goalId === goal.status.goalId) applyRecord(goal, record);
  }
  return goal;
}

function fromSetRecord(record: Extract<GoalRecord, { kind: 'set' }>): ActiveGoal {
  return {
    status: {
      goalId: record.goalId,
      condition: record.condition,
      judge: record.judge,
      budget: record.budget,
      used: { turns: 0, costUsd: 0, timeMs: 0 },
      startedAt: record.startedAt,
      state: 'running',
      judgements: [],
    },
    costBefore: record.costBefore,
    stalled: 0,
    stopping: false,
  };
}

function applyRecord(goal: ActiveGoal, record: GoalRecord): void {
  if (record.kind === 'judgement') {
    const { kind: _kind, goalId: _goalId, ...judgement } = record;
    goal.status.judgements.push(judgement);
    goal.status.used.turns = judgement.turn;
    goal.stalled = judgement.progress ? 0 : goal.stalled + 1;
    goal.lastMissing = judgement.missing;
  } else if (record.kind === 'ended') {
    goal.status.state = 'ended';
    goal.status.ended = { reason: record.reason, message: record.message, at: record.at };
  }
}

/** The goal's loop: a turn, a judgement, and a check of the budget, until it ends. */
async function drive(
  state: DraftServiceState,
  draft: ActiveDraft,
  goal: ActiveGoal,
  startTurn: StartTurn,
  prompt: string,
  origin: 'set' | 'resumed' = 'set',
): Promise<void> {
  let next = prompt;
  try {
    if (origin === 'resumed') await draft.turn?.done;
    for (;;) {
      const over = overBudget(state, goal);
      if (over) return await end(state, draft, goal, over.reason, over.message);
      if (goal.stopping) return await end(state, draft, goal, 'stopped', 'Stopped by a person.');
      const turn = await startTurn(draft, next);
      await turn.done;
      // The server is shutting down: the goal stays open in the log and the next start resumes it.
      if (state.closed || state.drafts.get(draft.session.channelId) !== draft) return;
      if (goal.stopping || turn.controller.signal.aborted) {
        return await end(state, draft, goal, 'stopped', 'Stopped by a person; the turn running was cancelled.');
      }
      const turnNumber = goal.status.used.turns + 1;
      const verdict = await judge(state, draft, goal);
      if (state.closed) return;
      const record: GoalRecord = {
        kind: 'judgement',
        goalId: goal.status.goalId,
        turn: turnNumber,
        ...verdict,
        at: new Date(state.clock()).toISOString(),
      };
      applyRecord(goal, record);
      await appendRecord(state, draft.session.sessionId, record, judgementLine(record));
      emitGoal(state, draft, goal);
      if (verdict.met) return await end(state, draft, goal, 'met', `The goal is met after ${turnNumber} turn(s).`);
      if (goal.stalled >= GOAL_STUCK_AFTER) {
        return await end(
          state,
          draft,
          goal,
          'stuck',
          `Stuck: ${GOAL_STUCK_AFTER} judgements in a row without progress. Still missing: ${firstLine(verdict.missing)}`,
        );
      }
      next = continuation(goal);
    }
  } catch (error) {
    if (state.closed) return;
    const message = error instanceof Error ? error.message : String(error);
    await end(state, draft, goal, 'error', `The goal stopped on an error: ${message}`).catch(() => undefined);
  }
}

function overBudget(
  state: DraftServiceState,
  goal: ActiveGoal,
): { reason: GoalEndReason; message: string } | undefined {
  const { budget } = goal.status;
  const used = withUsage(state, goal).used;
  if (used.turns >= budget.turns)
    return { reason: 'turns', message: `Out of budget: ${used.turns} of ${budget.turns} turn(s) used.` };
  if (budget.costUsd !== undefined && used.costUsd >= budget.costUsd)
    return {
      reason: 'cost',
      message: `Out of budget: $${used.costUsd.toFixed(4)} of $${budget.costUsd.toFixed(4)} spent.`,
    };
  if (budget.timeMs !== undefined && used.timeMs >= budget.timeMs)
    return {
      reason: 'time',
      message: `Out of budget: ${Math.round(used.timeMs / 1000)} s of ${Math.round(budget.timeMs / 1000)} s used.`,
    };
  return undefined;
}

async function end(
  state: DraftServiceState,
  draft: ActiveDraft,
  goal: ActiveGoal,
  reason: GoalEndReason,
  message: string,
): Promise<void> {
  if (goal.status.state === 'ended') return;
  const record: GoalRecord = {
    kind: 'ended',
    goalId: goal.status.goalId,
    reason,
    message,
    at: new Date(state.clock()).toISOString(),
  };
  applyRecord(goal, record);
  await appendRecord(state, draft.session.sessionId, record, `Goal ended (${reason}): ${message}`);
  emitGoal(state, draft, goal);
  await notifyEnd(state, draft, goal, reason, message);
}

/** A goal's end runs the people's `Notification` hooks (matcher value `goal_<reason>`). */
async function notifyEnd(
  state: DraftServiceState,
  draft: ActiveDraft,
  goal: ActiveGoal,
  reason: GoalEndReason,
  message: string,
): Promise<void> {
  const hooks = state.manager.hooks;
  if (!hooks) return;
  const outcome = await hooks
    .run(
      {
        hook_event_name: 'Notification',
        session_id: draft.session.sessionId,
        cwd: draft.project.path,
        notification_type: `goal_${reason}`,
        message: `Goal "${firstLine(goal.status.condition)}": ${message}`,
        goal: withUsage(state, goal),
      },
      { matchValue: `goal_${reason}` },
    )
    .catch(() => undefined);
  for (const failure of outcome?.failures ?? []) {
    process.emitWarning(`A Notification hook (${failure.source}) failed for a goal's end: ${failure.reason}`);
  }
}

function emitGoal(state: DraftServiceState, draft: ActiveDraft, goal: ActiveGoal): void {
  state.emitter.emit('goal_status', {
    channelId: draft.session.channelId,
    sessionId: draft.session.sessionId,
    goal: withUsage(state, goal),
  });
  emitStatus(state, draft);
}

async function appendRecord(
  state: DraftServiceState,
  sessionId: string,
  record: GoalRecord,
  content: string,
): Promise<void> {
  const now = state.clock();
  const event: UnsequencedEvent = {
    type: 'block_complete',
    conversationId: MAIN_CONVERSATION,
    at: now,
    block: {
      id: randomUUID(),
      type: 'system',
      subtype: 'info',
      content,
      createdAt: now,
      completedAt: now,
      data: { goal: record },
    },
  };
  await state.manager.appendEvents(sessionId, [event]);
}

// ---- judges -------------------------------------------------------------------------------------

async function checkJudge(state: DraftServiceState, draft: ActiveDraft, judge: GoalJudge): Promise<void> {
  if (judge.kind === 'model') {
    if (judge.backend !== undefined) resolveBackend(state, judge.backend, judge.model, draft.role.name);
    return;
  }
  const program = firstWord(judge.command);
  if (program === undefined) {
    // Shell syntax before the first program (`n=$(cat f); …`): the shell decides what runs, so
    // what can be checked without running it is that it parses.
    const problem = await shellSyntaxError(judge.command, draft.project.path);
    if (problem === undefined) return;
    throw new DraftError(
      'INVALID_INPUT',
      `set_goal: the judge command "${judge.command}" is not valid shell: ${problem}. Fix it, or give a plain command such as "npm test".`,
      { fault: 'user', data: { command: judge.command } },
    );
  }
  if (!(await findProgram(program, draft.project.path))) {
    throw new DraftError(
      'INVALID_INPUT',
      `set_goal: the judge command "${judge.command}" cannot be run: "${program}" is not a program on PATH or a file in the project. Give a command that exists, e.g. "npm test".`,
      { fault: 'user', data: { command: judge.command } },
    );
  }
}

/** What `sh -n` (parse, run nothing) says is wrong with the command; undefined when it parses. */
function shellSyntaxError(command: string, cwd: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const child = spawn('sh', ['-n', '-c', command], { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', (error) => resolve(error.message));
    child.once('close', (code) =>
      resolve(code === 0 ? undefined : stderr.trim().split('\n')[0] || `sh exited ${code}`),
    );
  });
}

const SHELL_WORDS = new Set(['cd', 'exit', 'true', 'false', 'test', '[', 'echo', 'export', '.', 'exec', 'set', 'env']);

/**
 * The program a simple command runs: `FOO=1 npm test` runs npm. Undefined when shell syntax comes
 * first (a substitution, a group, a subshell), which only the shell can read.
 */
function firstWord(command: string): string | undefined {
  for (const word of command.trim().split(/\s+/)) {
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(word)) {
      if (/[$`(]/.test(word)) return undefined;
      continue;
    }
    return /^[^$`(){}]+$/.test(word) ? word.replace(/;$/, '') : undefined;
  }
  return undefined;
}

async function findProgram(program: string, cwd: string): Promise<boolean> {
  if (SHELL_WORDS.has(program)) return true;
  const executable = async (file: string) =>
    fs.access(file, fsConstants.X_OK).then(
      () => true,
      () => false,
    );
  if (program.includes('/')) return executable(path.resolve(cwd, program));
  for (const folder of (process.env['PATH'] ?? '').split(path.delimiter)) {
    if (folder !== '' && (await executable(path.join(folder, program)))) return true;
  }
  return false;
}

async function judge(
  state: DraftServiceState,
  draft: ActiveDraft,
  goal: ActiveGoal,
): Promise<{ met: boolean; missing: string; progress: boolean }> {
  const { judge: spec } = goal.status;
  if (spec.kind === 'command') {
    const result = await runCommand(spec.command, draft.project.path, spec.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS);
    const tail = result.output.slice(-OUTPUT_TAIL_CHARS);
    const progress = goal.lastOutput === undefined || goal.lastOutput !== tail;
    goal.lastOutput = tail;
    if (result.code === 0) return { met: true, missing: '', progress: true };
    return {
      met: false,
      missing: `\`${spec.command}\` ${result.code === null ? 'timed out or was killed' : `exited with ${result.code}`}. The end of its output:\n${tail}`,
      progress,
    };
  }
  const backend: AgentBackend =
    spec.backend !== undefined ? resolveBackend(state, spec.backend, spec.model, draft.role.name) : draft.backend;
  const conversation = await state.manager.loadConversation(draft.session.sessionId);
  const reply = findLast(conversation.blocks, (block) => block.type === 'assistant_text');
  const answer = reply?.type === 'assistant_text' ? reply.content : '(the agent wrote no answer)';
  const validator = compileOutputSchema(z.toJSONSchema(GoalVerdictSchema) as Record<string, unknown>);
  const turn = backend.execute({
    sessionId: `${draft.session.sessionId}-goal-judge`,
    isNewSession: true,
    prompt: judgePrompt(goal, answer),
    systemPrompt:
      'You judge whether a goal is met. Answer only with JSON: {"met": boolean, "missing": string, "progress": boolean}.',
    outputSchema: validator.schema,
    ...(spec.model ? { model: spec.model } : {}),
    cwd: draft.project.path,
  });
  let text = '';
  for await (const event of turn.events as AsyncIterable<UnsequencedEvent | StreamEvent>) {
    if (event.type === 'block_complete' && event.block.type === 'assistant_text') text = event.block.content;
  }
  const checked = validator.validate(text);
  if (!checked.ok) {
    return { met: false, missing: `The judge's answer could not be read (${checked.problem}).`, progress: false };
  }
  return GoalVerdictSchema.parse(checked.value);
}

function runCommand(command: string, cwd: string, timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', command], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-OUTPUT_TAIL_CHARS * 4);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({ code: null, output: output + String(error) });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

// ---- prompts ------------------------------------------------------------------------------------

function firstPrompt(condition: string): string {
  return `Work towards this goal until it holds: ${condition}\nAfter each of your turns a judge checks it; you go on until it is met.`;
}

function continuation(goal: ActiveGoal): string {
  const { used, budget, condition } = goal.status;
  return [
    `The goal is not met yet: ${condition}`,
    `Still missing: ${goal.lastMissing ?? '(the judge did not say)'}`,
    `Turn ${used.turns + 1} of at most ${budget.turns}. Go on with what is missing.`,
  ].join('\n');
}

function judgePrompt(goal: ActiveGoal, answer: string): string {
  const previous = goal.status.judgements.at(-1);
  return [
    `Goal: ${goal.status.condition}`,
    previous ? `Last judgement said still missing: ${previous.missing}` : 'This is the first judgement.',
    `The agent's last answer:\n${answer}`,
    'Is the goal met now? Say what is missing, and whether this turn made progress.',
  ].join('\n\n');
}

function judgementLine(record: Extract<GoalRecord, { kind: 'judgement' }>): string {
  if (record.met) return `Goal judgement ${record.turn}: met.`;
  return `Goal judgement ${record.turn}: not met${record.progress ? '' : ', no progress'}. Missing: ${firstLine(record.missing)}`;
}

function describeBudget(budget: GoalBudget): string {
  const parts = [`${budget.turns} turn(s)`];
  if (budget.costUsd !== undefined) parts.push(`$${budget.costUsd}`);
  if (budget.timeMs !== undefined) parts.push(`${Math.round(budget.timeMs / 1000)} s`);
  return parts.join(', ');
}

function firstLine(text: string): string {
  const line = text.trim().split('\n', 1)[0] ?? '';
  return line.length > 300 ? `${line.slice(0, 297)}...` : line;
}

export type { GoalJudgement };
