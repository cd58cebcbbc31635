import type { DraftService } from '../draft/index.js';
import type { RunService, Scheduler } from '../harness/index.js';
import type { Notification, Notifier, NotificationSink } from '../hooks/index.js';
import type { SessionManager } from '../sessions/index.js';
import { JSONRPC_VERSION, type AttentionNeeded } from '../protocol/index.js';
import type { Hub } from './hub.js';

type SameShape<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** The hooks layer's notification is what `attention_needed` carries (the protocol cannot import hooks). */
export const ATTENTION_SHAPES_MATCH = true satisfies SameShape<Notification, AttentionNeeded>;

/** What `wireAttention` watches and whom it tells. */
export interface AttentionSources {
  notifier: Notifier;
  drafts: DraftService;
  manager: SessionManager;
  hub: Hub;
  runService?: RunService;
  scheduler?: Scheduler;
}

/**
 * Turns what waits for a person into notifications: an approval request, a run's question, a
 * draft's turn that ended while no client watched its channel or session, a worker that failed, a
 * run that failed, a schedule firing that could not start, a compaction that fell back to the
 * structural builder or stopped, a goal that ended by itself (met, out of budget, stuck, an
 * error). An answer on
 * any client (`permission_resolved`, a run's prompt leaving its pending list) resolves the item, so
 * a person who answered within the grace delay is not told again.
 */
