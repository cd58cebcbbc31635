import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Command } from 'commander';
import { ValidationError } from '../../conversation/index.js';
import type { GoalJudge, GoalStatus, ProtocolClient } from '../../protocol/index.js';
import { resolveDataDir } from '../options.js';
import { withProjectServer } from '../project-server.js';

/** The TUI's channel file in the data folder (tui.ts): a goal goes by default to the draft the TUI works with. */
const CHANNEL_FILE = 'tui-channel';

const DEFAULT_TURNS = 10;

interface GoalOptions {
  turns?: string;
  cost?: string;
  time?: string;
  judgeCommand?: string;
  judgeBackend?: string;
  judgeModel?: string;
  channel?: string;
  stop?: boolean;
  status?: boolean;
  wait?: boolean;
  json?: boolean;
}

/**
 * `parley goal "<condition>"`: a goal for the draft of a channel on the project's running server
 * (by default the project's TUI channel, kept in the data folder). The server does the work; this
 * command sets, shows or stops the goal, and with `--wait` prints each judgement until it ends.
 */
export function register(program: Command): void {
  program
    .command('goal')
    .description(
      'Set a goal on a draft: after each turn a judge (a model or a command) decides whether it holds; if not, the draft goes on until it is met or its budget is spent',
    )
    .argument('[condition...]', 'what must hold, in words')
    .option('--turns <n>', `turn budget (default ${DEFAULT_TURNS})`)
    .option('--cost <usd>', 'cost budget in US dollars')
    .option('--time <duration>', 'time budget: 90s, 30m, 2h')
    .option('--judge-command <command>', 'judge by a command: exit code 0 means the goal is met (e.g. "npm test")')
    .option('--judge-backend <name>', "judge by this back end's model (default: the draft's own)")
    .option('--judge-model <model>', 'the judge model')
    .option('--channel <id>', "the draft's channel (default: this project's TUI channel)")
    .option('--stop', 'stop the running goal (the turn running is cancelled)')
    .option('--status', 'show the goal, its budget used and its judgements')
    .option('--wait', 'print each judgement and exit when the goal ends (exit code 0 only when met)')
    .option('--json', 'print JSON')
    .action(async (words: string[], options: GoalOptions, command: Command) => {
      const dataDir = resolveDataDir(command);
      const channel = options.channel ?? (await projectChannel(dataDir));
      await withProjectServer(dataDir, { channel }, async ({ client }) => {
        // Listening before the goal is set: a goal that ends quickly must not end unseen.
        const following = options.wait ? follow(client, options.json === true) : undefined;
        const goal = await act(client, words.join(' ').trim(), options);
        if (goal && following && goal.state === 'running') {
          const ended = await following.until(goal.goalId);
          process.exitCode = ended.ended?.reason === 'met' ? 0 : 1;
        } else {
          following?.stop();
          print(goal, options.json === true);
        }
      });
    });
}

async function act(client: ProtocolClient, condition: string, options: GoalOptions): Promise<GoalStatus | undefined> {
  if (options.stop) return (await client.request('stop_goal', {})).goal;
  if (options.status || condition === '') return (await client.request('get_goal', {})).goal;
  const budget = {
    turns: options.turns !== undefined ? number('--turns', options.turns) : DEFAULT_TURNS,
    ...(options.cost !== undefined ? { costUsd: number('--cost', options.cost) } : {}),
    ...(options.time !== undefined ? { timeMs: parseDuration(options.time) } : {}),
  };
  const judge: GoalJudge =
    options.judgeCommand !== undefined
      ? { kind: 'command', command: options.judgeCommand }
      : {
          kind: 'model',
          ...(options.judgeBackend !== undefined ? { backend: options.judgeBackend } : {}),
          ...(options.judgeModel !== undefined ? { model: options.judgeModel } : {}),
        };
  return (await client.request('set_goal', { condition, judge, budget })).goal;
}

/** Prints each judgement of the goal `until` names as it comes, and resolves when that goal ends. */
function follow(
  client: ProtocolClient,
  json: boolean,
): { until: (goalId: string) => Promise<GoalStatus>; stop: () => void } {
  const seen: GoalStatus[] = [];
  let wanted: { goalId: string; resolve: (goal: GoalStatus) => void } | undefined;
  let printed = 0;
  const take = (goal: GoalStatus): void => {
    if (!wanted || goal.goalId !== wanted.goalId) return;
    for (const judgement of goal.judgements.slice(printed)) {
      if (!json)
        process.stdout.write(
          `turn ${judgement.turn}: ${judgement.met ? 'met' : `not met${judgement.progress ? '' : ' (no progress)'} — ${judgement.missing.split('\n', 1)[0]}`}\n`,
        );
    }
    printed = Math.max(printed, goal.judgements.length);
    if (goal.state === 'ended') {
      stop();
      print(goal, json);
      wanted.resolve(goal);
    }
  };
  const stop = client.on('goal_status', ({ goal }) => (wanted ? take(goal) : seen.push(goal)));
  return {
    until: (goalId) =>
      new Promise((resolve) => {
        wanted = { goalId, resolve };
        for (const goal of seen.splice(0)) take(goal);
      }),
    stop,
  };
}

function print(goal: GoalStatus | undefined, json: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(goal ?? null, null, 2)}\n`);
    return;
  }
  if (!goal) {
    process.stdout.write('No goal on this draft. Set one with `parley goal "<condition>"`.\n');
    return;
  }
  process.stdout.write(`${formatGoal(goal)}\n`);
}

/** One goal in a few lines: its condition, its state, its budget used. */
export function formatGoal(goal: GoalStatus): string {
  const { used, budget } = goal;
  const spent = [
    `${used.turns}/${budget.turns} turns`,
    ...(budget.costUsd !== undefined ? [`$${used.costUsd.toFixed(2)}/$${budget.costUsd.toFixed(2)}`] : []),
    ...(budget.timeMs !== undefined ? [`${Math.round(used.timeMs / 1000)}s/${Math.round(budget.timeMs / 1000)}s`] : []),
  ].join(', ');
  const state = goal.ended ? `ended (${goal.ended.reason}): ${goal.ended.message}` : 'running';
  return `Goal: ${goal.condition}\n${state}\nBudget used: ${spent}`;
}

function number(flag: string, text: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value))
    throw new ValidationError(`${flag} must be a number; got "${text}".`);
  return value;
}

/** `90s`, `30m`, `2h`, or plain milliseconds. */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!match) throw new ValidationError(`--time must be a duration such as 90s, 30m or 2h; got "${text}".`);
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[(match[2] ?? 'ms') as 'ms' | 's' | 'm' | 'h'];
  return Math.round(Number(match[1]) * unit);
}

async function projectChannel(dataDir: string): Promise<string> {
  try {
    const saved = (await readFile(join(dataDir, CHANNEL_FILE), 'utf8')).trim();
    if (saved !== '') return saved;
  } catch {
    // No TUI has run in this project yet.
  }
  throw new ValidationError(
    'This project has no TUI channel yet, so there is no draft to set a goal on. Draft an agent in `parley` first, or pass --channel <id>.',
  );
}
