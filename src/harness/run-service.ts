import { randomUUID } from 'node:crypto';
import type { AgentBackend } from '../backends/index.js';
import type { HookRunner } from '../hooks/index.js';
import { TURN_MARKER, type SessionManager } from '../sessions/index.js';
import {
  UNFINISHED_RUN_STATUSES,
  type RunError,
  type RunJournalEntry,
  type RunPendingPrompt,
  type RunRecord,
  type RunStatus,
  type RunStore,
} from '../store/index.js';
import { systemClock, type HarnessClock } from './clock.js';
import { HarnessError, ReplayDivergenceError, truncate } from './errors.js';
import type { SessionEvent, UserReply } from './events.js';
import { loadWorkflow as importWorkflow } from './load-workflow.js';
import { planRunFork, type ForkRunOptions } from './run-fork.js';
import { RunJournal } from './run-journal.js';
import type { RunFilter, RunService, RunServiceEvents, StartRunRequest } from './run-service-types.js';
import { HarnessRuntime, type AnyHarnessDefinition, type Outcome } from './runtime.js';
import type { AnyHarness, ReplyOutcome } from './types.js';
import { resolveWorkflowRef } from './workflow-ref.js';
import { followRunHooks } from './run-hooks.js';

/** Options of `createRunService`: the run store, the session manager, the project root and how workflows are found. */
export interface RunServiceOptions {
  /** Where runs and their journals are kept. */
  runStore: RunStore;
  /** Where the runs' agents keep their sessions (the same store's, so a run and its sessions survive together). */
  sessionManager: SessionManager;
  /** The project folder: workflow paths are relative to it and its `parley.config.json` names workflows. */
  projectRoot: string;
  /** The folder of a named project (a request's `project`); without it every run uses `projectRoot`. */
  projectRootOf?: (project: string) => string | Promise<string>;
  /** Loads a workflow module (default: `parley run`'s loader: import it, tsx for .ts). */
  loadWorkflow?: (path: string) => Promise<AnyHarness>;
  /** Replaces agents' back ends by agent key, for every run (tests run workflows on scripted back ends this way). */
  backends?: Partial<Record<string, AgentBackend>>;
  /** Where runs read the time and time their prompts (default: the system clock). */
  clock?: HarnessClock;
  /** People's hooks: `RunUpdate` runs when a run changes phase or status (default: the session manager's). */
  hooks?: HookRunner;
  /** Where a failing `RunUpdate` hook is reported. */
  reportHookFailure?: (line: string) => void;
  /** How long a resumed step the journal never saw may wait for the replay to end before it is a divergence (default 5000 ms). */
  stallTimeoutMs?: number;
}

type Listener<E extends keyof RunServiceEvents> = (payload: RunServiceEvents[E]) => void;

/** A run executing in this process. */
interface LiveRun {
  record: RunRecord;
  runtime: HarnessRuntime;
  journal: RunJournal;
  /** Re-executing from the journal: its events are not news. */
  replaying: boolean;
  /** Stopped by close(): its stored status stays as it was. */
  closing: boolean;
  /** Record writes, one at a time; `dirty` asks for one more after the current. */
  writing: Promise<void>;
  dirty: boolean;
  settled: Promise<RunRecord>;
  /** Resolves once the run is live (its replay ended) or over: answers and messages wait for it. */
  ready: Promise<void>;
}

/**
 * Durable harness runs: each is a stored record and a journal; after a restart
 * `recoverRuns()` re-executes every unfinished run from its journal, then it goes on live.
 */
export function createRunService(options: RunServiceOptions): RunService {
  return new DurableRunService(options);
}

class DurableRunService implements RunService {
  private readonly live = new Map<string, LiveRun>();
  private readonly listeners = new Map<keyof RunServiceEvents, Set<(payload: never) => void>>();
  private readonly clock: HarnessClock;
  private closed = false;

  constructor(private readonly options: RunServiceOptions) {
    this.clock = options.clock ?? systemClock;
    const hooks = options.hooks ?? options.sessionManager.hooks;
    if (hooks) followRunHooks(this, hooks, options.projectRoot, options.reportHookFailure);
  }

