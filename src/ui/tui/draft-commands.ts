import { isRpcError, RpcErrorCode, type DraftStatus, type MethodResult } from '../../protocol/index.js';
import { messageOf, noArguments, type CommandContext } from './command-context.js';
import { formatCost, formatDuration, plural } from './format.js';
import { agentsReport, contextReport } from './reports.js';

// The draft itself: /draft, /undraft, and what it is doing: /context, /compact, /agents.

/** The spinner's label while a compaction runs (the controller shows it for one started elsewhere too). */
export const COMPACTING = 'Compacting the context';

export interface DraftCommandContext extends CommandContext {
  /** This terminal's /compact is in flight: the compaction notices leave its spinner to it. */
  compacting(running: boolean): void;
  /** Rebuilds the draft's conversation from its log, then follows it live. */
  loadDraft(status: DraftStatus): Promise<void>;
  /** Forgets the draft here (it was closed). */
  closeDraftLocally(): void;
}

/** `/draft <role>`: drafts an agent by role into the active project and task. */
export async function draftCommand(context: DraftCommandContext, args: string): Promise<void> {
  const state = context.state();
  const roles = state.roles.length > 0 ? ` Roles: ${state.roles.join(', ')}.` : ' See /roles.';
  if (args === '' || /\s/.test(args)) {
    context.error(`/draft needs one role: /draft <role>.${roles}`);
    return;
  }
  if (state.draft) {
    context.error(`${state.draft.role} is already drafted on task ${state.draft.taskSlug}. /undraft it first.`);
    return;
  }
  if (state.project === undefined) {
    context.error('No active project. List them with /project and choose one with /project <name>.');
    return;
  }
  if (state.task === undefined) {
    context.error(
      `No active task in project ${state.project}. Create one with /task new <title>, or choose one with /task select <slug> (/task lists them).`,
    );
    return;
  }
  context.dispatch({
    type: 'activity_start',
    activity: { id: 'draft', label: `Drafting ${args}`, startedAt: context.clock() },
  });
  try {
    const drafted = await context.client.request('draft', { role: args, project: state.project, task: state.task });
    const status = await context.client.request('get_draft_status');
    context.note([
      {
        text: `Drafted ${args} on task ${drafted.taskSlug} (project ${drafted.project}). Type a message to talk to it.`,
        tone: 'success',
      },
    ]);
    if (status.session) await context.loadDraft(status.session);
  } catch (error) {
    if (isRpcError(error, RpcErrorCode.DRAFT_ALREADY_ACTIVE))
      context.error(`${error.message} (/undraft closes this channel's draft.)`);
    else context.error(messageOf(error));
  } finally {
    context.dispatch({ type: 'activity_end', id: 'draft' });
  }
}

/** `/undraft`: closes the draft and shows its summary. */
export async function undraftCommand(context: DraftCommandContext, args: string): Promise<void> {
  if (!noArguments(context, 'undraft', args)) return;
  const role = context.state().draft?.role;
  try {
    const summary = await context.client.request('undraft');
    const duration = summary.durationMs !== undefined ? `, ${formatDuration(summary.durationMs)}` : '';
    context.note([
      {
        text: `Undrafted ${role ?? 'the agent'} (task ${summary.taskSlug}): ${plural(summary.turns, 'turn')}, ${formatCost(summary.cost)}${duration}.`,
        tone: 'success',
      },
    ]);
    context.closeDraftLocally();
  } catch (error) {
    if (isRpcError(error, RpcErrorCode.NO_ACTIVE_DRAFT)) {
      context.error('No agent is drafted on this channel. Draft one with /draft <role>.');
      if (context.state().draft) context.closeDraftLocally();
      return;
    }
    throw error;
  }
}

/** `/context`: what the next request holds, the window, the distance to compaction, cost and turns. */
export async function contextCommand(context: CommandContext, args: string): Promise<void> {
  if (!noArguments(context, 'context', args)) return;
  const status = await context.client.request('get_draft_status');
  if (!status.session) {
    context.error('No agent is drafted, so there is no context to show. Draft one with /draft <role>.');
    return;
  }
  const session = status.session;
  context.dispatch({ type: 'draft_status', status: session });
  let preview: MethodResult<'preview_request'> | undefined;
  try {
    preview = await context.client.request('preview_request', { sessionId: session.sessionId });
  } catch {
    preview = undefined;
  }
  context.note(contextReport(session, preview));
}

/** `/compact [instructions]`: compacts the draft's context now. */
export async function compactCommand(context: DraftCommandContext, args: string): Promise<void> {
  const draft = context.state().draft;
  if (!draft) {
    context.error('No agent is drafted, so there is nothing to compact. Draft one with /draft <role>.');
    return;
  }
  const started = context.clock();
  context.compacting(true);
  context.dispatch({
    type: 'activity_start',
    activity: { id: 'compact', label: COMPACTING, startedAt: started },
  });
  try {
    const result = await context.client.request(
      'force_compact',
      { sessionId: draft.sessionId, ...(args !== '' ? { instructions: args } : {}) },
      { timeoutMs: 0 },
    );
    const checkpoint = result.checkpoint;
    context.note([
      {
        text: `Compacted in ${formatDuration(context.clock() - started)}${checkpoint ? `: checkpoint v${checkpoint.version}${checkpoint.summarizer?.kind === 'structural' ? ' (built structurally, no model)' : ''} covers the conversation through seq ${checkpoint.covers.throughSeq} (${plural(checkpoint.covers.messageCount, 'message')}); nothing was deleted` : ''}.`,
        tone: 'success',
      },
    ]);
  } catch (error) {
    if (isRpcError(error) && error.reason === 'COMPACTION_NO_SUMMARIZER') {
      context.error(
        'Cannot compact: this server has no model to write the summary with (the scripted back end cannot summarize). Configure a model back end (parley backends shows how), then /compact again.',
      );
    } else if (isRpcError(error, RpcErrorCode.UNSUPPORTED)) context.error(`Cannot compact now: ${error.message}`);
    else context.error(`Compaction failed: ${messageOf(error)}`);
  } finally {
    context.compacting(false);
    context.dispatch({ type: 'activity_end', id: 'compact' });
  }
}

/** `/agents`: the worker agents of this channel. */
export async function agentsCommand(context: CommandContext, args: string): Promise<void> {
  if (!noArguments(context, 'agents', args)) return;
  const { agents } = await context.client.request('list_agents');
  context.dispatch({ type: 'agents', agents });
  context.note(agentsReport(agents, context.state(), context.clock()));
}
