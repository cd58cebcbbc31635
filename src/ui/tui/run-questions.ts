import { isRpcError, RpcError, type ProtocolClient, type RunPromptWire, type RunWire } from '../../protocol/index.js';
import { formatDuration, oneLine } from './format.js';
import type { NoteLine } from './view-state.js';

/** A question a run of the project waits on, as the TUI shows it. */
export interface PendingQuestion {
  runId: string;
  harness: string;
  prompt: RunPromptWire;
}

export interface RunQuestionsState {
  /** False on a server that runs no workflows (or predates runs): nothing is shown. */
  enabled: boolean;
  /** Oldest first: the first one is the one `/answer` answers. */
  questions: PendingQuestion[];
}

/**
 * The pending questions of every run of the project, kept over the protocol: it follows
 * all runs (`subscribe_runs`, renewed by the client after a reconnect), reads them again after each
 * (re)connection (run notifications are not replayed), and keeps one list of questions in
 * `askedAt` order from `run_prompt` and `run_updated`. A small external store the App reads.
 */
export class RunQuestions {
  private current: RunQuestionsState = { enabled: false, questions: [] };
  private readonly listeners = new Set<() => void>();
  private readonly unsubscribe: Array<() => void> = [];
  /** Each run's questions and name, by run id. */
  private readonly byRun = new Map<string, PendingQuestion[]>();

  constructor(private readonly client: ProtocolClient) {}

  readonly getState = (): RunQuestionsState => this.current;

  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  start(): void {
    this.unsubscribe.push(
      this.client.on('run_updated', ({ run }) => this.setRun(run)),
      this.client.on('run_prompt', ({ runId, prompt }) => {
        const known = this.byRun.get(runId) ?? [];
        if (known.some((question) => question.prompt.promptId === prompt.promptId)) return;
        this.byRun.set(runId, [...known, { runId, harness: known[0]?.harness ?? runId, prompt }]);
        this.publish(true);
      }),
    );
  }

  stop(): void {
    for (const off of this.unsubscribe.splice(0)) off();
  }

  /** After every (re)connection: follow every run (once; the client renews it), then read them. */
  async refresh(): Promise<void> {
    try {
      if (!this.current.enabled) await this.client.subscribeRuns();
      const runs = await this.client.listRuns({ status: ['running', 'waiting', 'paused'] });
      this.byRun.clear();
      for (const run of runs) this.setRun(run, false);
      this.publish(true);
    } catch (error) {
      if (notEnabled(error)) return this.publish(false);
      throw error;
    }
  }

  /** `/runs`: every run with its status, phase and question. */
  async report(now: number): Promise<NoteLine[]> {
    let runs: RunWire[];
    try {
      runs = await this.client.listRuns();
    } catch (error) {
      if (notEnabled(error))
        return [{ text: 'This server runs no workflows (durable runs are not enabled on it).', tone: 'warning' }];
      throw error;
    }
    if (runs.length === 0)
      return [{ text: 'No runs yet. Start one with `parley run <workflow> --detach`.', tone: 'dim' }];
    return [
      { text: `Runs (${runs.length})`, bold: true },
      ...runs.map((run) => {
        const question = run.pendingPrompts[0];
        const age = formatDuration(Math.max(0, now - Date.parse(run.createdAt)));
        return {
          text: `  ${run.id}  ${run.harness}  ${run.status}${run.phase ? ` · ${run.phase}` : ''}${question ? ` · ? ${oneLine(question.prompt, 60)}` : ''} · ${age} ago`,
          ...(question ? { tone: 'warning' as const } : run.status === 'failed' ? { tone: 'error' as const } : {}),
        };
      }),
    ];
  }

  /**
   * `/answer [runId] <answer>`: answers the oldest pending question (or that run's). A number picks
   * the choice it numbers. Resolves with what to print; a refused answer says why and keeps waiting.
   */
  async answer(args: string): Promise<NoteLine[]> {
    const questions = this.current.questions;
    const [first = '', ...rest] = args.split(/\s+/);
    const named = rest.length > 0 ? questions.find((question) => question.runId === first) : undefined;
    const question = named ?? questions[0];
    const text = (named ? rest.join(' ') : args).trim();
    if (!question) return [{ text: 'No run is waiting for an answer.', tone: 'warning' }];
    if (text === '')
      return [
        {
          text: `Usage: /answer <${question.prompt.choices ? 'number or text' : 'text'}> (or /answer <runId> <answer>) for "${oneLine(question.prompt.prompt, 60)}".`,
          tone: 'warning',
        },
      ];
    const response = choiceFor(question.prompt, text);
    const outcome = await this.client.answerPrompt(question.runId, question.prompt.promptId, response);
    if (!outcome.accepted)
      return [{ text: `The answer was refused: ${outcome.message} The question is still waiting.`, tone: 'error' }];
    this.dropQuestion(question.runId, question.prompt.promptId);
    return [
      { text: `Answered "${oneLine(question.prompt.prompt, 60)}" (${question.runId}): ${response}`, tone: 'success' },
    ];
  }

  private setRun(run: RunWire, publish = true): void {
    if (run.pendingPrompts.length === 0) this.byRun.delete(run.id);
    else
      this.byRun.set(
        run.id,
        run.pendingPrompts.map((prompt) => ({ runId: run.id, harness: run.harness, prompt })),
      );
    if (publish) this.publish(true);
  }

  private dropQuestion(runId: string, promptId: string): void {
    const left = (this.byRun.get(runId) ?? []).filter((question) => question.prompt.promptId !== promptId);
    if (left.length === 0) this.byRun.delete(runId);
    else this.byRun.set(runId, left);
    this.publish(true);
  }

  private publish(enabled: boolean): void {
    const questions = [...this.byRun.values()]
      .flat()
      .sort((a, b) => a.prompt.askedAt.localeCompare(b.prompt.askedAt) || a.runId.localeCompare(b.runId));
    this.current = { enabled, questions };
    for (const listener of [...this.listeners]) listener();
  }
}

/** A number from 1 to the choices' count is the choice it numbers (unless it is itself a choice). */
export function choiceFor(prompt: Pick<RunPromptWire, 'choices'>, text: string): string {
  const choices = prompt.choices;
  if (!choices || choices.includes(text) || !/^\d+$/.test(text)) return text;
  const number = Number(text);
  return number >= 1 && number <= choices.length ? choices[number - 1]! : text;
}

/** The question's deadline as time left (`4m 05s left`), or `overdue`. */
export function timeLeft(deadline: string, now: number): string {
  const left = Date.parse(deadline) - now;
  if (Number.isNaN(left)) return '';
  if (left <= 0) return 'overdue';
  const seconds = Math.floor(left / 1000);
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const rest = seconds % 60;
  return `${hours > 0 ? `${hours}h ${String(minutes).padStart(2, '0')}m ` : minutes > 0 ? `${minutes}m ` : ''}${hours > 0 || minutes > 0 ? String(rest).padStart(2, '0') : rest}s left`;
}

/** A server without runs: RUNS_NOT_ENABLED, or one from before runs (no such method). */
function notEnabled(error: unknown): boolean {
  return error instanceof RpcError && (error.reason === 'RUNS_NOT_ENABLED' || isRpcError(error, -32601));
}