  // ---- starting and finding runs --------------------------------------------------------------

  async startRun(request: StartRunRequest): Promise<RunRecord> {
    this.throwIfClosed();
    const input = jsonCopy(request.input, 'the run input');
    const root = await this.rootOf(request.project);
    const workflow = await resolveWorkflowRef(root, request.workflow);
    const harness = await this.load(workflow.path);
    const definition = harness.definition as AnyHarnessDefinition;
    const now = this.isoNow();
    const record: RunRecord = {
      id: `run-${randomUUID()}`,
      harness: harness.name,
      workflow,
      ...(request.project !== undefined ? { project: request.project } : {}),
      input,
      state: jsonCopy(definition.state ? definition.state(input) : {}, 'the initial state'),
      status: 'running',
      phases: [],
      pendingPrompts: [],
      agents: Object.entries(definition.agents).map(([key, agent]) => ({ key, name: agent.name })),
      journalLength: 0,
      createdAt: now,
      updatedAt: now,
    };
    const stored = await this.options.runStore.createRun(record);
    this.launch(stored, harness, []);
    this.emit('run_updated', { run: stored });
    return structuredClone(stored);
  }

  async listRuns(filter?: RunFilter): Promise<RunRecord[]> {
    const stored = await this.options.runStore.listRuns(filter);
    return stored.map((record) => structuredClone(this.live.get(record.id)?.record ?? record));
  }

  async getRun(runId: string): Promise<RunRecord> {
    const live = this.live.get(runId);
    if (live) return structuredClone(live.record);
    return this.stored(runId);
  }

  // ---- the user's side ---------------------------------------------------------------------------

  async answerPrompt(runId: string, promptId: string, response: string): Promise<ReplyOutcome> {
    const live = await this.liveRun(runId, 'answer its prompts');
    const outcome = live.runtime.reply(promptId, response as UserReply);
    await this.durable(live);
    if (outcome.accepted) this.scheduleWrite(live);
    return outcome;
  }

  async sendToRun(runId: string, message: string, options: { agent?: string } = {}): Promise<void> {
    const live = await this.liveRun(runId, 'send it messages');
    const agent = live.runtime.checkSend(message, options.agent);
    // Journaled before it is delivered: a message taken in is never lost to a crash.
    await live.journal.record({
      kind: 'send',
      content: message,
      ...(agent !== undefined ? { agent } : {}),
      timestamp: this.clock.now(),
    });
    live.runtime.send(message, agent);
  }

  async pauseRun(runId: string): Promise<RunRecord> {
    const live = this.live.get(runId);
    if (live) {
      live.runtime.pause();
      return this.writeNow(live);
    }
    const record = await this.stored(runId);
    if (!isUnfinished(record.status)) throw runEnded(record, 'paused');
    return this.save({ ...record, status: 'paused' });
  }

  async resumeRun(runId: string): Promise<RunRecord> {
    this.throwIfClosed();
    const live = this.live.get(runId);
    if (live) {
      live.runtime.resume();
      return this.writeNow(live);
    }
    const record = await this.stored(runId);
    if (record.status === 'complete' || record.status === 'aborted') throw runEnded(record, 'resumed');
    const { error: _error, endedAt: _endedAt, ...rest } = record;
    return this.relaunch({
      ...rest,
      status: record.status === 'paused' ? 'running' : record.status === 'failed' ? 'running' : record.status,
    });
  }

  async abortRun(runId: string, reason?: string): Promise<RunRecord> {
    const live = this.live.get(runId);
    if (live) {
      live.runtime.abort(reason);
      return live.settled;
    }
    const record = await this.stored(runId);
    if (record.status === 'aborted') return record;
    if (record.status === 'complete') throw runEnded(record, 'aborted');
    const now = this.isoNow();
    return this.save({
      ...record,
      status: 'aborted',
      pendingPrompts: [],
      endedAt: now,
      ...(reason !== undefined ? { error: { code: 'ABORTED', message: reason } } : {}),
    });
  }