export function wireAttention(sources: AttentionSources): Array<() => void> {
  const { notifier, drafts, manager, hub, runService, scheduler } = sources;
  const describeDraft = async (channelId: string): Promise<{ who: string; where: string }> => {
    try {
      const status = await drafts.getDraftStatus({ channelId });
      if (status.session)
        return { who: status.session.role, where: `${status.session.project} / ${status.session.taskSlug}` };
    } catch {
      // A draft closed meanwhile: the item still goes out, with less said.
    }
    return { who: 'an agent', where: `channel ${channelId}` };
  };
  const watched = (channelId: string | undefined, sessionId: string): boolean =>
    (channelId !== undefined && hub.hasChannel(channelId)) || hub.hasFollowers(sessionId);

  const answered = new Set<string>();
  const stops: Array<() => void> = [
    drafts.on('permission_requested', ({ channelId, request }) => {
      const key = permissionKey(request.sessionId, request.requestId);
      void describeDraft(channelId).then(({ who, where }) => {
        // Answered while the draft was looked up: nothing to tell.
        if (answered.has(key)) return;
        notifier.notify({
          key,
          kind: 'permission_request',
          title: `Approval needed: ${request.title}`,
          message: request.command
            ? `${who} wants to run \`${request.command}\`${request.cwd && request.cwd !== '.' ? ` in ${request.cwd}` : ''}.`
            : `${who} wants to ${request.kind} ${request.path ?? 'a file'}.`,
          who,
          where,
          sessionId: request.sessionId,
          channelId,
          route: `#approval=${encodeURIComponent(request.sessionId)}/${encodeURIComponent(request.requestId)}`,
        });
      });
    }),
    drafts.on('permission_resolved', ({ sessionId, requestId }) => {
      const key = permissionKey(sessionId, requestId);
      answered.add(key);
      if (answered.size > 1_000) answered.delete(answered.values().next().value!);
      notifier.resolve(key);
    }),
    drafts.on('draft_status', (status) => {
      if (watched(status.channelId, status.sessionId)) return;
      notifier.notify({
        key: `turn:${status.sessionId}:${status.turnCount}`,
        kind: 'turn_ended',
        title: `${status.role} finished its turn`,
        message: `${status.role} ended turn ${status.turnCount} while no client was open on it; it waits for your next message.`,
        who: status.role,
        where: `channel ${status.channelId}`,
        sessionId: status.sessionId,
        channelId: status.channelId,
        route: sessionRoute(status.sessionId),
      });
    }),
    drafts.on('agent_status', ({ channelId, agent }) => {
      if (agent.kind !== 'worker' || agent.status !== 'failed') return;
      notifier.notify({
        key: `worker:${agent.agentId}`,
        kind: 'worker_failed',
        title: `Worker ${agent.role} failed`,
        message: `The ${agent.role} worker${agent.prompt ? ` on "${oneLine(agent.prompt)}"` : ''} failed.`,
        who: agent.role,
        where: `${agent.project}${agent.taskSlug ? ` / ${agent.taskSlug}` : ''}`,
        sessionId: agent.sessionId,
        channelId,
        route: sessionRoute(agent.sessionId),
      });
    }),
    drafts.on('goal_status', ({ channelId, sessionId, goal }) => {
      // A person who stopped the goal knows; every other end is news, watched or not: the draft went on alone.
      if (goal.state !== 'ended' || !goal.ended || goal.ended.reason === 'stopped') return;
      void describeDraft(channelId).then(({ who, where }) => {
        notifier.notify({
          key: `goal:${goal.goalId}`,
          kind: 'goal_ended',
          title:
            goal.ended!.reason === 'met'
              ? `Goal met: ${oneLine(goal.condition)}`
              : `Goal stopped: ${oneLine(goal.condition)}`,
          message:
            goal.ended!.reason === 'met'
              ? `${oneLine(goal.ended!.message)} Met after ${goal.used.turns} turn${goal.used.turns === 1 ? '' : 's'}.`
              : oneLine(goal.ended!.message),
          who,
          where,
          sessionId,
          channelId,
          route: sessionRoute(sessionId),
        });
      });
    }),
    manager.on('session:compaction-complete', ({ sessionId, summarizer }) => {
      if (summarizer.kind === 'structural' && summarizer.fallback) {
        notifier.notify({
          key: `compaction:${sessionId}`,
          kind: 'compaction_fallback',
          title: 'Compaction fell back to the structural checkpoint',
          message:
            "The model summarizer failed repeatedly, so this session's checkpoints are built without a model until one succeeds. Check the back end that writes summaries.",
          who: 'compaction',
          where: `session ${sessionId}`,
          sessionId,
          route: sessionRoute(sessionId),
        });
      } else if (summarizer.kind === 'model') notifier.resolve(`compaction:${sessionId}`);
    }),
    manager.on('session:compaction-error', ({ sessionId, autoCompactionStopped, message }) => {
      if (!autoCompactionStopped) return;
      notifier.notify({
        key: `compaction-stopped:${sessionId}`,
        kind: 'compaction_fallback',
        title: 'Automatic compaction stopped',
        message: oneLine(message),
        who: 'compaction',
        where: `session ${sessionId}`,
        sessionId,
        route: sessionRoute(sessionId),
      });
    }),
  ];

  if (runService) {
    const pendingOf = new Map<string, Set<string>>();
    stops.push(
      runService.on('run_prompt', ({ runId, prompt }) => {
        let pending = pendingOf.get(runId);
        if (!pending) pendingOf.set(runId, (pending = new Set()));
        pending.add(prompt.promptId);
        void runService
          .getRun(runId)
          .then(
            (run) => ({ who: run.harness, where: `run ${runId}${run.project ? ` in ${run.project}` : ''}` }),
            () => ({ who: 'a run', where: `run ${runId}` }),
          )
          .then(({ who, where }) => {
            // Answered while the run was read: nothing to tell.
            if (!pendingOf.get(runId)?.has(prompt.promptId)) return;
            notifier.notify({
              key: questionKey(runId, prompt.promptId),
              kind: 'run_question',
              title: `${who} asks: ${oneLine(prompt.prompt)}`,
              message: `${oneLine(prompt.prompt)}${prompt.choices?.length ? ` (${prompt.choices.join(' / ')})` : ''}`,
              who,
              where,
              runId,
              route: runRoute(runId),
            });
          });
      }),
      runService.on('run_updated', ({ run }) => {
        const pending = pendingOf.get(run.id);
        if (pending) {
          const still = new Set(run.pendingPrompts.map((prompt) => prompt.promptId));
          for (const promptId of [...pending])
            if (!still.has(promptId)) {
              pending.delete(promptId);
              notifier.resolve(questionKey(run.id, promptId));
            }
          if (pending.size === 0) pendingOf.delete(run.id);
        }
        if (run.status === 'failed')
          notifier.notify({
            key: `run-failed:${run.id}:${run.journalLength}`,
            kind: 'run_failed',
            title: `Run ${run.harness} failed`,
            message: run.error ? `${run.error.code}: ${oneLine(run.error.message)}` : 'The run failed.',
            who: run.harness,
            where: `run ${run.id}${run.project ? ` in ${run.project}` : ''}`,
            runId: run.id,
            route: runRoute(run.id),
          });
      }),
    );
  }
  if (scheduler)
    stops.push(
      scheduler.on('schedule_failed', ({ schedule, firing }) => {
        const who = schedule.name ?? schedule.id;
        notifier.notify({
          key: `schedule-failed:${schedule.id}:${firing.fireAt}`,
          kind: 'schedule_failed',
          title: `Schedule ${who} failed to fire`,
          message: firing.error ? `${firing.error.code}: ${oneLine(firing.error.message)}` : 'The firing failed.',
          who,
          where: `schedule ${schedule.id} (due ${firing.fireAt})`,
          scheduleId: schedule.id,
          route: `#schedule=${encodeURIComponent(schedule.id)}`,
        });
      }),
    );
  return stops;
}

/** The web UI's sink: every connection of the server gets `attention_needed`; a tab in the background shows it as a system notification. */
export function webUiSink(hub: Hub): NotificationSink {
  return {
    name: 'web UI',
    send: async (notification) => {
      const frame = Buffer.from(
        JSON.stringify({ jsonrpc: JSONRPC_VERSION, method: 'attention_needed', params: notification }),
      );
      for (const connection of hub.all()) hub.write(connection, frame);
    },
  };
}

function permissionKey(sessionId: string, requestId: string): string {
  return `permission:${sessionId}:${requestId}`;
}

function questionKey(runId: string, promptId: string): string {
  return `question:${runId}:${promptId}`;
}

function sessionRoute(sessionId: string): string {
  return `#session=${encodeURIComponent(sessionId)}`;
}

function runRoute(runId: string): string {
  return `#run=${encodeURIComponent(runId)}`;
}

function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 160 ? `${line.slice(0, 160)}…` : line;
}
