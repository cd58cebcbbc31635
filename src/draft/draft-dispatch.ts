import type { Context } from '@opentelemetry/api';
import { randomUUID } from 'node:crypto';
import { MAIN_CONVERSATION } from '../conversation/index.js';
import { nativeApprover } from '../workspace/index.js';
import { resolveBackend } from './draft-backends.js';
import { resolveRole } from './draft-catalog.js';
import type { DraftServiceState } from './draft-state.js';
import { toolsFor } from './draft-tools.js';
import { compileOutputSchema, type OutputValidator } from './structured-output.js';
import type { DispatchResult, SubmitResult } from './types.js';

/** The output schema of `submit_prompt` without a draft (seed 000's "parsed AgentResult"). */
export const DEFAULT_DISPATCH_OUTPUT_SCHEMA: Record<string, unknown> = {
  type: 'object',
  properties: {
    status: { type: 'string', enum: ['done', 'partial', 'blocked', 'failed'], description: 'How far the task got.' },
    summary: { type: 'string', description: 'What was done and what was found, for the person who asked.' },
    details: { type: 'string', description: 'Anything longer: files changed, steps to reproduce, open questions.' },
  },
  required: ['status', 'summary'],
};

/** Seed 000's task dispatch: a fresh session, structured output, the parsed result as the answer. */
export async function dispatchAutonomous(
  state: DraftServiceState,
  channelId: string,
  content: string,
  roleName: string,
  taskSlug: string | undefined,
  traceParent?: Context,
): Promise<SubmitResult> {
  const project = await state.catalog.current();
  if (taskSlug !== undefined) await state.catalog.getTask(project, taskSlug);
  const role = await resolveRole(state, project, roleName);
  const backend = resolveBackend(state, role.backend, role.model, role.name);
  const validator: OutputValidator = compileOutputSchema(DEFAULT_DISPATCH_OUTPUT_SCHEMA);
  const sessionId = randomUUID();
  await state.manager.createSession({
    sessionId,
    scope: { kind: 'workflow', harness: 'dispatch', agent: role.name },
    agentType: role.name,
    backend: backend.describe().name,
    title: `dispatch ${role.name}: ${project.name}${taskSlug ? `/${taskSlug}` : ''}`,
  });
  state.dispatches.set(sessionId, channelId);
  const owner = { sessionId, channelId, project: project.name, ...(taskSlug ? { taskSlug } : {}) };
  try {
    await state.workers.dispatch({
      agentId: sessionId,
      role,
      prompt: content,
      backend,
      validator,
      tools: await toolsFor(state, owner, role, project, true, backend),
      target: { sessionId, conversationId: MAIN_CONVERSATION },
      project: project.name,
      cwd: project.path,
      channelId,
      askApproval: nativeApprover(state.broker, { sessionId, root: project.path }),
      ...(taskSlug ? { taskSlug } : {}),
      ...(traceParent ? { traceParent } : {}),
    });
    const result: DispatchResult = await state.workers.wait(sessionId);
    // Workers the dispatched agent started end with it.
    await state.workers.killAll((agent) => agent.parentSessionId === sessionId);
    return { mode: 'dispatch', sessionId, result };
  } finally {
    state.workers.forget((agent) => agent.agentId === sessionId || agent.parentSessionId === sessionId);
    state.dispatches.delete(sessionId);
  }
}
