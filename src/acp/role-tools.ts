import { randomUUID } from 'node:crypto';
import type { AgentBackend, ToolDefinition } from '../backends/index.js';
import {
  compileOutputSchema,
  createParleyTools,
  DraftError,
  projectInfo,
  type ProjectCatalog,
  type ProjectLocation,
  type RoleInfo,
  type ToolHandlers,
  type Workers,
} from '../draft/index.js';

/**
 * Parley's own tools for the role a session runs as (its mode), gated by the role's permissions
 * exactly as a drafted agent's are (the draft layer's `createParleyTools`): tasks and roles,
 * projects, and worker agents for roles with `agent-draft`. Workers write their thread into the
 * session's log, so the ACP face shows each as a tool call streaming the worker's answer.
 */
export interface RoleToolsContext {
  sessionId: string;
  role: RoleInfo;
  project: ProjectLocation;
  catalog: ProjectCatalog;
  workers: Workers;
  /** The back end a worker's role asks for (its `backend`/`model`, else the session's). */
  backendFor: (name?: string, model?: string) => AgentBackend;
  defaultAwaitTimeoutMs: number;
}

export function roleTools(context: RoleToolsContext, allowAgentTools = true): ToolDefinition[] {
  const { catalog, project, workers, sessionId } = context;
  const ownWorker = (agentId: string): void => {
    const agent = workers.get(agentId);
    if (!agent || agent.parentSessionId !== sessionId) {
      throw new DraftError('NOT_FOUND', `No worker "${agentId}" of yours. list_agents shows the workers you started.`, {
        fault: 'model',
        data: { agentId },
      });
    }
  };
  const handlers: ToolHandlers = {
    listTasks: async (name) => catalog.listTasks(name === undefined ? project : await catalog.resolve(name)),
    listRoles: () => catalog.loadRoles(project),
    listProjects: async () => (await catalog.list()).map(projectInfo),
    createProject: async (input) => projectInfo(await catalog.create(input)),
    createTask: async (input) =>
      catalog.createTask(input.project === undefined ? project : await catalog.resolve(input.project), {
        title: input.title,
        ...(input.description !== undefined ? { description: input.description } : {}),
        ...(input.slug !== undefined ? { slug: input.slug } : {}),
      }),
    draftAgent: async (input, _signal, traceContext) => {
      const { roles } = await catalog.loadRoles(project);
      const workerRole = roles.find((role) => role.name === input.role);
      if (!workerRole)
        throw new DraftError(
          'NOT_FOUND',
          `No role "${input.role}". Roles: ${roles.map((role) => role.name).join(', ')}.`,
          { fault: 'model', data: { role: input.role } },
        );
      const agentId = `${workerRole.name.slice(0, 40)}-${randomUUID().slice(0, 8)}`;
      const validator = input.outputSchema ? compileOutputSchema(input.outputSchema) : undefined;
      await workers.dispatch({
        agentId,
        role: workerRole,
        prompt: input.prompt,
        backend: context.backendFor(workerRole.backend, workerRole.model),
        tools: roleTools({ ...context, role: workerRole }, false),
        target: { sessionId, conversationId: agentId },
        project: project.name,
        cwd: project.path,
        parentSessionId: sessionId,
        ...(validator ? { validator } : {}),
        ...(traceContext ? { traceParent: traceContext } : {}),
      });
      return { agentId, status: workers.get(agentId)?.status ?? 'queued' };
    },
    awaitAgent: (input, signal) => {
      ownWorker(input.agentId);
      const timeoutMs =
        input.timeoutSeconds === undefined ? context.defaultAwaitTimeoutMs : input.timeoutSeconds * 1000;
      return workers.wait(input.agentId, { timeoutMs, ...(signal ? { signal } : {}) });
    },
    killAgent: async (agentId) => {
      ownWorker(agentId);
      return { killed: workers.kill(agentId) };
    },
    listAgents: async () => workers.list((agent) => agent.parentSessionId === sessionId),
  };
  return createParleyTools({ permissions: context.role.permissions, handlers, allowAgentTools });
}
