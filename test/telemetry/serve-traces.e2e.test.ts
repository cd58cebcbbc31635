import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startTelemetry } from '../../src/cli/telemetry.js';
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.js';
import { connectToServer, startServeProcess, type ServeProcess } from '../server/serve-process.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serveWithReceiver(
  env: (receiver: OtlpReceiver) => Record<string, string>,
): Promise<{ receiver: OtlpReceiver; serve: ServeProcess }> {
  const receiver = await startOtlpReceiver();
  cleanups.push(() => receiver.close());
  const project = await mkdtemp(join(tmpdir(), 'parley-traces-'));
  cleanups.push(() => rm(project, { recursive: true, force: true }));
  const serve = await startServeProcess(project, env(receiver));
  cleanups.push(async () => {
    if (serve.child.exitCode === null) serve.child.kill('SIGKILL');
    await serve.exited;
  });
  return { receiver, serve };
}

/** Drafts a dev on the scripted back end (the offline default) in a new task of the server's project. */
async function draftDev(client: Awaited<ReturnType<typeof connectToServer>>, slug: string): Promise<void> {
  const project = (await client.request('list_projects')).projects.find((entry) => entry.current)!.name;
  await client.request('create_task', { project, title: slug, slug });
  await client.request('draft', { role: 'dev', project, task: slug });
}

describe('parley serve with OTEL_* variables', () => {
  it('exports the turns of `parley serve` over OTLP, joined to the trace the client passed with submit_prompt', async () => {
    const { receiver, serve } = await serveWithReceiver((receiver) => ({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_SERVICE_NAME: 'parley-test',
      OTEL_BSP_SCHEDULE_DELAY: '20',
    }));
    const client = await connectToServer(serve.info, 'traced');
    cleanups.push(async () => client.close());
    await draftDev(client, 'traced-task');
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parentSpanId = '00f067aa0ba902b7';
    await client.request(
      'submit_prompt',
      { content: 'Hello', traceparent: `00-${traceId}-${parentSpanId}-01` },
      { timeoutMs: 0 },
    );
    const turn = await receiver.waitForSpan((span) => span.name === 'invoke_agent dev');
    expect(turn).toMatchObject({ traceId, parentSpanId, serviceName: 'parley-test' });
    expect(turn.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.provider.name': 'parley.scripted',
    });
    // A graceful stop exports what is buffered, metrics included.
    serve.child.kill('SIGTERM');
    expect((await serve.exited).code).toBe(0);
    expect(receiver.metricNames).toContain('gen_ai.client.token.usage');
  });

  it('refuses a malformed traceparent with a clear error', async () => {
    const { serve } = await serveWithReceiver(() => ({}));
    const client = await connectToServer(serve.info, 'bad-trace');
    cleanups.push(async () => client.close());
    await draftDev(client, 'bad-trace-task');
    await expect(client.request('submit_prompt', { content: 'Hello', traceparent: 'not-a-trace' })).rejects.toThrow(
      /W3C traceparent/,
    );
  });
});

describe('startTelemetry', () => {
  it('registers nothing without OTEL_* variables, or with OTEL_SDK_DISABLED=true', async () => {
    expect(await startTelemetry({})).toBeUndefined();
    expect(await startTelemetry({ OTEL_TRACES_EXPORTER: 'none', OTEL_METRICS_EXPORTER: 'none' })).toBeUndefined();
    expect(
      await startTelemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1', OTEL_SDK_DISABLED: 'true' }),
    ).toBeUndefined();
  });
});
