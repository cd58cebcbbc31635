import { ParleyError } from '../../src/conversation/index.js';
import type {
  ForkRunOptions,
  ReplyOutcome,
  RunFilter,
  RunService,
  RunServiceEvents,
  SessionEvent,
  StartRunRequest,
} from '../../src/harness/index.js';
import type { RunPendingPrompt, RunRecord } from '../../src/store/index.js';

/**
 * A STAND-IN for the durable-run core (the harness's RunService): a
 * handler-layer test double, in memory, for testing the faces over the interface (protocol, server,
 * CLI, TUI, web UI) without the core. It keeps the interface's promises that the faces rely on:
 * records cloned on every read, newest first, RUN_NOT_FOUND / UNKNOWN_PROMPT /
 * PROMPT_ALREADY_ANSWERED, an answer refused by the prompt's choices or validator coming back as
 * `{ accepted: false, message }` with the prompt still waiting, and `run_updated` / `run_prompt` /
 * `run_event` announced as the record changes. It runs no workflow code: each workflow is a script
 * of phases and one question.
 */

export interface StandInWorkflow {
  harness: string;
  phases: string[];
  agents?: Array<{ key: string; name: string; sessionId?: string }>;
  question: {
    prompt: string;
    choices?: string[];
    defaultChoice?: string;
    /** The deadline, this long after the question is asked. */
    timeoutMs?: number;
    /** A message refuses the answer; undefined accepts it. */
    validate?: (answer: string) => string | undefined;
  };
  /** What the run returns once answered. */
  result(answer: string): unknown;
}

type Listener = (payload: never) => void;

export class StandInRunService implements RunService {
  private readonly runs = new Map<string, RunRecord>();
  private readonly answered = new Map<string, Set<string>>();
  private readonly listeners = new Map<string, Set<Listener>>();
  private counter = 0;
  /** Every call, in order, for tests that check what the faces asked for. */
  readonly calls: Array<{ method: string; args: unknown[] }> = [];
  closed = false;

  constructor(
    private readonly workflows: Record<string, StandInWorkflow>,
    private readonly now: () => Date = () => new Date(),
  ) {}

  startRun(request: StartRunRequest): Promise<RunRecord> {
    this.calls.push({ method: 'startRun', args: [request] });
    const workflow = this.workflows[request.workflow];
    if (!workflow) {
      return Promise.reject(
        new ParleyError('WORKFLOW_LOAD_FAILED', `No workflow "${request.workflow}" in this project.`, {
          fault: 'user',
        }),
      );
    }
    const id = `run-${++this.counter}`;
    const at = this.stamp();
    const promptId = `${id}-prompt-1`;
    const prompt: RunPendingPrompt = {
      promptId,
      prompt: workflow.question.prompt,
      ...(workflow.question.choices ? { choices: workflow.question.choices } : {}),
      ...(workflow.question.defaultChoice !== undefined ? { defaultChoice: workflow.question.defaultChoice } : {}),
      askedAt: at,
      ...(workflow.question.timeoutMs !== undefined
        ? { deadline: new Date(Date.parse(at) + workflow.question.timeoutMs).toISOString() }
        : {}),
    };
    const record: RunRecord = {
      id,
      harness: workflow.harness,
      workflow: { ref: request.workflow, path: `/project/${request.workflow}` },
      ...(request.project !== undefined ? { project: request.project } : {}),
      input: request.input,
      state: {},
      status: 'waiting',
      phase: workflow.phases.at(-1),
      phases: [...workflow.phases],
      pendingPrompts: [prompt],
      agents: (workflow.agents ?? []).map((agent) => ({ ...agent })),
      journalLength: workflow.phases.length + 1,
      createdAt: at,
      updatedAt: at,
    };
    this.runs.set(id, record);
    this.answered.set(id, new Set());
    this.emit('run_event', {
      runId: id,
      event: { type: 'harness:start', harness: workflow.harness, timestamp: new Date(at) } as SessionEvent,
    });
    this.emit('run_prompt', { runId: id, prompt: structuredClone(prompt) });
    this.emit('run_updated', { run: structuredClone(record) });
    return Promise.resolve(structuredClone(record));
  }

