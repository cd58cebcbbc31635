import { ParleyError } from '../conversation/index.js';
import type { DraftService } from '../draft/index.js';
import { loadWorkflow, resolveWorkflowRef, type RunService, type ScheduleTargets } from '../harness/index.js';
import type { SessionManager } from '../sessions/index.js';
import { UNFINISHED_RUN_STATUSES, type ScheduleTarget } from '../store/index.js';

/** What a server's schedules fire through: its run service, its draft layer and its sessions. */
export interface ServerScheduleTargetSources {
  runService: RunService | undefined;
  drafts: DraftService;
  manager: SessionManager;
  projectRoot: string;
}

/**
 * The server's schedule targets: a workflow target starts a durable run (as `start_run` does), a
 * draft target prompts the draft of its role on its own channel (drafted at the first firing, as a
 * UI's first message is), a session target prompts the draft that runs the session here.
 */
export function createServerScheduleTargets(sources: ServerScheduleTargetSources): ScheduleTargets {
  const { drafts, manager } = sources;
  const runs = (): RunService => {
    if (sources.runService) return sources.runService;
    throw new ParleyError(
      'RUNS_NOT_ENABLED',
      'This server runs no workflows (it was started without a run service), so a schedule cannot start one. Serve the project with `parley serve`.',
      { fault: 'user' },
    );
  };
  return {
    async check(target, scheduleId) {
      switch (target.kind) {
        case 'workflow': {
          runs();
          // The module must exist and define a workflow now, not at its first firing at 3 a.m.
          const resolved = await resolveWorkflowRef(sources.projectRoot, target.workflow);
          await loadWorkflow(resolved.path);
          if (target.project !== undefined) await projectNamed(drafts, target.project);
          return target;
        }
        case 'draft': {
          await projectNamed(drafts, target.project);
          const { roles } = await drafts.listRoles({ project: target.project });
          if (!roles.some((role) => role.name === target.role))
            throw new ParleyError(
              'ROLE_NOT_FOUND',
              `No role "${target.role}" in project "${target.project}". Roles: ${roles.map((role) => role.name).join(', ') || 'none'}.`,
              { fault: 'user', data: { role: target.role, project: target.project } },
            );
          if (target.task !== undefined) {
            const tasks = await drafts.listTasks({ project: target.project });
            if (!tasks.some((task) => task.slug === target.task))
              throw new ParleyError(
                'TASK_NOT_FOUND',
                `No task "${target.task}" in project "${target.project}". Leave the task out to make one at the first firing.`,
                { fault: 'user', data: { task: target.task, project: target.project } },
              );
          }
          return { ...target, channelId: target.channelId ?? `schedule-${scheduleId}` };
        }
        case 'session':
          await manager.getSession(target.sessionId);
          return target;
      }
    },

    async fire(target) {
      switch (target.kind) {
        case 'workflow': {
          const run = await runs().startRun({
            workflow: target.workflow,
            ...(target.input !== undefined ? { input: target.input } : {}),
            ...(target.project !== undefined ? { project: target.project } : {}),
          });
          return { runId: run.id };
        }
        case 'draft': {
          const channelId = target.channelId!;
          const status = await drafts.getDraftStatus({ channelId });
          const result = await drafts.submitPrompt({
            channelId,
            content: target.prompt,
            ...(status.active
              ? {}
              : {
                  draft: {
                    project: target.project,
                    role: target.role,
                    ...(target.task !== undefined ? { task: target.task } : {}),
                  },
                }),
          });
          return { sessionId: result.sessionId };
        }
        case 'session': {
          const channelId = drafts.channelOfSession(target.sessionId);
          if (channelId === undefined)
            throw new ParleyError(
              'NO_ACTIVE_DRAFT',
              `No draft runs session ${target.sessionId} on this server, so the scheduled prompt has nowhere to go. Open the session as a draft again, or point the schedule at a role (a draft target).`,
              { fault: 'user', data: { sessionId: target.sessionId } },
            );
          const result = await drafts.submitPrompt({ channelId, content: target.prompt });
          return { sessionId: result.sessionId };
        }
      }
    },

    async running(firing, target: ScheduleTarget) {
      if (target.kind === 'workflow') {
        if (firing.runId === undefined) return false;
        const run = await runs().getRun(firing.runId);
        return UNFINISHED_RUN_STATUSES.includes(run.status);
      }
      return firing.sessionId !== undefined && manager.turnRunning(firing.sessionId);
    },
  };
}

async function projectNamed(drafts: DraftService, name: string): Promise<void> {
  const projects = await drafts.listProjects();
  if (!projects.some((project) => project.name === name))
    throw new ParleyError(
      'PROJECT_NOT_FOUND',
      `No project "${name}". Projects: ${projects.map((project) => project.name).join(', ') || 'none'}.`,
      { fault: 'user', data: { project: name } },
    );
}
