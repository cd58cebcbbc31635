/**
 * The client side of bench/server.bench.ts, in its own process: N WebSocket connections that parse
 * every message and measure latency from the sender's monotonic clock (carried in `delta`).
 * Argv: JSON { url, connections, subscribe?: sessionId }. Reports progress (the slowest
 * connection's count) over IPC for flow control, and the results when told to stop.
 */
import WebSocket from 'ws';

interface Config {
  url: string;
  connections: number;
  /** Parley: subscribe each connection to this session first. */
  subscribe?: string;
}

const config = JSON.parse(process.argv[2]!) as Config;
const counts = new Array<number>(config.connections).fill(0);
const latencies: number[] = [];
let reported = -1;

function onFrame(index: number, data: WebSocket.RawData): void {
  const message = JSON.parse(String(data)) as { id?: unknown; params?: { event?: { delta?: string } } };
  const delta = message.params?.event?.delta;
  if (delta === undefined) return;
  counts[index]! += 1;
  latencies.push(Number(process.hrtime.bigint() - BigInt(delta)) / 1e6);
}

const sockets = await Promise.all(
  Array.from(
    { length: config.connections },
    (_, index) =>
      new Promise<WebSocket>((resolve, reject) => {
        const socket = new WebSocket(config.url, { perMessageDeflate: false });
        socket.once('error', reject);
        socket.once('open', () => {
          if (!config.subscribe) {
            socket.on('message', (data) => onFrame(index, data));
            resolve(socket);
            return;
          }
          socket.once('message', () => {
            socket.on('message', (data) => onFrame(index, data));
            resolve(socket);
          });
          socket.send(
            JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscribe', params: { sessionIds: [config.subscribe] } }),
          );
        });
      }),
  ),
);

const progress = setInterval(() => {
  let slowest = Number.POSITIVE_INFINITY;
  for (const count of counts) slowest = Math.min(slowest, count);
  if (slowest !== reported) {
    reported = slowest;
    process.send!({ type: 'progress', slowest });
  }
}, 2);

process.on('message', (message: { type: string }) => {
  if (message.type !== 'stop') return;
  clearInterval(progress);
  const total = counts.reduce((sum, count) => sum + count, 0);
  latencies.sort((a, b) => a - b);
  const at = (p: number) =>
    latencies[Math.min(latencies.length - 1, Math.max(0, Math.ceil((p / 100) * latencies.length) - 1))] ?? Number.NaN;
  process.send!(
    { type: 'result', total, slowest: Math.min(...counts), p50: at(50), p99: at(99), p999: at(99.9) },
    () => {
      for (const socket of sockets) socket.terminate();
      process.exit(0);
    },
  );
});

process.send!({ type: 'ready' });
