import * as z from 'zod';
import { IdSchema } from '../store/index.js';

// The params of the draft methods, checked before anything is touched.
const ChannelSchema = z.string().min(1).max(200);
export const DraftParamsSchema = z.object({
  channelId: ChannelSchema,
  role: IdSchema,
  project: IdSchema,
  task: IdSchema,
  /** Go on in this existing session (a fork of the task's draft) instead of creating one. */
  session: IdSchema.optional(),
});
export const ChannelParamsSchema = z.object({ channelId: ChannelSchema });
export const SubmitParamsSchema = z.object({
  channelId: ChannelSchema,
  content: z.string().min(1),
  role: IdSchema.optional(),
  taskSlug: IdSchema.optional(),
  /** Continue the channel's draft on this back end from this prompt on (sessions/backend-move.ts). */
  backend: z.string().min(1).max(200).optional(),
  /** Without a draft on the channel: draft this first (draft-first-prompt.ts). */
  draft: z.object({ project: IdSchema, role: IdSchema.optional(), task: IdSchema.optional() }).optional(),
});
