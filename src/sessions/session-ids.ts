import * as z from 'zod';
import { describeIssues } from '../conversation/index.js';
import { AgentTypeSchema, IdSchema } from '../store/index.js';
import { SessionError } from './errors.js';

/** A scoped session: a feature-level or a per-state task session. */
export const GetOrCreateSessionOptionsSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('feature'),
    agentType: AgentTypeSchema,
    featureId: IdSchema,
    backend: z.string().min(1).optional(),
  }),
  z.object({
    type: z.literal('task'),
    agentType: AgentTypeSchema,
    featureId: IdSchema,
    taskId: IdSchema,
    taskState: IdSchema,
    backend: z.string().min(1).optional(),
  }),
]);
/** A scope from which `getOrCreateSession` derives the deterministic session id (a feature, a task, a draft). */
export type GetOrCreateSessionOptions = z.input<typeof GetOrCreateSessionOptionsSchema>;

/**
 * Deterministic ids: `{agentType}-feature-{featureId}` and
 * `{agentType}-task-{featureId}-{taskId}-{state}`. The same scope always maps to the same session.
 */
export function scopedSessionId(options: z.infer<typeof GetOrCreateSessionOptionsSchema>): string {
  const id =
    options.type === 'feature'
      ? `${options.agentType}-feature-${options.featureId}`
      : `${options.agentType}-task-${options.featureId}-${options.taskId}-${options.taskState}`;
  const checked = IdSchema.safeParse(id);
  if (!checked.success) {
    throw new SessionError(
      'INVALID_ID',
      `The session id "${id}" built from this scope is not valid: ${describeIssues(checked.error.issues)}. Use shorter feature and task ids.`,
      { fault: 'user' },
    );
  }
  return id;
}

/** Validates a caller-supplied session id before it reaches the store. */
export function checkSessionId(sessionId: unknown): string {
  const checked = IdSchema.safeParse(sessionId);
  if (!checked.success) {
    throw new SessionError(
      'INVALID_ID',
      `"${String(sessionId)}" is not a valid session id: ${describeIssues(checked.error.issues)}. List sessions with \`parley sessions\`.`,
      { fault: 'user', data: { sessionId } },
    );
  }
  return checked.data;
}
