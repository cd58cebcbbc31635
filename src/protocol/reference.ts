import * as z from 'zod';
import {
  ChatMessageSchema,
  ConversationBlockSchema,
  SessionMetricsSchema,
  StreamEventSchema,
} from '../conversation/index.js';
import { RPC_ERROR_DESCRIPTIONS, RpcErrorCode, type RpcErrorName } from './errors.js';
import { methods } from './methods.js';
import { notifications } from './notifications.js';
import {
  AgentInfoSchema,
  CheckpointWireSchema,
  DispatchResultSchema,
  DraftStatusSchema,
  ProjectInfoSchema,
  RoleFileErrorSchema,
  RoleInfoSchema,
  SessionInfoSchema,
  TaskInfoSchema,
} from './schemas.js';
import { PROTOCOL_VERSION, RPC_PATH, ServerFileSchema } from './server-file.js';

/** Schemas shown once under "Shared shapes" and referenced from the methods. */
const shared: Array<[string, z.ZodType]> = [
  ['StreamEvent', StreamEventSchema],
  ['ConversationBlock', ConversationBlockSchema],
  ['ChatMessage', ChatMessageSchema],
  ['SessionMetrics', SessionMetricsSchema],
  ['SessionInfo', SessionInfoSchema],
  ['Checkpoint', CheckpointWireSchema],
  ['DraftStatus', DraftStatusSchema],
  ['DispatchResult', DispatchResultSchema],
  ['ProjectInfo', ProjectInfoSchema],
  ['TaskInfo', TaskInfoSchema],
  ['RoleInfo', RoleInfoSchema],
  ['RoleFileError', RoleFileErrorSchema],
  ['AgentInfo', AgentInfoSchema],
  ['ServerFile', ServerFileSchema],
];

const anchor = (id: string) => id.toLowerCase().replace(/[^a-z0-9_-]/g, '');

/** JSON Schemas by id; a schema object listed under several ids (shared params) is converted once and found under each. */
function convert(entries: Array<[string, z.ZodType]>, io: 'input' | 'output'): Record<string, unknown> {
  const registry = z.registry<{ id: string }>();
  const firstId = new Map<z.ZodType, string>();
  for (const [id, schema] of [...shared, ...entries]) {
    if (firstId.has(schema)) continue;
    firstId.set(schema, id);
    registry.add(schema, { id });
  }
  const { schemas } = z.toJSONSchema(registry, { uri: (id) => `#${anchor(id)}`, io, unrepresentable: 'any' });
  const tidy: Record<string, unknown> = {};
  for (const [id, schema] of Object.entries(schemas)) {
    const { $schema: _schema, $id: _id, ...rest } = schema as Record<string, unknown>;
    tidy[id] = rest;
  }
  for (const [id, schema] of entries) tidy[id] ??= tidy[firstId.get(schema)!];
  return tidy;
}

function block(schema: unknown): string {
  return ['```json', JSON.stringify(schema, null, 2), '```'].join('\n');
}

/** Looks a schema up by identity in the converted set; a shared schema is shown as a link. */
function render(converted: Record<string, unknown>, id: string, schema: z.ZodType): string {
  const sharedId = shared.find(([, candidate]) => candidate === schema)?.[0];
  if (sharedId) return `See [${sharedId}](#${anchor(sharedId)}).`;
  return block(converted[id]);
}

/**
 * The protocol reference (docs/protocol.md), generated from the schemas so it cannot drift:
 * `npx tsx scripts/generate-protocol-docs.ts` writes it, and a test fails when the file is stale.
 */
