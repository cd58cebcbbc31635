/**
 * The floor of `bench/acp.bench.ts`: the smallest ACP agent on stdio (the SDK's `agent()` app and
 * nothing of Parley) that answers each prompt with `PARLEY_BENCH_UPDATES` message chunks. What a
 * process boundary and the SDK cost on this machine, beside which Parley's own share is read.
 */
import { randomUUID } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { agent, methods, ndJsonStream, PROTOCOL_VERSION } from '@agentclientprotocol/sdk';

const updates = Number(process.env['PARLEY_BENCH_UPDATES'] ?? 10);
const connection = agent({ name: 'floor' })
  .onRequest(methods.agent.initialize, () => ({
    protocolVersion: PROTOCOL_VERSION,
    agentCapabilities: {},
    authMethods: [],
  }))
  .onRequest(methods.agent.session.new, () => ({ sessionId: randomUUID() }))
  .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
    for (let index = 0; index < updates; index++) {
      await client.notify('session/update', {
        sessionId: params.sessionId,
        update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `chunk ${index} ` } },
      });
    }
    return { stopReason: 'end_turn' };
  })
  .connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>));
await connection.closed;