  /** Puts a record in as it is (runs from "before a restart"). */
  plant(record: RunRecord): void {
    this.runs.set(record.id, structuredClone(record));
    this.answered.set(record.id, new Set());
  }

  listRuns(filter: RunFilter = {}): Promise<RunRecord[]> {
    this.calls.push({ method: 'listRuns', args: [filter] });
    const runs = [...this.runs.values()]
      .filter((run) => filter.project === undefined || run.project === filter.project)
      .filter((run) => filter.status === undefined || filter.status.includes(run.status))
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id, undefined, { numeric: true }));
    return Promise.resolve(structuredClone(runs));
  }

  getRun(runId: string): Promise<RunRecord> {
    this.calls.push({ method: 'getRun', args: [runId] });
    return Promise.resolve().then(() => structuredClone(this.find(runId)));
  }

  answerPrompt(runId: string, promptId: string, response: string): Promise<ReplyOutcome> {
    this.calls.push({ method: 'answerPrompt', args: [runId, promptId, response] });
    return Promise.resolve().then(() => {
      const run = this.find(runId);
      if (this.answered.get(runId)?.has(promptId)) {
        throw new ParleyError(
          'PROMPT_ALREADY_ANSWERED',
          `Prompt ${promptId} of run ${runId} was already answered; the first answer stands.`,
          { fault: 'user' },
        );
      }
      const prompt = run.pendingPrompts.find((entry) => entry.promptId === promptId);
      if (!prompt)
        throw new ParleyError('UNKNOWN_PROMPT', `Run ${runId} has no prompt ${promptId}.`, { fault: 'user' });
      const workflow = this.workflows[run.workflow.ref]!;
      const choice = this.choiceOf(prompt, response);
      const refusal =
        prompt.choices && choice === undefined
          ? `"${response}" is not one of the choices: ${prompt.choices.join(', ')} (or their numbers).`
          : workflow.question.validate?.(choice ?? response);
      if (refusal !== undefined) {
        this.emit('run_event', {
          runId,
          event: {
            type: 'user:reply-rejected',
            promptId,
            content: response,
            message: refusal,
            timestamp: this.now(),
          } as unknown as SessionEvent,
        });
        return { accepted: false as const, message: refusal };
      }
      const answer = choice ?? response;
      this.answered.get(runId)!.add(promptId);
      const at = this.stamp();
      Object.assign(run, {
        pendingPrompts: run.pendingPrompts.filter((entry) => entry.promptId !== promptId),
        status: 'complete',
        result: workflow.result(answer),
        journalLength: run.journalLength + 1,
        updatedAt: at,
        endedAt: at,
      });
      this.emit('run_updated', { run: structuredClone(run) });
      return {
        accepted: true as const,
        response: { content: answer, ...(choice !== undefined ? { choice } : {}), timestamp: new Date(at) },
      };
    });
  }

  sendToRun(runId: string, message: string, options: { agent?: string } = {}): Promise<void> {
    this.calls.push({ method: 'sendToRun', args: [runId, message, options] });
    return Promise.resolve().then(() => void this.find(runId));
  }

  pauseRun(runId: string): Promise<RunRecord> {
    return this.setStatus('pauseRun', runId, 'paused');
  }

  resumeRun(runId: string): Promise<RunRecord> {
    return this.setStatus('resumeRun', runId, 'waiting');
  }

  abortRun(runId: string, reason?: string): Promise<RunRecord> {
    this.calls.push({ method: 'abortRun', args: [runId, reason] });
    return this.setStatus('abortRun', runId, 'aborted');
  }

  /** A fork is the source's script asked again: a new waiting run naming its origin (the answer, if any, given). */
  forkRun(runId: string, options: ForkRunOptions): Promise<RunRecord> {
    this.calls.push({ method: 'forkRun', args: [runId, options] });
    return Promise.resolve().then(async () => {
      const source = this.find(runId);
      if (!Number.isInteger(options.atStep) || options.atStep < 0 || options.atStep >= source.journalLength)
        throw new ParleyError('RUN_STEP_NOT_FOUND', `Run ${runId} has no step ${options.atStep}.`, { fault: 'user' });
      const fork = await this.startRun({
        workflow: source.workflow.ref,
        ...(source.input !== undefined ? { input: source.input } : {}),
      });
      const run = this.runs.get(fork.id)!;
      run.forkedFrom = {
        runId,
        step: options.atStep,
        ...(options.answer !== undefined ? { answer: options.answer } : {}),
      };
      if (options.answer !== undefined) {
        const outcome = await this.answerPrompt(fork.id, run.pendingPrompts[0]!.promptId, options.answer);
        if (!outcome.accepted)
          throw new ParleyError('ANSWER_REFUSED', outcome.message, { fault: 'user', data: { forkId: fork.id } });
      }
      return structuredClone(this.runs.get(fork.id)!);
    });
  }

  recoverRuns(): Promise<RunRecord[]> {
    this.calls.push({ method: 'recoverRuns', args: [] });
    return this.listRuns({ status: ['running', 'waiting', 'paused'] });
  }

  on<E extends keyof RunServiceEvents>(event: E, listener: (payload: RunServiceEvents[E]) => void): () => void {
    let set = this.listeners.get(event);
    if (!set) {
      set = new Set();
      this.listeners.set(event, set);
    }
    set.add(listener as Listener);
    return () => set.delete(listener as Listener);
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }

  private find(runId: string): RunRecord {
    const run = this.runs.get(runId);
    if (!run)
      throw new ParleyError('RUN_NOT_FOUND', `No run ${runId}. \`parley runs\` lists the runs.`, {
        fault: 'user',
        data: { runId },
      });
    return run;
  }

  private choiceOf(prompt: RunPendingPrompt, response: string): string | undefined {
    if (!prompt.choices) return undefined;
    const text = response.trim();
    const number = Number(text);
    if (Number.isInteger(number) && number >= 1 && number <= prompt.choices.length) return prompt.choices[number - 1];
    return prompt.choices.find((choice) => choice.toLowerCase() === text.toLowerCase());
  }

  private async setStatus(method: string, runId: string, status: RunRecord['status']): Promise<RunRecord> {
    if (method !== 'abortRun') this.calls.push({ method, args: [runId] });
    await Promise.resolve();
    const run = this.find(runId);
    const at = this.stamp();
    Object.assign(run, { status, updatedAt: at, ...(status === 'aborted' ? { pendingPrompts: [], endedAt: at } : {}) });
    this.emit('run_updated', { run: structuredClone(run) });
    return structuredClone(run);
  }

  private stamp(): string {
    return this.now().toISOString();
  }

  private emit<E extends keyof RunServiceEvents>(event: E, payload: RunServiceEvents[E]): void {
    for (const listener of [...(this.listeners.get(event) ?? [])])
      (listener as (payload: RunServiceEvents[E]) => void)(payload);
  }
}

/** The shape of examples/code-review.ts: it waits for the user's approval. */
export const CODE_REVIEW: StandInWorkflow = {
  harness: 'code-review',
  phases: ['review', 'approval'],
  agents: [
    { key: 'reviewer', name: 'Reviewer', sessionId: 'workflow-code-review-reviewer' },
    { key: 'fixer', name: 'Fixer' },
  ],
  question: { prompt: 'Apply the suggested fixes?', choices: ['approve', 'reject'], timeoutMs: 3_600_000 },
  result: (answer) => ({ approved: answer === 'approve' }),
};

/** A free-text question with a validator. */
export const RELEASE_NOTES: StandInWorkflow = {
  harness: 'release-notes',
  phases: ['draft'],
  question: {
    prompt: 'Which version is this?',
    validate: (answer) =>
      /^\d+\.\d+\.\d+$/.test(answer.trim()) ? undefined : `"${answer}" is not a version like 1.2.3.`,
  },
  result: (answer) => ({ version: answer.trim() }),
};
