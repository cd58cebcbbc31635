import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import type { Command } from 'commander';
import { ValidationError } from '../../conversation/index.js';
import {
  RUN_STATUS_VALUES,
  type ProtocolClient,
  type RunPromptWire,
  type RunStatusWire,
  type RunWire,
} from '../../protocol/index.js';
import { withProjectServer, workflowReference } from '../project-server.js';
import { resolveDataDir } from '../options.js';

/**
 * `parley runs` and `parley answer`, and `parley run --detach`'s start: durable runs on the
 * project's running server, found as the TUI finds it (server.json in the data folder). They only
 * speak the protocol; the server's RunService does the work.
 */
export function register(program: Command): void {
  const runs = program
    .command('runs')
    .description(
      "List the durable workflow runs on the project's server: id, workflow, status, phase, pending question, age",
    )
    .option('--json', 'print JSON')
    .option('--status <statuses>', `only these, comma-separated: ${RUN_STATUS_VALUES.join(', ')}`)
    .action(async (options: { json?: boolean; status?: string }, command: Command) => {
      const status = parseStatuses(options.status);
      await withServer(command, async (client) => {
        const runs = await client.listRuns(status ? { status } : {});
        if (options.json) process.stdout.write(`${JSON.stringify(runs, null, 2)}\n`);
        else
          process.stdout.write(
            runs.length === 0
              ? 'No runs yet. Start one with `parley run <workflow> --detach`.\n'
              : formatRunTable(runs, new Date()),
          );
      });
    });

  runs
    .command('fork')
    .description(
      "Fork a durable run: a new run that replays the source's journal through a step, then goes on live; with --answer, the question at that step gets another answer",
    )
    .argument('<runId>', 'the run to fork (see `parley runs`)')
    .requiredOption('--at-step <n>', "the last step of the run's journal the fork replays (from 0)")
    .option(
      '--answer <text>',
      'the answer the question at that step gets instead of the one given (a choice or its number)',
    )
    .action(async (runId: string, options: { atStep: string; answer?: string }, command: Command) => {
      const atStep = parseStep(options.atStep);
      await withServer(command, async (client) => {
        const fork = await client.forkRun(runId, {
          atStep,
          ...(options.answer !== undefined ? { answer: options.answer } : {}),
        });
        process.stdout.write(`${fork.id}\n`);
        const question = fork.pendingPrompts[0];
        process.stderr.write(
          `Forked run ${runId} at step ${atStep}${options.answer !== undefined ? ` answering "${oneLine(options.answer, 40)}"` : ''} as run ${fork.id} (${fork.status}${question ? `: "${oneLine(question.prompt, 60)}"` : ''}). ` +
            `Follow it with \`parley runs\`${question ? `; answer with \`parley answer ${fork.id}\`` : ''}.\n`,
        );
      });
    });

  program
    .command('answer')
    .description(
      "Answer a run's pending question; without a response, shows its choices as a numbered list and reads the answer from standard input",
    )
    .argument('<runId>', 'the run (see `parley runs`)')
    .argument('[response]', 'the answer: the text, or a choice (by its text or number)')
    .option('--prompt <promptId>', 'which pending question, when the run has several (default: the oldest)')
    .action(async (runId: string, response: string | undefined, options: { prompt?: string }, command: Command) => {
      await withServer(command, async (client) => {
        process.exitCode = await answerRun(client, runId, response, {
          ...(options.prompt !== undefined ? { promptId: options.prompt } : {}),
          stdin: process.stdin,
          stdout: process.stdout,
          stderr: process.stderr,
        });
      });
    });
}

/** `parley run <workflow> --detach`: starts the run on the project's server and prints its id. */
export async function startDetachedRun(command: Command, workflow: string, input: unknown): Promise<void> {
  await withServer(command, async (client, projectRoot) => {
    const candidate = resolve(workflow);
    const run = await client.startRun({
      workflow: workflowReference(workflow, existsSync(candidate) ? candidate : undefined, projectRoot),
      ...(input !== undefined ? { input } : {}),
    });
    process.stdout.write(`${run.id}\n`);
    const question = run.pendingPrompts[0];
    process.stderr.write(
      `Started ${run.harness} as run ${run.id} (${run.status}${question ? `: "${oneLine(question.prompt, 60)}"` : ''}). ` +
        `Follow it with \`parley runs\`${question ? `; answer with \`parley answer ${run.id}\`` : ''}.\n`,
    );
  });
}

/** Connects to the project's server, runs `work`, and turns errors the server answered into Parley errors (clean message, exit code). */
/** A journal step as typed: a whole number from 0. */
function parseStep(text: string): number {
  if (/^\d+$/.test(text.trim())) return Number(text.trim());
  throw new ValidationError(`--at-step must be a whole number from 0 (a step of the run's journal), not "${text}".`);
}

function withServer(
  command: Command,
  work: (client: ProtocolClient, projectRoot: string) => Promise<void>,
): Promise<void> {
  return withProjectServer(resolveDataDir(command), {}, ({ client, server }) => work(client, server.projectRoot));
}

export interface AnswerStreams {
  stdin: Readable;
  stdout: Writable;
  stderr: Writable;
  promptId?: string;
}

/**
 * Answers a run's pending question; resolves with the exit code: 0 accepted, 1 refused (the
 * validator's message is printed; the question keeps waiting).
 */
export async function answerRun(
  client: ProtocolClient,
  runId: string,
  response: string | undefined,
  streams: AnswerStreams,
): Promise<number> {
  const run = await client.getRun(runId);
  const prompt =
    streams.promptId !== undefined
      ? run.pendingPrompts.find((entry) => entry.promptId === streams.promptId)
      : run.pendingPrompts[0];
  if (!prompt) {
    throw new ValidationError(
      streams.promptId !== undefined
        ? `Run ${runId} has no pending question ${streams.promptId}; its pending ones: ${run.pendingPrompts.map((entry) => entry.promptId).join(', ') || 'none'}.`
        : `Run ${runId} has no question waiting for an answer (it is ${run.status}).`,
    );
  }
  let answer = response;
  if (answer === undefined) {
    streams.stdout.write(describeQuestion(prompt, new Date()));
    streams.stdout.write('> ');
    answer = await readAnswer(streams.stdin);
    if (answer === undefined)
      throw new ValidationError(
        `No answer was given: standard input ended. Pass the answer as an argument: \`parley answer ${runId} "…"\`.`,
      );
  }
  const outcome = await client.answerPrompt(runId, prompt.promptId, resolveChoice(prompt, answer));
  if (!outcome.accepted) {
    streams.stderr.write(
      `parley: the answer was refused: ${outcome.message}\nThe question is still waiting: \`parley answer ${runId}\` to try again.\n`,
    );
    return 1;
  }
  streams.stdout.write(`Answered "${oneLine(prompt.prompt, 60)}" of run ${runId}: ${resolveChoice(prompt, answer)}\n`);
  return 0;
}

/** A number from 1 to the choices' count is that choice (unless the text is itself a choice). */
export function resolveChoice(prompt: Pick<RunPromptWire, 'choices'>, answer: string): string {
  const text = answer.trim();
  const choices = prompt.choices;
  if (!choices || choices.includes(text)) return choices ? text : answer;
  const number = Number(text);
  return /^\d+$/.test(text) && number >= 1 && number <= choices.length ? choices[number - 1]! : answer;
}

/** The question, its choices as a numbered list, the default and the time left. */
export function describeQuestion(prompt: RunPromptWire, now: Date): string {
  const lines = [`? ${prompt.prompt}`];
  if (prompt.choices) lines.push(...prompt.choices.map((choice, index) => `  ${index + 1}) ${choice}`));
  const notes = [
    prompt.defaultChoice !== undefined ? `default: ${prompt.defaultChoice}` : undefined,
    prompt.deadline !== undefined
      ? `answer within ${formatDuration(Date.parse(prompt.deadline) - now.getTime())}`
      : undefined,
  ].filter((note): note is string => note !== undefined);
  if (notes.length > 0) lines.push(`  (${notes.join(', ')})`);
  return `${lines.join('\n')}\n`;
}

function readAnswer(stdin: Readable): Promise<string | undefined> {
  return new Promise((done) => {
    const lines = createInterface({ input: stdin, terminal: false });
    let answered = false;
    lines.on('line', (line) => {
      if (answered || line.trim() === '') return;
      answered = true;
      lines.close();
      done(line.trim());
    });
    lines.on('close', () => {
      if (!answered) done(undefined);
    });
  });
}

function parseStatuses(value: string | undefined): RunStatusWire[] | undefined {
  if (value === undefined) return undefined;
  const statuses = value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  const unknown = statuses.filter((entry) => !(RUN_STATUS_VALUES as readonly string[]).includes(entry));
  if (statuses.length === 0 || unknown.length > 0) {
    throw new ValidationError(
      `--status takes ${RUN_STATUS_VALUES.join(', ')} (comma-separated), not "${unknown.join(', ') || value}".`,
    );
  }
  return statuses as RunStatusWire[];
}

/** Runs as aligned columns under a header. */
export function formatRunTable(runs: readonly RunWire[], now: Date): string {
  const rows = [
    ['ID', 'WORKFLOW', 'STATUS', 'PHASE', 'PENDING QUESTION', 'AGE'],
    ...runs.map((run) => {
      const question = run.pendingPrompts[0];
      const more = run.pendingPrompts.length > 1 ? ` (+${run.pendingPrompts.length - 1})` : '';
      return [
        run.id,
        run.harness,
        run.status,
        run.phase ?? '-',
        question ? `${oneLine(question.prompt, 48)}${more}` : '-',
        formatDuration(now.getTime() - Date.parse(run.createdAt)),
      ];
    }),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return (
    rows
      .map((row) =>
        row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  '),
      )
      .join('\n') + '\n'
  );
}

/** 42s, 5m, 3h, 2d; a time already past is `0s`. */
export function formatDuration(milliseconds: number): string {
  const seconds = Math.max(0, Math.floor(milliseconds / 1000));
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86_400)}d`;
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
