import type { AgentInfo, MethodResult, SessionInfo } from '../../protocol/index.js';
import { formatCost, formatCount, formatDuration, formatPercent, oneLine, plural } from './format.js';
import { activeWorkers, type NoteLine, type ViewState } from './view-state.js';

/**
 * The notes the TUI's report commands print (/context, /roles, /sessions, /agents), built from what
 * the server answered: pure, so the controller only asks and prints.
 */

type DraftSessionStatus = NonNullable<MethodResult<'get_draft_status'>['session']>;
type RolesResult = MethodResult<'list_roles'>;

/** /context: seed 000's metrics, the next request's sections (managed back ends) and the distance to compaction. */
export function contextReport(
  session: DraftSessionStatus,
  preview: MethodResult<'preview_request'> | undefined,
): NoteLine[] {
  const label = (text: string) => `  ${text.padEnd(15)}`;
  const window = session.contextWindow > 0 ? formatCount(session.contextWindow) : 'unknown';
  const lines: NoteLine[] = [
    {
      text: `Context · ${session.role} on task ${session.taskSlug} · ${session.backend}${session.model ? ` / ${session.model}` : ''}`,
      bold: true,
    },
    {
      text: `${label('Input tokens')}${formatCount(session.lastInputTokens)} (last request: input + cache read + cache write)`,
    },
    { text: `${label('Context window')}${window}` },
    {
      text: `${label('Used')}${formatPercent(session.contextPct)}${session.contextPct !== null ? ` (${session.contextPct.toFixed(1)}%)` : ''}`,
    },
  ];
  if (preview?.sections) {
    const sections = Object.entries(preview.sections).map(
      ([name, tokens]) => `${name === 'userPrompt' ? 'next prompt' : name} ${formatCount(tokens)}`,
    );
    lines.push({
      text: `${label('Sections')}${sections.join(' · ')} (next request: ${formatCount(preview.totalTokens)})`,
    });
  } else {
    lines.push({
      text: `${label('Sections')}not available: the ${session.backend} back end keeps its own context`,
      tone: 'dim',
    });
  }
  if (preview?.threshold !== undefined) {
    const distance = preview.threshold - preview.totalTokens;
    const budget =
      preview.budget !== undefined
        ? ` (${Math.round((preview.threshold / preview.budget) * 100)}% of the ${formatCount(preview.budget)}-token budget)`
        : '';
    lines.push({
      text: `${label('Compaction')}at ${formatCount(preview.threshold)} tokens${budget}: ${distance > 0 ? `${formatCount(distance)} tokens to go` : 'due on the next turn'}`,
      ...(distance > 0 ? {} : { tone: 'warning' as const }),
    });
  } else {
    lines.push({
      text: `${label('Compaction')}done by the ${session.backend} back end near the window; shown here when it happens`,
      tone: 'dim',
    });
  }
  lines.push({
    text: `${label('Cost')}${formatCost(session.cumulativeCostUsd, session.costUnknown)} cumulative${session.costUnknown ? ' (a model without a known price ran: a lower bound)' : ''}`,
  });
  lines.push({ text: `${label('Turns')}${session.turnCount}` });
  return lines;
}

/** /roles: each role with its back end, and the role files that failed to load. */
export function rolesReport(roles: RolesResult['roles'], errors: RolesResult['errors']): NoteLine[] {
  const width = Math.max(...roles.map((role) => role.name.length), 4);
  return [
    { text: 'Roles', bold: true },
    ...roles.map((role) => {
      const where = [role.backend, role.model].filter(Boolean).join('/');
      return {
        text: `  ${role.name.padEnd(width)}  ${oneLine(role.description, 64)}${where ? ` (${where})` : ''}${role.permissions.includes('agent-draft') ? ' · drafts workers' : ''}`,
      };
    }),
    ...errors.map((error) => ({
      text: `  ${error.file}${error.field ? ` (${error.field})` : ''}: ${error.message}`,
      tone: 'error' as const,
    })),
    { text: 'Draft one with /draft <role>.', tone: 'dim' },
  ];
}

/** /sessions: the newest sessions, the draft's marked. */
export function sessionsReport(
  sessions: readonly SessionInfo[],
  draftSessionId: string | undefined,
  now: number,
): NoteLine[] {
  return [
    { text: 'Recent sessions', bold: true },
    ...sessions.map((session) => {
      const metrics = session.metrics;
      const numbers = metrics
        ? `${plural(metrics.turns, 'turn')}, ${formatCost(metrics.costUsd, metrics.costUnknown)}`
        : '';
      const age = session.lastActivity !== undefined ? `${formatDuration(now - session.lastActivity)} ago` : '';
      const current = session.sessionId === draftSessionId;
      return {
        text: `${current ? '›' : ' '} ${session.sessionId.slice(0, 8)}  ${oneLine(session.title ?? session.agentType, 36).padEnd(36)}  ${session.type.padEnd(12)} ${session.status.padEnd(8)} ${numbers.padEnd(18)} ${age}`.trimEnd(),
        ...(current ? { tone: 'accent' as const } : {}),
      };
    }),
  ];
}

/** /agents: the drafted agent and its workers with status, duration and cost. */
export function agentsReport(agents: readonly AgentInfo[], state: ViewState, now: number): NoteLine[] {
  const workers = agents.filter((agent) => agent.kind === 'worker');
  const draft = agents.find((agent) => agent.kind === 'draft' && agent.status === 'running');
  const lines: NoteLine[] = [{ text: `Agents · ${plural(activeWorkers(state).length, 'worker')} running`, bold: true }];
  const drafted = state.draft;
  if (draft)
    lines.push({
      text: `  ${draft.role} (drafted) · ${draft.status} · since ${formatDuration(now - Date.parse(draft.startedAt))} · ${formatCost(drafted?.sessionId === draft.sessionId ? drafted.costUsd : draft.costUsd)} with its workers`,
    });
  if (workers.length === 0)
    lines.push({
      text: '  No workers on this channel. A drafted agent whose role may draft workers (e.g. product-analyst) starts them.',
      tone: 'dim',
    });
  for (const worker of workers) {
    const ended = worker.endedAt !== undefined ? Date.parse(worker.endedAt) : now;
    const tone =
      worker.status === 'failed' || worker.status === 'killed'
        ? 'error'
        : worker.status === 'completed'
          ? 'success'
          : 'accent';
    lines.push({
      text: `  ${worker.agentId.padEnd(16)} ${worker.role.padEnd(10)} ${worker.status.padEnd(9)} ${formatDuration(ended - Date.parse(worker.startedAt)).padEnd(8)} ${formatCost(worker.costUsd).padEnd(7)} ${oneLine(worker.prompt ?? '', 50)}`,
      tone,
    });
  }
  return lines;
}