  async forkRun(runId: string, options: ForkRunOptions): Promise<RunRecord> {
    this.throwIfClosed();
    const source = await this.stored(runId);
    const plan = planRunFork(source, await this.options.runStore.readJournal(source.id), options, this.clock.now());
    const harness = await this.load(source.workflow.path);
    checkHarness(source, harness);
    const definition = harness.definition as AnyHarnessDefinition;
    const state = jsonCopy(definition.state ? definition.state(source.input) : {}, 'the initial state');

    // The fork's agents go on in sessions of their own, holding what the replayed turns said.
    const entries = [...plan.entries];
    for (const session of [...plan.sessions].reverse()) {
      if (session.turns === 0) {
        // No turn of it is replayed: the fork's agent opens a new session when it first runs.
        entries.splice(session.position, 1);
        continue;
      }
      const at = await sessionCut(this.options.sessionManager, session.sessionId, session.turns);
      const fork = await this.options.sessionManager.forkSession(session.sessionId, at !== undefined ? { at } : {});
      entries[session.position] = {
        kind: 'session',
        data: { ...entries[session.position]!.data, sessionId: fork.sessionId },
      };
    }

    const now = this.isoNow();
    const id = `run-${randomUUID()}`;
    const forkedFrom = {
      runId: source.id,
      step: options.atStep,
      ...(options.answer !== undefined ? { answer: options.answer } : {}),
    };
    // Stored as failed until its journal is whole: a crash in between leaves no half fork that would run.
    const draft: RunRecord = {
      id,
      harness: source.harness,
      workflow: source.workflow,
      ...(source.project !== undefined ? { project: source.project } : {}),
      input: source.input,
      state,
      status: 'failed',
      error: {
        code: 'FORK_INCOMPLETE',
        message: `This fork of run ${source.id} stopped before its journal was copied; fork ${source.id} again.`,
      },
      phases: [],
      pendingPrompts: [],
      agents: source.agents.map(({ key, name }) => ({ key, name })),
      journalLength: 0,
      forkedFrom,
      createdAt: now,
      updatedAt: now,
    };
    await this.options.runStore.createRun(draft);
    const written = entries.length > 0 ? await this.options.runStore.appendJournal(id, entries) : [];
    const { error: _error, ...whole } = draft;
    const stored = await this.save({ ...whole, status: 'running', journalLength: written.length });
    const live = this.launch(stored, harness, written);
    await live.ready;
    if (
      plan.answer &&
      this.live.get(id) === live &&
      live.runtime.pendingPrompts().some((prompt) => prompt.promptId === plan.answer!.promptId)
    ) {
      const outcome = live.runtime.reply(plan.answer.promptId, plan.answer.content);
      if (!outcome.accepted) {
        live.runtime.abort(`its answer "${truncate(plan.answer.content, 60)}" was refused`);
        await live.settled;
        throw new HarnessError(
          'ANSWER_REFUSED',
          `The question at step ${options.atStep} of run ${source.id} refused the answer "${truncate(plan.answer.content, 60)}": ${outcome.message} The fork ${id} was aborted; fork again with another answer.`,
          { fault: 'user', data: { runId: source.id, atStep: options.atStep, forkId: id } },
        );
      }
      await this.durable(live);
    }
    return this.writeNow(live);
  }

  async recoverRuns(): Promise<RunRecord[]> {
    this.throwIfClosed();
    const unfinished = await this.options.runStore.listRuns({ status: UNFINISHED_RUN_STATUSES });
    const recovered: RunRecord[] = [];
    for (const record of unfinished) {
      if (this.live.has(record.id)) continue;
      try {
        recovered.push(await this.relaunch(record));
      } catch (error) {
        // One run whose module cannot load must not keep the others down: it waits as failed.
        recovered.push(await this.fail(record, error));
      }
    }
    return recovered;
  }

