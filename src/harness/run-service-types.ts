import type { RunRecord, RunStatus } from '../store/index.js';
import type { SessionEvent } from './events.js';
import type { ForkRunOptions } from './run-fork.js';
import type { ReplyOutcome } from './types.js';

/**
 * The durable-runs service: every harness run started through it is a stored record
 * with an append-only journal, resumable after a crash by re-executing the workflow from its start
 * on the journaled results. The server's run methods (`list_runs`, `get_run`, `start_run`,
 * `answer_prompt`, `send_to_run`, `pause_run`, `resume_run`, `abort_run`) and the CLI's `run
 * --detach`, `runs` and `answer` are thin faces over this interface.
 */
export interface RunService {
  /** Loads the workflow, stores the run and starts it; resolves once the record is stored. */
  startRun(request: StartRunRequest): Promise<RunRecord>;
  /** Newest first. */
  listRuns(filter?: RunFilter): Promise<RunRecord[]>;
  /** Throws RUN_NOT_FOUND. */
  getRun(runId: string): Promise<RunRecord>;
  /**
   * Answers a pending prompt. A reply the choices or the validator refuse comes back as
   * `{ accepted: false, message }` and the prompt keeps waiting. Throws RUN_NOT_FOUND,
   * UNKNOWN_PROMPT, or PROMPT_ALREADY_ANSWERED (the second answer to one prompt).
   */
  answerPrompt(runId: string, promptId: string, response: string): Promise<ReplyOutcome>;
  /** `send` (no agent) or `sendTo` (an agent's name); journaled before it is delivered. */
  sendToRun(runId: string, message: string, options?: { agent?: string }): Promise<void>;
  pauseRun(runId: string): Promise<RunRecord>;
  /**
   * A paused run goes on; an unfinished run that is not live in this process (after a restart) is
   * re-executed from its journal, then goes on live. A `failed` run is started again from its journal.
   */
  resumeRun(runId: string): Promise<RunRecord>;
  abortRun(runId: string, reason?: string): Promise<RunRecord>;
  /**
   * A new run of the source's workflow that replays the source's journal through `atStep`, then
   * goes on live; with `answer`, the question at that step gets that answer instead of the one
   * journaled ("what if I had said No"). Each agent session the replayed steps used is forked at
   * the end of the last turn kept, so the fork's agents remember what they said and the source's
   * sessions take nothing new. The source run is not changed. Resolves once the fork is live (and
   * its answer, if any, taken). Throws RUN_NOT_FOUND, RUN_STEP_NOT_FOUND (a step the journal does
   * not have), NOT_A_QUESTION (an answer at a step that is no question) or ANSWER_REFUSED (not
   * one of the question's choices), having changed nothing; an answer the question's validator
   * refuses is ANSWER_REFUSED too, and the fork is then aborted.
   */
  forkRun(runId: string, options: ForkRunOptions): Promise<RunRecord>;
  /** Resumes every unfinished run (what `parley serve` does at start); resolves with them. */
  recoverRuns(): Promise<RunRecord[]>;
  on<E extends keyof RunServiceEvents>(event: E, listener: (payload: RunServiceEvents[E]) => void): () => void;
  /** Stops live runs without changing their stored status, so a later process resumes them. */
  close(): Promise<void>;
}

/** What starting a durable run needs: the workflow's name or path, its input and its project. */
export interface StartRunRequest {
  /** A workflow module under the project (relative to its root), or a name in `parley.config.json`. */
  workflow: string;
  input?: unknown;
  /** The project the run belongs to. */
  project?: string;
}

/** What `listRuns` selects on: project and status. */
export interface RunFilter {
  project?: string;
  status?: RunStatus[];
}

/** What the service tells its listeners; the server forwards each as the same-named notification. */
export interface RunServiceEvents {
  /** The record changed (status, phase, prompts, agents, result). */
  run_updated: { run: RunRecord };
  /** One event of the run's SessionEvent stream, as it happens (live, not replayed ones). */
  run_event: { runId: string; event: SessionEvent };
  /** A new prompt waits for an answer. */
  run_prompt: { runId: string; prompt: RunRecord['pendingPrompts'][number] };
}
