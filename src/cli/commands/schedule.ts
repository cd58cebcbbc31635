import type { Command } from 'commander';
import { ValidationError } from '../../conversation/index.js';
import type { MethodParams, ProtocolClient, ScheduleWire } from '../../protocol/index.js';
import { withProjectServer } from '../project-server.js';
import { resolveDataDir } from '../options.js';

/**
 * `parley schedule add | list | pause | resume | remove`: schedules on the project's running server,
 * found as the TUI finds it (server.json in the data folder). Only the protocol is spoken; the
 * server's scheduler checks, stores and fires them.
 */
export function register(program: Command): void {
  const schedule = program
    .command('schedule')
    .description("Schedules on the project's server: start a workflow run or prompt a draft on a cron or an interval");

  schedule
    .command('add')
    .description('Add a schedule: a cron expression with its time zone (or an interval), and what it fires')
    .option('--cron <expression>', 'five fields: minute hour day-of-month month weekday (e.g. "0 3 * * *")')
    .option('--tz <zone>', 'the IANA time zone the cron is read in (e.g. Europe/Berlin, UTC); required with --cron')
    .option('--every <interval>', 'or: an interval, in seconds or with a unit (90, 30s, 15m, 6h, 1d)')
    .option('--workflow <workflow>', 'start a durable run of this workflow (a module under the project, or a name)')
    .option('--input <json>', "the workflow's input, as JSON")
    .option('--prompt <text>', 'send this prompt (with --role, or --session)')
    .option('--role <role>', 'to the draft of this role, on a channel of its own (drafted at the first firing)')
    .option('--project <project>', "the draft's project (default: the server's)")
    .option('--task <task>', "the draft's task (default: one made at the first firing)")
    .option('--session <sessionId>', 'or: to the draft running this session')
    .option('--name <name>', 'a name to show in lists')
    .option('--catch-up <rule>', 'firings missed while no server ran: skip (default) or once')
    .option('--overlap <rule>', 'a firing while the previous run goes on: skip (default), queue or parallel')
    .option('--paused', 'store it paused')
    .option('--json', 'print the stored schedule as JSON')
    .action(async (options: AddOptions, command: Command) => {
      await withServer(command, async (client) => {
        const params = await addParams(options, client);
        const added = await client.addSchedule(params);
        if (options.json) process.stdout.write(`${JSON.stringify(added, null, 2)}\n`);
        else process.stdout.write(`${added.id}\n`);
        process.stderr.write(
          `Added schedule ${added.id} (${describeTiming(added)} → ${describeTarget(added)}); next firing ${added.nextFireAt ?? 'never'}. See it with \`parley schedule list\`.\n`,
        );
      });
    });

  schedule
    .command('list')
    .description('List schedules: id, timing, target, next firing, last result')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }, command: Command) => {
      await withServer(command, async (client) => {
        const schedules = await client.listSchedules();
        if (options.json) process.stdout.write(`${JSON.stringify(schedules, null, 2)}\n`);
        else
          process.stdout.write(
            schedules.length === 0
              ? 'No schedules yet. Add one with `parley schedule add --cron "0 3 * * *" --tz UTC --workflow <workflow>`.\n'
              : formatScheduleTable(schedules),
          );
      });
    });

  for (const [name, verb, act] of [
    [
      'pause',
      'Pause a schedule: it stops firing until resumed',
      (c: ProtocolClient, id: string) => c.pauseSchedule(id),
    ],
    [
      'resume',
      'Resume a paused schedule from now (firings due while paused are not made up)',
      (c: ProtocolClient, id: string) => c.resumeSchedule(id),
    ],
  ] as const)
    schedule
      .command(name)
      .description(verb)
      .argument('<scheduleId>', 'the schedule (see `parley schedule list`)')
      .action(async (scheduleId: string, _options: unknown, command: Command) => {
        await withServer(command, async (client) => {
          const changed = await act(client, scheduleId);
          process.stdout.write(
            `${changed.id} ${changed.paused ? 'paused' : `resumed; next firing ${changed.nextFireAt ?? 'never'}`}\n`,
          );
        });
      });

  schedule
    .command('remove')
    .description('Remove a schedule and its firings (the runs it started are kept)')
    .argument('<scheduleId>', 'the schedule (see `parley schedule list`)')
    .action(async (scheduleId: string, _options: unknown, command: Command) => {
      await withServer(command, async (client) => {
        await client.removeSchedule(scheduleId);
        process.stdout.write(`${scheduleId} removed\n`);
      });
    });
}

interface AddOptions {
  cron?: string;
  tz?: string;
  every?: string;
  workflow?: string;
  input?: string;
  prompt?: string;
  role?: string;
  project?: string;
  task?: string;
  session?: string;
  name?: string;
  catchUp?: string;
  overlap?: string;
  paused?: boolean;
  json?: boolean;
}