  on<E extends keyof RunServiceEvents>(event: E, listener: Listener<E>): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(listener as (payload: never) => void);
    return () => set.delete(listener as (payload: never) => void);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const runs = [...this.live.values()];
    for (const live of runs) {
      live.closing = true;
      live.journal.stopped = true;
      live.runtime.abort('the run service is stopping');
    }
    await Promise.allSettled(runs.map((live) => live.settled));
  }

  // ---- running ------------------------------------------------------------------------------------

  private async relaunch(record: RunRecord): Promise<RunRecord> {
    const harness = await this.load(record.workflow.path);
    checkHarness(record, harness);
    const entries = await this.options.runStore.readJournal(record.id);
    const live = this.launch({ ...record, phases: [] }, harness, entries);
    return structuredClone(live.record);
  }

  private launch(record: RunRecord, harness: AnyHarness, entries: readonly RunJournalEntry[]): LiveRun {
    const definition = harness.definition as AnyHarnessDefinition;
    const state = definition.state ? definition.state(record.input) : {};
    const runtime = new HarnessRuntime(definition, record.input, state, {
      sessionManager: this.options.sessionManager,
      ...(this.options.backends ? { backends: this.options.backends } : {}),
    });
    runtime.interactive = true;
    runtime.clock = this.clock;
    const journal = new RunJournal(
      this.options.runStore,
      record.id,
      entries,
      this.options.stallTimeoutMs !== undefined ? { stallTimeoutMs: this.options.stallTimeoutMs } : {},
    );
    let settle!: (record: RunRecord) => void;
    let becomeReady!: () => void;
    const live: LiveRun = {
      record,
      runtime,
      journal,
      replaying: entries.length > 0,
      closing: false,
      writing: Promise.resolve(),
      dirty: false,
      settled: new Promise((resolve) => (settle = resolve)),
      ready: new Promise((resolve) => (becomeReady = resolve)),
    };
    void live.settled.then(() => becomeReady());
    this.live.set(record.id, live);
    runtime.log.on('*', (event) => this.observe(live, event));
    runtime.attachJournal(journal, () => {
      becomeReady();
      if (!live.replaying) return;
      live.replaying = false;
      this.scheduleWrite(live);
    });
    // A paused run stays paused across a restart: it replays, then holds at its next step.
    if (record.status === 'paused') runtime.pause();
    runtime.start().then(
      (outcome) => this.finish(live, outcome).then(settle),
      (error: unknown) => this.finish(live, { kind: 'failed', error }).then(settle),
    );
    return live;
  }

  /** Keeps the record in step with the run's events, and tells listeners what is news. */
  private observe(live: LiveRun, event: SessionEvent): void {
    if (live.closing) return;
    const record = live.record;
    let changed = false;
    switch (event.type) {
      case 'phase:start':
        record.phase = event.name;
        record.phases.push(event.name);
        changed = true;
        break;
      case 'agent:start': {
        // Only a new session is news for the record: a turn alone does not rewrite it.
        const agent = record.agents.find((candidate) => candidate.key === event.agent);
        if (agent && agent.sessionId !== event.sessionId) {
          agent.sessionId = event.sessionId;
          changed = true;
        }
        break;
      }
      default:
        break;
    }
    // Events of steps fed from the journal (the last one's too) happened before the restart: not news.
    if (live.replaying || live.runtime.emittingReplayed) return;
    this.emit('run_event', { runId: record.id, event });
    switch (event.type) {
      case 'user:prompt': {
        this.scheduleWrite(live);
        const prompt = this.pendingPrompts(live).find((candidate) => candidate.promptId === event.promptId);
        // A question asked before a restart is the same question, not a new one.
        if (prompt && !live.journal.has(`prompt:${event.promptId}`))
          this.emit('run_prompt', { runId: record.id, prompt });
        break;
      }
      case 'phase:start':
      case 'agent:start':
        if (changed) this.scheduleWrite(live);
        break;
      case 'user:reply':
      case 'user:timeout':
      case 'session:paused':
      case 'session:resumed':
        this.scheduleWrite(live);
        break;
      default:
        break;
    }
  }

  private async finish(live: LiveRun, outcome: Outcome): Promise<RunRecord> {
    await live.journal.flushed();
    await live.writing;
    this.live.delete(live.record.id);
    if (live.closing) return structuredClone(live.record);
    const now = this.isoNow();
    const base = { ...this.snapshot(live), pendingPrompts: [], updatedAt: now, endedAt: now };
    let record: RunRecord;
    if (outcome.kind === 'complete') {
      record = { ...base, status: 'complete', result: jsonCopyOrUndefined(outcome.result) };
    } else if (outcome.kind === 'aborted') {
      const reason = live.runtime.abortReason;
      record = {
        ...base,
        status: 'aborted',
        ...(reason !== undefined ? { error: { code: 'ABORTED', message: reason } } : {}),
      };
    } else {
      const { endedAt: _endedAt, ...open } = base;
      record = { ...open, status: 'failed', error: runErrorOf(outcome.error) };
    }
    live.record = record;
    return this.save(record);
  }

  private async fail(record: RunRecord, error: unknown): Promise<RunRecord> {
    return this.save({
      ...record,
      status: 'failed',
      pendingPrompts: [],
      error: runErrorOf(error),
      updatedAt: this.isoNow(),
    });
  }

  // ---- the record -----------------------------------------------------------------------------------

  /** The live run's record as of now. */
  private snapshot(live: LiveRun): RunRecord {
    const runtime = live.runtime;
    const status: RunStatus =
      runtime.status === 'complete' || runtime.status === 'aborted' ? live.record.status : runtime.status;
    return {
      ...live.record,
      status,
      state: jsonCopyOrUndefined(runtime.state) ?? live.record.state,
      pendingPrompts: this.pendingPrompts(live),
      journalLength: live.journal.size,
      updatedAt: this.isoNow(),
    };
  }

  private pendingPrompts(live: LiveRun): RunPendingPrompt[] {
    return live.runtime.pendingPrompts().map((prompt) => ({
      promptId: prompt.promptId,
      prompt: prompt.prompt,
      ...(prompt.choices ? { choices: prompt.choices } : {}),
      ...(prompt.defaultChoice !== undefined ? { defaultChoice: prompt.defaultChoice } : {}),
      askedAt: new Date(prompt.askedAt ?? this.clock.now()).toISOString(),
      ...(prompt.deadline !== undefined ? { deadline: new Date(prompt.deadline).toISOString() } : {}),
    }));
  }

  /** Writes the live run's record soon: writes are one at a time, and a burst of changes makes one more write. */
  private scheduleWrite(live: LiveRun): void {
    if (live.closing || live.replaying) return;
    if (live.dirty) return;
    live.dirty = true;
    live.writing = live.writing.then(async () => {
      live.dirty = false;
      if (!this.live.has(live.record.id) || live.closing) return;
      live.record = this.snapshot(live);
      await this.save(live.record).catch((error: unknown) =>
        process.emitWarning(`Saving run ${live.record.id} failed: ${String(error)}`),
      );
    });
  }

  private async writeNow(live: LiveRun): Promise<RunRecord> {
    this.scheduleWrite(live);
    await live.writing;
    return structuredClone(live.record);
  }

  private async save(record: RunRecord): Promise<RunRecord> {
    const saved = await this.options.runStore.updateRun(record);
    this.emit('run_updated', { run: saved });
    return structuredClone(saved);
  }

  // ---- helpers --------------------------------------------------------------------------------------

  /** Waits until the run's journal holds everything taken in so far; a failed append is the caller's error. */
  private async durable(live: LiveRun): Promise<void> {
    await live.journal.flushed();
    if (live.journal.failure !== undefined) throw live.journal.failure;
  }

  private async liveRun(runId: string, what: string): Promise<LiveRun> {
    this.throwIfClosed();
    const found = this.live.get(runId);
    if (found) {
      // A recovering run takes answers once its replay has reopened its questions.
      await found.ready;
      if (this.live.get(runId) === found) return found;
    }
    const record = await this.stored(runId);
    if (!isUnfinished(record.status)) throw runEnded(record, `asked to ${what}`);
    throw new HarnessError(
      'RUN_NOT_FOUND',
      `Run ${runId} is ${record.status} but not running in this process; resume it first (resumeRun) to ${what}.`,
      {
        fault: 'user',
        data: { runId, status: record.status },
      },
    );
  }

  private async stored(runId: string): Promise<RunRecord> {
    const record = await this.options.runStore.getRun(runId);
    if (!record)
      throw new HarnessError('RUN_NOT_FOUND', `No run "${runId}". List runs to see the ids that exist.`, {
        fault: 'user',
        data: { runId },
      });
    return record;
  }

  private async load(path: string): Promise<AnyHarness> {
    return (this.options.loadWorkflow ?? importWorkflow)(path);
  }

  private async rootOf(project: string | undefined): Promise<string> {
    if (project === undefined || !this.options.projectRootOf) return this.options.projectRoot;
    return this.options.projectRootOf(project);
  }

  private emit<E extends keyof RunServiceEvents>(event: E, payload: RunServiceEvents[E]): void {
    for (const listener of this.listeners.get(event) ?? []) {
      try {
        (listener as Listener<E>)(payload);
      } catch (error) {
        process.emitWarning(`A run service listener threw: ${String(error)}`);
      }
    }
  }

  private isoNow(): string {
    return new Date(this.clock.now()).toISOString();
  }

  private throwIfClosed(): void {
    if (this.closed)
      throw new HarnessError('SESSION_ENDED', 'The run service is closed; create a new one to run workflows.', {
        fault: 'system',
      });
  }
}

