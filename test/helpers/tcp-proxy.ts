/**
 * A TCP proxy on 127.0.0.1 in front of a server (PostgreSQL in the outage tests and the outage
 * soak), built on node:net, that plays a bad network on purpose:
 * - `cutAll()` ends every connection open through it at once, mid-way through whatever it carries
 *   (both sides get a reset, as when a NAT box or a load balancer drops its table);
 * - `delayMs` holds every chunk, both ways, that long before it is passed on (order kept), as a
 *   far-away or overloaded server answers;
 * - `blackhole(true)` stops passing bytes on without closing anything, as a half-open connection
 *   after a network partition: nothing errors, nothing arrives.
 */
import { createServer, Socket, type AddressInfo, type Server } from 'node:net';

export interface TcpProxyOptions {
  targetHost: string;
  targetPort: number;
  /** Every chunk waits this long before it is passed on (default 0). */
  delayMs?: number;
}

export interface TcpProxy {
  readonly port: number;
  /** Connections accepted so far, and those cut by `cutAll`. */
  readonly stats: { accepted: number; cut: number };
  /** Connections open now. */
  open(): number;
  /** Ends every open connection (both sides, with a reset); returns how many. New connections are let through. */
  cutAll(): number;
  setDelay(ms: number): void;
  /** While on, bytes are swallowed both ways and no new connection reaches the target. */
  blackhole(on: boolean): void;
  close(): Promise<void>;
}

export async function startTcpProxy(options: TcpProxyOptions): Promise<TcpProxy> {
  let delayMs = options.delayMs ?? 0;
  let swallowing = false;
  const pairs = new Set<[Socket, Socket]>();
  /** Connections accepted during a blackhole: held open, never answered. */
  const held = new Set<Socket>();
  const stats = { accepted: 0, cut: 0 };

  /** Passes `from`'s bytes to `to`, each chunk after the delay in force when it arrived. */
  const pipe = (from: Socket, to: Socket) => {
    from.on('data', (chunk: Buffer) => {
      if (swallowing) return;
      if (delayMs === 0) to.write(chunk);
      // Timers of one delay fire in the order they were set, so the byte order holds.
      else setTimeout(() => !to.destroyed && to.write(chunk), delayMs);
    });
  };

  const server: Server = createServer((client) => {
    stats.accepted += 1;
    client.setNoDelay(true);
    if (swallowing) {
      // A partitioned network: the connection is accepted by the "router" but never reaches the server.
      held.add(client);
      client.on('error', () => undefined);
      client.on('close', () => held.delete(client));
      client.resume();
      return;
    }
    const upstream = new Socket();
    upstream.setNoDelay(true);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      const wait = delayMs;
      // A close that follows data waits for it, so the last bytes are not overtaken.
      const close = () => {
        client.destroy();
        upstream.destroy();
      };
      if (wait === 0) close();
      else setTimeout(close, wait);
    };
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
    pipe(client, upstream);
    pipe(upstream, client);
    upstream.connect(options.targetPort, options.targetHost);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const port = (server.address() as AddressInfo).port;

  return {
    port,
    stats,
    open: () => pairs.size,
    cutAll() {
      const count = pairs.size;
      for (const pair of [...pairs]) {
        pairs.delete(pair);
        for (const socket of pair) socket.resetAndDestroy();
      }
      stats.cut += count;
      return count;
    },
    setDelay(ms) {
      delayMs = ms;
    },
    blackhole(on) {
      swallowing = on;
    },
    async close() {
      for (const pair of pairs) for (const socket of pair) socket.destroy();
      for (const socket of held) socket.destroy();
      pairs.clear();
      held.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
