import { traceParentContext } from '../telemetry/index.js';
import { ParleyError, type ConversationBlock } from '../conversation/index.js';
import type { DraftService } from '../draft/index.js';
import type { RunService, Scheduler } from '../harness/index.js';
import type { Notifier } from '../hooks/index.js';
import { METHOD_NAMES, PROTOCOL_VERSION, type MethodResultInput } from '../protocol/index.js';
import { readActiveHistory, SessionError, type CompactionStatus, type SessionManager } from '../sessions/index.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, type SessionFilter, type SessionRecord } from '../store/index.js';
import type { Handlers } from './dispatcher.js';
import type { Connection, Hub } from './hub.js';
import type { RunFollowers } from './run-followers.js';
import { createRunHandlers } from './run-handlers.js';
import { createScheduleHandlers } from './schedule-handlers.js';
import type { DeviceMethodName } from './device-handlers.js';

export interface HandlerDependencies {
  manager: SessionManager;
  drafts: DraftService;
  hub: Hub;
  projectRoot: string;
  version: string;
  connectionOf(connectionId: string): Connection | undefined;
  /** Durable runs; absent: the run methods answer RUNS_NOT_ENABLED. */
  runService?: RunService;
  runFollowers: RunFollowers;
  /** Schedules; absent: the schedule methods answer SCHEDULES_NOT_ENABLED. */
  scheduler?: Scheduler;
  /** Where notifications go; absent: `get_notification_settings` says they are off. */
  notifier?: Notifier;
  /** Pairing and the paired devices (device-handlers.ts). */
  deviceHandlers: Pick<Handlers, DeviceMethodName>;
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
    draft: (params, context) =>
      drafts.draft({
        channelId: context.channelId,
        role: params.role,
        project: params.project,
        task: params.task,
        ...(params.session !== undefined ? { session: params.session } : {}),
      }),
    undraft: (_params, context) => drafts.undraft({ channelId: context.channelId }),
    get_draft_status: (_params, context) => drafts.getDraftStatus({ channelId: context.channelId }),
    list_backends: async () => ({ backends: drafts.listBackends() }),
    submit_prompt: async (params, context) => {
      // The turn's spans join the client's trace when it sent one (extracted once, passed as the turn's parent).
      const traceParent = traceParentContext(params);
      const result = await drafts.submitPrompt(
        {
          channelId: context.channelId,
          content: params.content,
          ...(params.role !== undefined ? { role: params.role } : {}),
          ...(params.taskSlug !== undefined ? { taskSlug: params.taskSlug } : {}),
          ...(params.backend !== undefined ? { backend: params.backend } : {}),
          ...(params.draft !== undefined ? { draft: params.draft } : {}),
        },
        traceParent ? { traceParent } : {},
      );
      return result.mode === 'draft'
        ? {
            mode: 'draft',
            accepted: true,
            sessionId: result.sessionId,
            seq: result.seq,
            ...(result.drafted ? { drafted: result.drafted } : {}),
          }
        : { mode: 'dispatch', sessionId: result.sessionId, result: result.result };
    },
    cancel: (_params, context) => drafts.cancel({ channelId: context.channelId }),
    set_goal: async (params, context) => ({
      goal: await drafts.setGoal({
        channelId: context.channelId,
        condition: params.condition,
        budget: params.budget,
        ...(params.judge ? { judge: params.judge } : {}),
      }),
    }),
    stop_goal: async (_params, context) => ({ goal: await drafts.stopGoal({ channelId: context.channelId }) }),
    get_goal: async (_params, context) => {
      const goal = await drafts.getGoal({ channelId: context.channelId });
      return goal ? { goal } : {};
    },

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
      // A task filter here also matches a draft's task (its `taskSlug`), which the stores' indexes do
      // not hold: such a listing takes the filtered path below, like a search.
      if (params.search === undefined && params.taskId === undefined && params.taskState === undefined) {
        const page = await manager.listSessionPage({
          filter: {
            ...filter,
            ...(params.tag !== undefined ? { tag: params.tag } : {}),
            ...(params.pinned !== undefined ? { pinned: params.pinned } : {}),
          },
          limit: Math.min(params.limit ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE),
          ...(params.cursor !== undefined ? { cursor: params.cursor } : {}),
        });
        return { sessions: page.sessions, ...(page.nextCursor !== undefined ? { nextCursor: page.nextCursor } : {}) };
      }
      const search = params.search?.toLowerCase();
      const candidates = (await manager.listSessions(filter)).filter(
        (record) =>
          matchesTask(record, params.taskId, params.taskState) &&
          (params.tag === undefined || (record.tags ?? []).includes(params.tag)) &&
          (params.pinned === undefined || (record.pinned === true) === params.pinned),
      );
      const sessions: SessionRecord[] = [];
      for (const record of candidates) {
        if (params.limit !== undefined && sessions.length >= params.limit) break;
        if (
          search === undefined ||
          searchText(record).includes(search) ||
          (params.searchContent === true && (await contentMatches(manager, record.sessionId, search)))
        ) {
          sessions.push(record);
        }
      }
      return { sessions };
    },
    search_sessions: async (params) => {
      const result = await manager.searchSessions({
        text: params.query,
        ...(params.limit !== undefined ? { limit: params.limit } : {}),
      });
      // Each hit names its session's title, so a result list reads without a request per session.
      const titles = new Map<string, string | undefined>();
      for (const hit of result.hits) {
        if (!titles.has(hit.sessionId))
          titles.set(hit.sessionId, (await manager.getSession(hit.sessionId).catch(() => undefined))?.title);
      }
      return {
        terms: result.terms,
        hits: result.hits.map((hit) => {
          const title = titles.get(hit.sessionId);
          return title !== undefined ? { ...hit, title } : hit;
        }),
      };
    },
    update_session: async (params) => {
      let session = await manager.getSession(params.sessionId);
      if (params.title !== undefined)
        session = await manager.relabelSession(session.sessionId, { title: params.title });
      if (params.addTags !== undefined || params.removeTags !== undefined)
        session = await manager.tagSession(session.sessionId, {
          ...(params.addTags !== undefined ? { add: params.addTags } : {}),
          ...(params.removeTags !== undefined ? { remove: params.removeTags } : {}),
        });
      if (params.pinned !== undefined) session = await manager.pinSession(session.sessionId, params.pinned);
      return { session };
    },
    get_session: async (params) => {
      const session = await manager.getSession(params.sessionId);
      const lastSeq = (await manager.getActiveBranch(session.sessionId)).tip;
      // Read last, after every await, so the answer is not older than a compaction notice already sent.
      const compaction = runningCompaction(manager.getCompactionStatus(session.sessionId));
      return { session, lastSeq, ...(compaction ? { compaction } : {}) };
    },
    get_compaction_status: async (params) => {
      const session = await manager.getSession(params.sessionId);
      return manager.getCompactionStatus(session.sessionId);
    },
    get_messages: async (params) => ({
      messages: await manager.getRecentMessages(
        params.sessionId,
        params.limit ?? 50,
        params.includeCleared ? { includeCleared: true } : {},
      ),
    }),
    get_checkpoint: async (params) => {
      const versions = await manager.listCheckpoints(params.sessionId);
      return { current: (await manager.getCheckpoint(params.sessionId)) ?? null, versions };
    },
    clear_messages: async (params) => ({ session: await manager.clearMessages(params.sessionId) }),
    get_events: async (params) => {
      const limit = params.limit ?? EVENTS_PAGE;
      const lastSeq = (await manager.getActiveBranch(params.sessionId)).tip;
      if (params.beforeSeq !== undefined) {
        // One more than the page: whether it came tells whether older events remain.
        const events = await manager.getEventsBefore(params.sessionId, {
          beforeSeq: params.beforeSeq,
          ...(params.afterSeq !== undefined ? { afterSeq: params.afterSeq } : {}),
          limit: limit + 1,
        });
        const hasMore = events.length > limit;
        return {
          events: hasMore ? events.slice(1) : events,
          lastSeq: Math.max(lastSeq, events.at(-1)?.seq ?? -1),
          hasMore,
        };
      }
      const events = await manager.getEvents(params.sessionId, { afterSeq: params.afterSeq ?? -1, limit: limit + 1 });
      const hasMore = events.length > limit;
      return {
        events: hasMore ? events.slice(0, limit) : events,
        lastSeq: Math.max(lastSeq, events.at(-1)?.seq ?? -1),
        hasMore,
      };
    },
    subscribe: async (params, context) => {
      const target = connection(context.connectionId);
      // Loaded, not only checked: a session held in memory is what a shared store's follower brings up
      // to date (and polls), so an event another server appends after this subscription always arrives.
      if (params.sessionIds) for (const sessionId of params.sessionIds) await manager.loadConversation(sessionId);
      hub.subscribe(target, params.sessionIds, params.events ?? true);
      return subscriptionOf(target);
    },
    unsubscribe: (params, context) => {
      const target = connection(context.connectionId);
      hub.unsubscribe(target, params.sessionIds);
      return Promise.resolve(subscriptionOf(target));
    },
    force_compact: async (params) => {
      const checkpoint = await manager.forceCompact(
        params.sessionId,
        params.instructions !== undefined ? { instructions: params.instructions } : {},
      );
      return { compacted: true, checkpoint };
    },
    preview_request: async (params) => {
      const preview = await manager.previewRequest(params.sessionId, params.prompt ?? '');
      return { ...preview, sections: { ...preview.sections } };
    },
    fork_session: async (params) => {
      if (params.backend !== undefined) checkBackend(drafts, params.backend);
      const session = await manager.forkSession(params.sessionId, {
        ...(params.at !== undefined ? { at: params.at } : {}),
        ...(params.backend !== undefined ? { backend: params.backend } : {}),
      });
      return { session };
    },
    rewind: async (params) =>
      manager.rewind(params.sessionId, {
        to: params.to,
        ...(params.restore !== undefined ? { restore: params.restore } : {}),
        ...(params.overwrite !== undefined ? { overwrite: params.overwrite } : {}),
      }),
    edit_message: async (params, context) => {
      const sessionId = drafts.draftSessionId(context.channelId);
      const branched = await manager.editMessage(sessionId, params.blockId);
      const submitted = await drafts.submitPrompt({ channelId: context.channelId, content: params.content });
      if (submitted.mode !== 'draft') throw new Error('The edited message was not taken by the draft.');
      return { sessionId, branchedAt: branched.seq, seq: submitted.seq };
    },
    list_branches: async (params) => ({ branches: await manager.listBranches(params.sessionId) }),
    switch_branch: async (params) => {
      const { files: _files, ...switched } = await manager.switchBranch(params.sessionId, params.branch);
      return switched;
    },
    restore_checkpoint: async (params) => ({
      checkpoint: await manager.restoreCheckpoint(params.sessionId, params.version),
    }),
    archive_session: async (params) => ({ session: await manager.archiveSession(params.sessionId) }),

    // ---- agents ----
    list_agents: async (params, context) => ({
      agents: await drafts.listAgents(params.all ? {} : { channelId: context.channelId }),
    }),
    kill_agent: (params) => drafts.killAgent(params),
    say_in_conversation: (params) => drafts.sayInConversation(params),

    // ---- approvals of the workspace tools ----
    answer_permission: async (params) => {
      const resolution = await drafts.answerPermission({
        sessionId: params.sessionId,
        requestId: params.requestId,
        decision: params.decision,
      });
      return { requestId: resolution.requestId, sessionId: resolution.sessionId, decision: resolution.decision };
    },
    get_permissions: (params, context) => {
      // Every channel's, for a client that shows all that waits (a phone): and their notices from now on.
      if (params.all === true) connection(context.connectionId).allApprovals = true;
      return drafts.getPermissions({ channelId: context.channelId, ...(params.all === true ? { all: true } : {}) });
    },
    set_permission_mode: (params, context) =>
      drafts.setPermissionMode({ channelId: context.channelId, mode: params.mode }),
    // ---- durable runs ----
    ...createRunHandlers({
      runService: dependencies.runService,
      followers: dependencies.runFollowers,
      currentProject: async () => (await drafts.listProjects()).find((project) => project.current)?.name,
      connection,
    }),
    ...createScheduleHandlers(dependencies.scheduler),

    // ---- notifications ----
    get_notification_settings: () =>
      Promise.resolve(
        dependencies.notifier
          ? { enabled: true, ...dependencies.notifier.describe() }
          : { enabled: false, delaySeconds: 0, coalesceSeconds: 0, sinks: [] },
      ),
    send_test_notification: async () => ({ sinks: (await dependencies.notifier?.sendTest()) ?? [] }),
    ...dependencies.deviceHandlers,

    server_info: (_params, context) =>
      Promise.resolve({
        name: 'parley' as const,
        version: dependencies.version,
        protocolVersion: PROTOCOL_VERSION,
        channelId: context.channelId,
        connectionId: context.connectionId,
        projectRoot: dependencies.projectRoot,
        methods: [...METHOD_NAMES],
        fileSnapshots: manager.restoresFiles,
      }),
  };
}