/** The workflow module still defines the run's harness, or the journal belongs to other code. */
function checkHarness(record: RunRecord, harness: AnyHarness): void {
  if (harness.name === record.harness) return;
  throw new HarnessError(
    'REPLAY_DIVERGED',
    `Run ${record.id} is of the "${record.harness}" workflow, but ${record.workflow.path} now defines "${harness.name}".`,
    { fault: 'user', data: { runId: record.id } },
  );
}

/**
 * The seq an agent session is cut at so it holds its first `turns` turns: the event before the
 * message that opened the next turn (undefined: the session's end).
 */
async function sessionCut(manager: SessionManager, sessionId: string, turns: number): Promise<number | undefined> {
  let opened = 0;
  for (const event of await manager.getEvents(sessionId)) {
    if (event.type !== 'block_start' || event.block.type !== 'user_message') continue;
    if (event.block.metadata?.[TURN_MARKER] !== true) continue;
    if (opened === turns) return event.seq - 1;
    opened += 1;
  }
  return undefined;
}

function isUnfinished(status: RunStatus): boolean {
  return UNFINISHED_RUN_STATUSES.includes(status);
}

function runEnded(record: RunRecord, what: string): HarnessError {
  return new HarnessError('RUN_ENDED', `Run ${record.id} is ${record.status}; it cannot be ${what}.`, {
    fault: 'user',
    data: { runId: record.id, status: record.status },
  });
}

function runErrorOf(error: unknown): RunError {
  if (error instanceof ReplayDivergenceError)
    return { code: error.code, message: error.message, step: error.stepName ?? `step ${error.step}` };
  const code =
    typeof (error as { code?: unknown } | null)?.code === 'string'
      ? (error as { code: string }).code
      : 'WORKFLOW_FAILED';
  return { code, message: error instanceof Error ? error.message : String(error) };
}

function jsonCopy(value: unknown, what: string): unknown {
  if (value === undefined) return undefined;
  try {
    return JSON.parse(JSON.stringify(value)) as unknown;
  } catch (error) {
    throw new HarnessError(
      'INVALID_INPUT',
      `A durable run keeps ${what} as JSON, and this value is not JSON: ${(error as Error).message}.`,
      { fault: 'user' },
    );
  }
}

function jsonCopyOrUndefined(value: unknown): unknown {
  try {
    return value === undefined ? undefined : (JSON.parse(JSON.stringify(value)) as unknown);
  } catch {
    return undefined;
  }
}
