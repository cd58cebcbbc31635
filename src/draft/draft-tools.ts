import { closeConversation, openConversation, say } from './conversations.js';
import { randomUUID } from 'node:crypto';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { AgentBackend } from '../backends/index.js';
import { workspaceToolsFor } from './draft-permissions.js';
import { nativeApprover } from '../workspace/index.js';
import { resolveBackend } from './draft-backends.js';
import { createProject, createTask, listProjects, resolveRole } from './draft-catalog.js';
import { requireDraft } from './draft-lifecycle.js';
import { assertOpen, type DraftServiceState } from './draft-state.js';
import { DraftError } from './errors.js';
import { createDraftMcpServer } from './mcp-server.js';
import type { ProjectLocation } from './projects.js';
import { compileOutputSchema } from './structured-output.js';
import { createParleyTools, type ParleyTool, type ToolHandlers } from './tools.js';
import type { AgentInfo, RoleInfo } from './types.js';

// What a drafted agent can reach: its tools (catalog calls and its own workers), gated by its role,
// also as an MCP server; and the agents list and kill calls of the service.

/**
 * The tools of a drafting context, gated by the role's permissions: Parley's orchestration tools,
 * and on a managed back end the workspace tools (files, search, commands) rooted at the project.
 * `conversationId` is a worker's thread in the drafting session (where its approvals show).
 */
export async function toolsFor(
  state: DraftServiceState,
  owner: { sessionId: string; channelId: string; project: string; taskSlug?: string },
  role: RoleInfo,
  project: ProjectLocation,
  allowAgentTools: boolean,
  backend: AgentBackend,
  conversationId?: string,
): Promise<ParleyTool[]> {
  const handlers: ToolHandlers = {
    listTasks: async (name) =>
      state.catalog.listTasks(name === undefined ? project : await state.catalog.resolve(name)),
    listRoles: () => state.catalog.loadRoles(project),
    listProjects: () => listProjects(state),
    createProject: (input) => createProject(state, input),
    createTask: (input) =>
      createTask(state, {
        project: input.project ?? project.name,
        title: input.title,
        ...(input.description !== undefined ? { description: input.description } : {}),
        ...(input.slug !== undefined ? { slug: input.slug } : {}),
      }),
    draftAgent: async (input, _signal, traceContext) => {
      assertOpen(state);
      const workerRole = await resolveRole(state, project, input.role);
      const validator = input.outputSchema ? compileOutputSchema(input.outputSchema) : undefined;
      const backend = resolveBackend(state, workerRole.backend, workerRole.model, workerRole.name);
      const agentId = `${workerRole.name.slice(0, 40)}-${randomUUID().slice(0, 8)}`;
      await state.workers.dispatch({
        agentId,
        role: workerRole,
        prompt: input.prompt,
        backend,
        tools: await toolsFor(state, { ...owner }, workerRole, project, false, backend, agentId),
        target: { sessionId: owner.sessionId, conversationId: agentId },
        project: project.name,
        cwd: project.path,
        channelId: owner.channelId,
        parentSessionId: owner.sessionId,
        askApproval: nativeApprover(state.broker, {
          sessionId: owner.sessionId,
          conversationId: agentId,
          root: project.path,
        }),
        ...(validator ? { validator } : {}),
        ...(owner.taskSlug ? { taskSlug: owner.taskSlug } : {}),
        ...(traceContext ? { traceParent: traceContext } : {}),
      });
      return { agentId, status: state.workers.get(agentId)?.status ?? 'queued' };
    },
    awaitAgent: (input, signal) => {
      ownWorker(state, owner.sessionId, input.agentId);
      const timeoutMs = input.timeoutSeconds === undefined ? state.defaultAwaitTimeoutMs : input.timeoutSeconds * 1000;
      return state.workers.wait(input.agentId, { timeoutMs, ...(signal ? { signal } : {}) });
    },
    killAgent: async (agentId) => {
      // A conversation is an agent too: killing it closes it.
      if (!state.workers.get(agentId)) {
        const closed = await closeConversation(state, state.conversations, owner.sessionId, agentId, 'killed').catch(
          () => undefined,
        );
        if (closed) return { killed: true };
      }
      ownWorker(state, owner.sessionId, agentId);
      return { killed: state.workers.kill(agentId) };
    },
    listAgents: () => Promise.resolve(state.workers.list((agent) => agent.parentSessionId === owner.sessionId)),
    openConversation: (input) => openConversation(state, state.conversations, conversationContext(), input),
    say: (input, signal, traceContext) =>
      say(state, state.conversations, conversationContext(), input, signal, traceContext),
    closeConversation: (conversationId) =>
      closeConversation(state, state.conversations, owner.sessionId, conversationId),
  };
  // The agent on the other side gets a worker's tools: no agents of its own, no conversations.
  const conversationContext = () => ({
    owner,
    role,
    project,
    toolsFor: (other: RoleInfo, otherBackend: AgentBackend) =>
      toolsFor(state, { ...owner }, other, project, false, otherBackend),
  });
  const workspaceTools = await workspaceToolsFor(state, {
    sessionId: owner.sessionId,
    ...(conversationId ? { conversationId } : {}),
    role,
    project,
    backend,
  });
  return [...createParleyTools({ permissions: role.permissions, handlers, allowAgentTools }), ...workspaceTools];
}

/** A drafted agent reaches only its own workers. */
function ownWorker(state: DraftServiceState, sessionId: string, agentId: string): void {
  const agent = state.workers.get(agentId);
  if (!agent || agent.parentSessionId !== sessionId) {
    throw new DraftError('NOT_FOUND', `No worker "${agentId}" of yours. list_agents shows the workers you started.`, {
      fault: 'model',
      data: { agentId },
    });
  }
}

export async function listAgents(state: DraftServiceState, params: { channelId?: string }): Promise<AgentInfo[]> {
  const channelId = params.channelId;
  const matches = (agent: AgentInfo): boolean => channelId === undefined || agent.channelId === channelId;
  const drafts = state.pool.list((agent) => agent.kind === 'draft' && matches(agent));
  return [...drafts, ...state.workers.list(matches)];
}

export async function killAgent(state: DraftServiceState, params: { agentId: string }): Promise<{ killed: boolean }> {
  if (typeof params.agentId !== 'string' || params.agentId === '')
    throw new DraftError('INVALID_INPUT', 'kill_agent needs an agentId.', { fault: 'user' });
  if (state.bySession.has(params.agentId)) {
    throw new DraftError(
      'INVALID_INPUT',
      `"${params.agentId}" is a drafted agent, not a worker; end it with undraft.`,
      { fault: 'user', data: { agentId: params.agentId } },
    );
  }
  return { killed: state.workers.kill(params.agentId) };
}

export async function createMcpServer(state: DraftServiceState, params: { channelId: string }): Promise<McpServer> {
  const draft = requireDraft(state, params.channelId);
  return createDraftMcpServer(await toolsFor(state, draft.session, draft.role, draft.project, true, draft.backend));
}