function subscriptionOf(connection: Connection): MethodResultInput<'subscribe'> {
  const own = connection.subscriptions;
  return {
    all: own.all,
    sessionIds: [...own.sessionIds].sort(),
    notices: { all: own.notices.all, sessionIds: [...own.notices.sessionIds].sort() },
  };
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

/** True when a block of the session's log (any thread) contains `needle` (lower case); streamed text is matched across deltas. */
async function contentMatches(manager: SessionManager, sessionId: string, needle: string): Promise<boolean> {
  // Text of the blocks still streaming, by thread and block: a completed block carries its whole text.
  const streaming = new Map<string, string>();
  for await (const event of readActiveHistory(manager.store, await manager.getSession(sessionId))) {
    if (event.type === 'block_start' || event.type === 'block_complete') {
      const text = blockText(event.block).toLowerCase();
      if (text.includes(needle)) return true;
      const key = `${event.conversationId}\u0000${event.block.id}`;
      if (event.type === 'block_start') streaming.set(key, text);
      else streaming.delete(key);
    } else if (event.type === 'text_delta') {
      const key = `${event.conversationId}\u0000${event.blockId}`;
      const text = (streaming.get(key) ?? '') + event.delta.toLowerCase();
      // Only the tail can hold a match that this delta completed.
      if (text.slice(-(needle.length + event.delta.length)).includes(needle)) return true;
      streaming.set(key, text);
    }
  }
  return false;
}

function blockText(block: ConversationBlock): string {
  switch (block.type) {
    case 'tool_use':
      return `${block.name}\n${JSON.stringify(block.input) ?? ''}`;
    case 'subagent':
      return `${block.name}\n${block.input}\n${block.output ?? ''}`;
    case 'thinking':
      return block.redacted ? '' : block.content;
    default:
      return block.content;
  }
}

function searchText(record: SessionRecord): string {
  const scope = record.scope;
  const parts = [record.sessionId, record.title ?? '', record.agentType, record.type];
  if (scope.kind === 'draft') parts.push(scope.role, scope.project ?? '', scope.taskSlug ?? '');
  if (scope.kind === 'task') parts.push(scope.featureId, scope.taskId, scope.taskState);
  if (scope.kind === 'feature') parts.push(scope.featureId);
  return parts.join('\n').toLowerCase();
}

/** The running compaction of a status, as `get_session` carries it; undefined when none runs. */
function runningCompaction(status: CompactionStatus): MethodResultInput<'get_session'>['compaction'] {
  if (!status.running || status.startedAt === undefined || status.trigger === undefined) return undefined;
  return {
    startedAt: status.startedAt,
    trigger: status.trigger,
    ...(status.tokensBefore !== undefined ? { tokensBefore: status.tokensBefore } : {}),
    ...(status.summarizer ? { summarizer: status.summarizer } : {}),
  };
}

/** A fork goes only onto a back end this server can run: one it does not know, or cannot make, is refused. */
function checkBackend(drafts: DraftService, name: string): void {
  const backends = drafts.listBackends();
  const backend = backends.find((each) => each.name === name);
  if (backend === undefined) {
    throw new ParleyError(
      'UNKNOWN_BACKEND',
      `Unknown back end "${name}". This server offers: ${backends.map((each) => each.name).join(', ')}.`,
      { fault: 'user', data: { backend: name } },
    );
  }
  if (!backend.available) {
    throw new ParleyError(
      'BACKEND_NOT_CONFIGURED',
      `The back end "${name}" is not configured on this server${backend.reason ? ` (${backend.reason})` : ''}; configure it or fork onto another.`,
      { fault: 'user', data: { backend: name } },
    );
  }
}