export function renderProtocolReference(): string {
  const methodEntries = Object.entries(methods) as Array<
    [string, { params: z.ZodType; result: z.ZodType; description: string }]
  >;
  const notificationEntries = Object.entries(notifications) as Array<
    [string, { params: z.ZodType; description: string; audience: string }]
  >;
  const inputs = convert(
    methodEntries.map(([name, spec]) => [`${name}.params`, spec.params]),
    'input',
  );
  const outputs = convert(
    [
      ...methodEntries.map(([name, spec]): [string, z.ZodType] => [`${name}.result`, spec.result]),
      ...notificationEntries.map(([name, spec]): [string, z.ZodType] => [`${name}.notification`, spec.params]),
    ],
    'output',
  );
  const lines: string[] = [];
  lines.push('# Parley protocol reference');
  lines.push('');
  lines.push('<!-- Generated from src/protocol by scripts/generate-protocol-docs.ts. Do not edit by hand. -->');
  lines.push('');
  lines.push(
    `Protocol version ${PROTOCOL_VERSION}. JSON-RPC 2.0 over WebSocket, one JSON text frame per message (batches allowed).`,
  );
  lines.push('');
  lines.push('## Connecting');
  lines.push('');
  lines.push(
    `- \`parley serve\` listens on 127.0.0.1 (\`--host\` to change) and writes \`server.json\` (mode 0600) in its data folder: see [ServerFile](#serverfile).`,
  );
  lines.push(
    `- The WebSocket endpoint is \`ws://HOST:PORT${RPC_PATH}\`. The upgrade must carry the token, as \`Authorization: Bearer <token>\` or the \`token\` query parameter; without it the server answers HTTP 401. A browser \`Origin\` other than the server's own is refused with HTTP 403.`,
  );
  lines.push(
    '- `channel` query parameter: the channel the connection joins. A draft belongs to a channel, so a client that reconnects (or connects after a server restart) on the same channel gets its draft back. Without one, the connection gets a new channel of its own (`server_info` says which).',
  );
  lines.push(
    '- Limits: a frame larger than 1 MiB closes the connection with code 1009; requests beyond the per-connection rate get `RATE_LIMITED` errors; a client that cannot keep up with notifications is disconnected with code 1013 and should reconnect and resume.',
  );
  lines.push(
    '- Resuming: every stream event carries `sessionId` and `seq`. After a reconnect, call `get_events` with the last `seq` seen; `ProtocolClient` does this for you.',
  );
  lines.push('');
  lines.push('## Errors');
  lines.push('');
  lines.push(
    'Every error response carries `data.code` (a stable string code) and, where it applies, `data.issues` (param problems as `path: message`) and `data.fault` (`user`, `model` or `system`).',
  );
  lines.push('');
  lines.push('| code | name | meaning |');
  lines.push('|---|---|---|');
  for (const [name, code] of Object.entries(RpcErrorCode) as Array<[RpcErrorName, number]>) {
    lines.push(`| ${code} | \`${name}\` | ${RPC_ERROR_DESCRIPTIONS[name]} |`);
  }
  lines.push('');
  lines.push('## Methods');
  lines.push('');
  lines.push('| method | description |');
  lines.push('|---|---|');
  for (const [name, spec] of methodEntries)
    lines.push(`| [\`${name}\`](#${anchor(name)}) | ${spec.description.split('. ')[0]!.replace(/\.$/, '')}. |`);
  for (const [name, spec] of methodEntries) {
    lines.push('');
    lines.push(`### ${name}`);
    lines.push('');
    lines.push(spec.description);
    lines.push('');
    lines.push('Params:');
    lines.push('');
    lines.push(render(inputs, `${name}.params`, spec.params));
    lines.push('');
    lines.push('Result:');
    lines.push('');
    lines.push(render(outputs, `${name}.result`, spec.result));
  }
  lines.push('');
  lines.push('## Notifications');
  lines.push('');
  lines.push('| notification | sent to | description |');
  lines.push('|---|---|---|');
  for (const [name, spec] of notificationEntries)
    lines.push(
      `| [\`${name}\`](#${anchor(name)}) | ${spec.audience === 'channel' ? "the channel's connections" : spec.audience === 'all' ? 'every connection' : 'subscribed connections'} | ${spec.description} |`,
    );
  for (const [name, spec] of notificationEntries) {
    lines.push('');
    lines.push(`### ${name}`);
    lines.push('');
    lines.push(spec.description);
    lines.push('');
    lines.push(render(outputs, `${name}.notification`, spec.params));
  }
  lines.push('');
  lines.push('## Shared shapes');
  for (const [id] of shared) {
    lines.push('');
    lines.push(`### ${id}`);
    lines.push('');
    lines.push(block(outputs[id]));
  }
  lines.push('');
  return lines.join('\n');
}
