import type { DraftService } from '../draft/index.js';
import { METHOD_NAMES, PROTOCOL_VERSION, type MethodResultInput } from '../protocol/index.js';
import { SessionError, type SessionManager } from '../sessions/index.js';
import type { SessionFilter, SessionRecord } from '../store/index.js';
import type { Handlers } from './dispatcher.js';
import type { Connection, Hub } from './hub.js';

export interface HandlerDependencies {
  manager: SessionManager;
  drafts: DraftService;
  hub: Hub;
  projectRoot: string;
  version: string;
  connectionOf(connectionId: string): Connection | undefined;
}

/** Largest page of `get_events`. */
const EVENTS_PAGE = 5_000;

/**
 * The methods, each a typed function of validated params. Drafts, projects, tasks, roles and
 * agents go to the DraftService (with the connection's channel); sessions go straight to the
 * SessionManager (DRAFT-SERVICE-CONTRACT.md).
 */
export function createHandlers(dependencies: HandlerDependencies): Handlers {
  const { manager, drafts, hub } = dependencies;
  const connection = (connectionId: string): Connection => {
    const found = dependencies.connectionOf(connectionId);
    if (!found) throw new SessionError('MANAGER_CLOSED', 'This connection is closed.');
    return found;
  };
  return {
    // ---- seed 000 ----
    draft: (params, context) => drafts.draft({ channelId: context.channelId, role: params.role, project: params.project, task: params.task }),
    undraft: (_params, context) => drafts.undraft({ channelId: context.channelId }),
    get_draft_status: (_params, context) => drafts.getDraftStatus({ channelId: context.channelId }),
    submit_prompt: async (params, context) => {
      const result = await drafts.submitPrompt({
        channelId: context.channelId,
        content: params.content,
        ...(params.role !== undefined ? { role: params.role } : {}),
        ...(params.taskSlug !== undefined ? { taskSlug: params.taskSlug } : {}),
      });
      return result.mode === 'draft' ? { mode: 'draft', accepted: true, sessionId: result.sessionId, seq: result.seq } : { mode: 'dispatch', sessionId: result.sessionId, result: result.result };
    },
    cancel: (_params, context) => drafts.cancel({ channelId: context.channelId }),

    // ---- projects, tasks, roles ----
    list_projects: async () => ({ projects: await drafts.listProjects() }),
    create_project: async (params) => ({ project: await drafts.createProject(params) }),
    list_tasks: async (params) => ({ tasks: await drafts.listTasks(params) }),
    create_task: async (params) => ({ task: await drafts.createTask(params) }),
    list_roles: (params) => drafts.listRoles(params),

    // ---- sessions ----
    list_sessions: async (params) => {
      const filter: SessionFilter = {
        ...(params.status !== undefined ? { status: params.status } : {}),
        ...(params.backend !== undefined ? { type: params.backend } : {}),
        ...(params.agentType !== undefined ? { agentType: params.agentType } : {}),
        ...(params.scopeKind !== undefined ? { scopeKind: params.scopeKind } : {}),
        ...(params.featureId !== undefined ? { featureId: params.featureId } : {}),
      };
      const search = params.search?.toLowerCase();
      const sessions = (await manager.listSessions(filter)).filter(
        (record) =>
          matchesTask(record, params.taskId, params.taskState) && (search === undefined || searchText(record).includes(search)),
      );
      return { sessions: params.limit === undefined ? sessions : sessions.slice(0, params.limit) };
    },
    get_session: async (params) => {
      const session = await manager.getSession(params.sessionId);
      return { session, lastSeq: await manager.store.lastSeq(session.sessionId) };
    },
    get_messages: async (params) => ({
      messages: await manager.getRecentMessages(params.sessionId, params.limit ?? 50, params.includeCleared ? { includeCleared: true } : {}),
    }),
    get_checkpoint: async (params) => {
      const versions = await manager.listCheckpoints(params.sessionId);
      return { current: versions.at(-1) ?? null, versions };
    },
    clear_messages: async (params) => ({ session: await manager.clearMessages(params.sessionId) }),
    get_events: async (params) => {
      const limit = params.limit ?? EVENTS_PAGE;
      const lastSeq = await manager.store.lastSeq((await manager.getSession(params.sessionId)).sessionId);
      const events = await manager.getEvents(params.sessionId, { afterSeq: params.afterSeq ?? -1, limit: limit + 1 });
      const hasMore = events.length > limit;
      return { events: hasMore ? events.slice(0, limit) : events, lastSeq: Math.max(lastSeq, events.at(-1)?.seq ?? -1), hasMore };
    },
    subscribe: async (params, context) => {
      const target = connection(context.connectionId);
      if (params.sessionIds) for (const sessionId of params.sessionIds) await manager.getSession(sessionId);
      hub.subscribe(target, params.sessionIds);
      return subscriptionOf(target);
    },
    unsubscribe: (params, context) => {
      const target = connection(context.connectionId);
      hub.unsubscribe(target, params.sessionIds);
      return Promise.resolve(subscriptionOf(target));
    },
    force_compact: async (params) => {
      const checkpoint = await manager.forceCompact(params.sessionId, params.instructions !== undefined ? { instructions: params.instructions } : {});
      return { compacted: true, checkpoint };
    },
    preview_request: async (params) => {
      const preview = await manager.previewRequest(params.sessionId, params.prompt ?? '');
      return { ...preview, sections: { ...preview.sections } };
    },
    archive_session: async (params) => ({ session: await manager.archiveSession(params.sessionId) }),

    // ---- agents ----
    list_agents: async (params, context) => ({ agents: await drafts.listAgents(params.all ? {} : { channelId: context.channelId }) }),
    kill_agent: (params) => drafts.killAgent(params),

    server_info: (_params, context) =>
      Promise.resolve({
        name: 'parley' as const,
        version: dependencies.version,
        protocolVersion: PROTOCOL_VERSION,
        channelId: context.channelId,
        connectionId: context.connectionId,
        projectRoot: dependencies.projectRoot,
        methods: [...METHOD_NAMES],
      }),
  };
}

function subscriptionOf(connection: Connection): MethodResultInput<'subscribe'> {
  return { all: connection.subscriptions.all, sessionIds: [...connection.subscriptions.sessionIds].sort() };
}

function matchesTask(record: SessionRecord, taskId: string | undefined, taskState: string | undefined): boolean {
  const scope = record.scope;
  if (taskId !== undefined) {
    const id = scope.kind === 'task' ? scope.taskId : scope.kind === 'draft' ? scope.taskSlug : undefined;
    if (id !== taskId) return false;
  }
  if (taskState !== undefined && (scope.kind !== 'task' || scope.taskState !== taskState)) return false;
  return true;
}

function searchText(record: SessionRecord): string {
  const scope = record.scope;
  const parts = [record.sessionId, record.title ?? '', record.agentType, record.type];
  if (scope.kind === 'draft') parts.push(scope.role, scope.project ?? '', scope.taskSlug ?? '');
  if (scope.kind === 'task') parts.push(scope.featureId, scope.taskId, scope.taskState);
  if (scope.kind === 'feature') parts.push(scope.featureId);
  return parts.join('\n').toLowerCase();
}
