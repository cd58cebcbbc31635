import { ParleyError } from '../conversation/index.js';
import type { RunService, RunServiceEvents } from '../harness/index.js';
import type { NotificationParams, RunPromptWire, RunWire } from '../protocol/index.js';
import type { RunPendingPrompt, RunRecord } from '../store/index.js';
import type { Handlers } from './dispatcher.js';
import type { Connection } from './hub.js';
import type { RunFollowers } from './run-followers.js';

/**
 * The durable-run methods: thin faces over a `RunService`. The server takes one as an
 * option; without it every run method answers RUNS_NOT_ENABLED (-32007), saying why.
 */

// The store's record and the wire's are restated on each side of the layer line (the protocol may
// not import the store); these fail to compile the moment one changes without the other.
// (The wire's `input` and `state` are optional where the store's are `unknown`: JSON drops an
// undefined value, so a run started without input arrives without the key.)
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Fits<A, B> = [A] extends [B] ? true : false;
const runRecordFitsTheWire: Fits<RunRecord, RunWire> = true;
const runRecordHasTheWireFields: Same<keyof RunRecord, keyof RunWire> = true;
const pendingPromptIsItsWireShape: Same<RunPendingPrompt, RunPromptWire> = true;
void runRecordFitsTheWire;
void runRecordHasTheWireFields;
void pendingPromptIsItsWireShape;

export type RunMethodName =
  | 'list_runs'
  | 'get_run'
  | 'start_run'
  | 'answer_prompt'
  | 'send_to_run'
  | 'pause_run'
  | 'resume_run'
  | 'abort_run'
  | 'fork_run'
  | 'subscribe_runs'
  | 'unsubscribe_runs';

export interface RunHandlerDependencies {
  runService: RunService | undefined;
  followers: RunFollowers;
  /** The project a run started without one belongs to: the server's own. */
  currentProject(): Promise<string | undefined>;
  connection(connectionId: string): Connection;
}

export function createRunHandlers(dependencies: RunHandlerDependencies): Pick<Handlers, RunMethodName> {
  const { followers } = dependencies;
  const service = (method: RunMethodName): RunService => {
    if (dependencies.runService) return dependencies.runService;
    throw new ParleyError(
      'RUNS_NOT_ENABLED',
      `Durable runs are not enabled on this server: it was started without a run service, so ${method} cannot be answered. Serve the project with \`parley serve\` to run workflows.`,
      { fault: 'user', data: { method } },
    );
  };
  return {
    list_runs: async (params) => {
      const runs = await service('list_runs').listRuns({
        ...(params.project !== undefined ? { project: params.project } : {}),
        ...(params.status !== undefined ? { status: params.status } : {}),
      });
      return { runs: params.limit !== undefined ? runs.slice(0, params.limit) : runs };
    },
    get_run: async (params) => ({ run: await service('get_run').getRun(params.runId) }),
    start_run: async (params) => {
      const runs = service('start_run');
      const project = params.project ?? (await dependencies.currentProject());
      return {
        run: await runs.startRun({
          workflow: params.workflow,
          ...(params.input !== undefined ? { input: params.input } : {}),
          ...(project !== undefined ? { project } : {}),
        }),
      };
    },
    answer_prompt: async (params) => {
      const outcome = await service('answer_prompt').answerPrompt(params.runId, params.promptId, params.response);
      return outcome.accepted ? { accepted: true as const } : { accepted: false as const, message: outcome.message };
    },
    send_to_run: async (params) => {
      await service('send_to_run').sendToRun(
        params.runId,
        params.message,
        params.agent !== undefined ? { agent: params.agent } : {},
      );
      return { sent: true as const };
    },
    pause_run: async (params) => ({ run: await service('pause_run').pauseRun(params.runId) }),
    resume_run: async (params) => ({ run: await service('resume_run').resumeRun(params.runId) }),
    abort_run: async (params) => ({ run: await service('abort_run').abortRun(params.runId, params.reason) }),
    fork_run: async (params) => ({
      run: await service('fork_run').forkRun(params.runId, {
        atStep: params.atStep,
        ...(params.answer !== undefined ? { answer: params.answer } : {}),
      }),
    }),
    subscribe_runs: (params, context) => {
      service('subscribe_runs');
      const target = dependencies.connection(context.connectionId);
      followers.subscribe(target, params.runIds, params.events);
      return Promise.resolve(followers.subscriptionOf(target));
    },
    unsubscribe_runs: (params, context) => {
      service('unsubscribe_runs');
      const target = dependencies.connection(context.connectionId);
      followers.unsubscribe(target, params.runIds);
      return Promise.resolve(followers.subscriptionOf(target));
    },
  };
}

/** Forwards each RunServiceEvent to the run's followers as the notification of the same name. */
export function forwardRunEvents(runService: RunService, followers: RunFollowers): Array<() => void> {
  return [
    runService.on('run_updated', (payload) => {
      if (followers.hasFollowers(payload.run.id)) followers.notify(payload.run.id, 'run_updated', payload);
    }),
    runService.on('run_prompt', (payload) => {
      if (followers.hasFollowers(payload.runId)) followers.notify(payload.runId, 'run_prompt', payload);
    }),
    runService.on('run_event', (payload) => {
      if (followers.hasFollowers(payload.runId))
        followers.notify(payload.runId, 'run_event', runEventOnTheWire(payload));
    }),
  ];
}

/** A SessionEvent as JSON carries it: its `timestamp` (a Date in the harness) as ISO 8601. */
function runEventOnTheWire(payload: RunServiceEvents['run_event']): NotificationParams<'run_event'> {
  const { timestamp } = payload.event as { timestamp: unknown };
  return {
    runId: payload.runId,
    event: { ...payload.event, timestamp: timestamp instanceof Date ? timestamp.toISOString() : String(timestamp) },
  };
}
