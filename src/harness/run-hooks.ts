import type { HookRunner } from '../hooks/index.js';
import type { RunStatus } from '../store/index.js';
import type { RunService } from './run-service-types.js';

/**
 * Runs `RunUpdate` hooks when a durable run changes phase or status (not on every record write:
 * a prompt added or an agent's session linked is not an update of the run's course). The matcher
 * selects by the new status. A failing hook is reported through `report`; it never touches the run.
 */
export function followRunHooks(
  service: Pick<RunService, 'on'>,
  runner: HookRunner,
  cwd: string,
  report: (line: string) => void = () => undefined,
): () => void {
  const last = new Map<string, { status: RunStatus; phase: string | undefined }>();
  return service.on('run_updated', ({ run }) => {
    const before = last.get(run.id);
    if (before && before.status === run.status && before.phase === run.phase) return;
    last.set(run.id, { status: run.status, phase: run.phase });
    // A finished run changes no more: its entry is not kept.
    if (run.status === 'complete' || run.status === 'aborted') last.delete(run.id);
    if (!runner.has('RunUpdate', run.status)) return;
    const sessionId = run.agents.find((agent) => agent.sessionId)?.sessionId ?? '';
    runner
      .run(
        {
          session_id: sessionId,
          cwd,
          hook_event_name: 'RunUpdate',
          run_id: run.id,
          harness: run.harness,
          workflow: run.workflow.ref,
          ...(run.project !== undefined ? { project: run.project } : {}),
          status: run.status,
          ...(before ? { previous_status: before.status } : {}),
          ...(run.phase !== undefined ? { phase: run.phase } : {}),
          ...(before?.phase !== undefined ? { previous_phase: before.phase } : {}),
          pending_prompts: run.pendingPrompts.map((prompt) => ({ prompt_id: prompt.promptId, prompt: prompt.prompt })),
          ...(run.error ? { error: { code: run.error.code, message: run.error.message } } : {}),
        },
        { matchValue: run.status },
      )
      .then(
        (outcome) => {
          for (const failure of outcome.failures)
            report(`hooks: the RunUpdate hook \`${failure.target}\` (${failure.source}) failed: ${failure.reason}`);
        },
        () => undefined,
      );
  });
}