/** The `add_schedule` params the options say; a contradiction is refused before anything is sent. */
async function addParams(options: AddOptions, client: ProtocolClient): Promise<MethodParams<'add_schedule'>> {
  if ((options.cron === undefined) === (options.every === undefined))
    throw new ValidationError('Give exactly one of --cron "<expression>" (with --tz <zone>) or --every <interval>.');
  if (options.cron !== undefined && options.tz === undefined)
    throw new ValidationError(
      `--cron "${options.cron}" needs --tz <zone> (an IANA time zone such as Europe/Berlin or UTC): Parley never guesses the machine's.`,
    );
  const targets = [options.workflow, options.role, options.session].filter((value) => value !== undefined).length;
  if (targets !== 1)
    throw new ValidationError(
      'Give exactly one target: --workflow <workflow>, --role <role> --prompt <text>, or --session <id> --prompt <text>.',
    );
  const target = await targetOf(options, client);
  return {
    ...(options.name !== undefined ? { name: options.name } : {}),
    ...(options.cron !== undefined ? { cron: options.cron, timeZone: options.tz! } : {}),
    ...(options.every !== undefined ? { everySeconds: parseInterval(options.every) } : {}),
    target,
    ...(options.catchUp !== undefined
      ? { catchUp: oneOf('--catch-up', options.catchUp, ['skip', 'once'] as const) }
      : {}),
    ...(options.overlap !== undefined
      ? { overlap: oneOf('--overlap', options.overlap, ['skip', 'queue', 'parallel'] as const) }
      : {}),
    ...(options.paused ? { paused: true } : {}),
  };
}

async function targetOf(options: AddOptions, client: ProtocolClient): Promise<MethodParams<'add_schedule'>['target']> {
  if (options.workflow !== undefined) {
    if (options.prompt !== undefined)
      throw new ValidationError('--prompt goes with --role or --session, not with --workflow (use --input).');
    return {
      kind: 'workflow',
      workflow: options.workflow,
      ...(options.input !== undefined ? { input: parseInput(options.input) } : {}),
    };
  }
  if (options.prompt === undefined || options.prompt.trim() === '')
    throw new ValidationError('A draft or session target needs --prompt <text>: what the schedule sends.');
  if (options.session !== undefined) return { kind: 'session', sessionId: options.session, prompt: options.prompt };
  const project =
    options.project ?? (await client.request('list_projects', {})).projects.find((entry) => entry.current)?.name;
  if (project === undefined) throw new ValidationError("Name the draft's project with --project <project>.");
  return {
    kind: 'draft',
    prompt: options.prompt,
    project,
    role: options.role!,
    ...(options.task !== undefined ? { task: options.task } : {}),
  };
}

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** `90`, `30s`, `15m`, `6h`, `1d` as seconds. */
export function parseInterval(text: string): number {
  const match = /^\s*(\d+)\s*([smhd]?)\s*$/.exec(text);
  if (!match || Number(match[1]) === 0)
    throw new ValidationError(
      `--every "${text}" is not an interval: give a whole number of seconds, or one with a unit (30s, 15m, 6h, 1d).`,
    );
  return Number(match[1]) * UNITS[match[2] || 's']!;
}

function parseInput(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ValidationError(`--input is not JSON: ${(error as Error).message}.`);
  }
}

function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new ValidationError(`${flag} must be one of ${allowed.join(', ')}, not "${value}".`);
}

function describeTiming(schedule: ScheduleWire): string {
  return schedule.timing.kind === 'cron'
    ? `"${schedule.timing.cron}" in ${schedule.timing.timeZone}`
    : `every ${schedule.timing.everySeconds} s`;
}

function describeTarget(schedule: ScheduleWire): string {
  const target = schedule.target;
  if (target.kind === 'workflow') return `run ${target.workflow}`;
  if (target.kind === 'draft') return `prompt ${target.role} in ${target.project}`;
  return `prompt session ${target.sessionId}`;
}

function describeLast(schedule: ScheduleWire): string {
  const last = schedule.last;
  if (!last) return '-';
  const reached = last.runId ?? last.sessionId;
  return `${last.outcome}${reached ? ` ${reached}` : ''}${last.error ? ` (${last.error.code})` : ''}`;
}

/** One line per schedule, columns padded. */
export function formatScheduleTable(schedules: readonly ScheduleWire[]): string {
  const rows = [
    ['ID', 'NAME', 'WHEN', 'FIRES', 'NEXT', 'LAST'],
    ...schedules.map((schedule) => [
      schedule.id,
      schedule.name ?? '-',
      describeTiming(schedule),
      describeTarget(schedule),
      schedule.paused ? 'paused' : (schedule.nextFireAt ?? 'never'),
      describeLast(schedule),
    ]),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return `${rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')}\n`;
}

function withServer(command: Command, work: (client: ProtocolClient) => Promise<void>): Promise<void> {
  return withProjectServer(resolveDataDir(command), {}, ({ client }) => work(client));
}
