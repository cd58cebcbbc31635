import * as z from 'zod';

/** JSON-RPC 2.0 envelopes (https://www.jsonrpc.org/specification). Parley uses no other framing. */
export const JSONRPC_VERSION = '2.0';

/** Request ids are chosen by the client; strings and integers only (no fractions, no null on requests). */
export const RequestIdSchema = z.union([z.string().max(200), z.number().int()]);
export type RequestId = z.infer<typeof RequestIdSchema>;

export const RequestEnvelopeSchema = z.object({
  jsonrpc: z.literal(JSONRPC_VERSION),
  id: RequestIdSchema,
  method: z.string().min(1),
  params: z.unknown().optional(),
});
export type RequestEnvelope = z.infer<typeof RequestEnvelopeSchema>;

/** A notification has no id and gets no response (client → server and server → client alike). */
export const NotificationEnvelopeSchema = z.object({
  jsonrpc: z.literal(JSONRPC_VERSION),
  method: z.string().min(1),
  params: z.unknown().optional(),
});
export type NotificationEnvelope = z.infer<typeof NotificationEnvelopeSchema>;

export const WireErrorSchema = z.object({
  code: z.number().int(),
  message: z.string(),
  data: z.unknown().optional(),
});
export type WireError = z.infer<typeof WireErrorSchema>;

export const SuccessResponseSchema = z.object({
  jsonrpc: z.literal(JSONRPC_VERSION),
  id: RequestIdSchema,
  result: z.unknown(),
});

/** An error response's id is null when the request's id could not be read (parse error, invalid request). */
export const ErrorResponseSchema = z.object({
  jsonrpc: z.literal(JSONRPC_VERSION),
  id: RequestIdSchema.nullable(),
  error: WireErrorSchema,
});

export type SuccessResponse = z.infer<typeof SuccessResponseSchema>;
export type ErrorResponse = z.infer<typeof ErrorResponseSchema>;
export type ResponseEnvelope = SuccessResponse | ErrorResponse;

/** Classifies one parsed inbound message on the client side. */
export type InboundMessage =
  | { kind: 'response'; response: ResponseEnvelope }
  | { kind: 'notification'; notification: NotificationEnvelope }
  | { kind: 'invalid'; reason: string };

export function classifyInbound(value: unknown): InboundMessage {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { kind: 'invalid', reason: 'not a JSON object' };
  const record = value as Record<string, unknown>;
  if ('method' in record) {
    const parsed = NotificationEnvelopeSchema.safeParse(value);
    return parsed.success
      ? { kind: 'notification', notification: parsed.data }
      : { kind: 'invalid', reason: 'malformed notification' };
  }
  if ('error' in record) {
    const parsed = ErrorResponseSchema.safeParse(value);
    return parsed.success
      ? { kind: 'response', response: parsed.data }
      : { kind: 'invalid', reason: 'malformed error response' };
  }
  if ('result' in record) {
    const parsed = SuccessResponseSchema.safeParse(value);
    return parsed.success
      ? { kind: 'response', response: parsed.data }
      : { kind: 'invalid', reason: 'malformed response' };
  }
  return { kind: 'invalid', reason: 'neither a response nor a notification' };
}
