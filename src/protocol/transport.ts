import { ProtocolClientError } from './errors.js';

/**
 * What a connection runs over: frames of text in order, and a close. WebSocket (Node or browser),
 * stdio or the in-memory pair plug in below `ProtocolClient`. The
 * connection above owns ids, pending responses, timeouts and the write order.
 */
export interface TransportHandlers {
  /** One text frame, in arrival order. */
  onMessage(frame: string): void;
  /** Fires once, when either side closed or the link broke. */
  onClose(event: { code: number; reason: string }): void;
}

/** How the protocol client reaches a server: sends text and hands received text to its handlers. */
export interface Transport {
  /** Attaches the handlers; frames that arrived before are delivered now, in order. Call once. */
  start(handlers: TransportHandlers): void;
  /** Sends one frame; frames are delivered in call order. Throws when the transport is closed. */
  send(frame: string): void;
  /** Closes; `onClose` fires once. Idempotent. */
  close(code?: number, reason?: string): void;
}

/** Hints the connection passes to each (re)connection. */
export interface ConnectContext {
  /** The channel to join: the one the server gave the first connection, so a reconnect finds its draft. */
  channel?: string;
  signal?: AbortSignal;
}

/** Opens a new transport; rejects when the peer cannot be reached or refuses. */
export type TransportFactory = (context: ConnectContext) => Promise<Transport>;

/** Buffers frames and the close until `start`, so nothing that arrives between open and start is lost. */
class Inbox implements TransportHandlers {
  private handlers: TransportHandlers | undefined;
  private readonly frames: string[] = [];
  private closed: { code: number; reason: string } | undefined;
  private closeDelivered = false;

  start(handlers: TransportHandlers): void {
    if (this.handlers) throw new Error('Transport.start called twice.');
    this.handlers = handlers;
    for (const frame of this.frames.splice(0)) handlers.onMessage(frame);
    if (this.closed) this.deliverClose(this.closed);
  }

  onMessage(frame: string): void {
    if (this.closed) return;
    if (this.handlers) this.handlers.onMessage(frame);
    else this.frames.push(frame);
  }

  onClose(event: { code: number; reason: string }): void {
    if (this.closed) return;
    this.closed = event;
    if (this.handlers) this.deliverClose(event);
  }

  get isClosed(): boolean {
    return this.closed !== undefined;
  }

  private deliverClose(event: { code: number; reason: string }): void {
    if (this.closeDelivered) return;
    this.closeDelivered = true;
    this.handlers?.onClose(event);
  }
}

/**
 * Two linked transports: what one sends, the other receives on a later microtask, in order.
 * For tests, and for running a server and a client in one process.
 */
export function createInMemoryTransportPair(): [Transport, Transport] {
  const left = new Inbox();
  const right = new Inbox();
  const make = (own: Inbox, peer: Inbox): Transport => ({
    start: (handlers) => own.start(handlers),
    send(frame) {
      if (own.isClosed) throw new ProtocolClientError('CONNECTION_CLOSED', 'The in-memory transport is closed.');
      queueMicrotask(() => peer.onMessage(frame));
    },
    close(code = 1000, reason = '') {
      if (own.isClosed) return;
      own.onClose({ code, reason });
      queueMicrotask(() => peer.onClose({ code, reason }));
    },
  });
  return [make(left, right), make(right, left)];
}

/**
 * The part of a WebSocket the transport uses: the browser's global `WebSocket` and Node's `ws`
 * both fit (`ws` delivers text frames as strings through `addEventListener`).
 */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'open' | 'message' | 'close' | 'error', listener: (event: never) => void): void;
}

/** Options of `webSocketTransport`: the URL, the token, and a WebSocket class outside the browser. */
export interface WebSocketTransportOptions {
  /** `ws://127.0.0.1:PORT/rpc` (from server.json's `wsUrl`). */
  url: string;
  /** Sent as the `token` query parameter (browsers cannot set an Authorization header on a WebSocket). */
  token?: string;
  /** The channel to join; the TUI keeps one per project. The connection's `ConnectContext.channel` wins when set. */
  channel?: string;
  /** The WebSocket constructor: `globalThis.WebSocket` in a browser, `ws`'s `WebSocket` in Node. */
  WebSocket?: new (url: string) => WebSocketLike;
  /** Full control over socket creation (e.g. `ws` with headers). Wins over `WebSocket`. */
  createSocket?: (url: string) => WebSocketLike;
  /** Give up opening after this long (default 10 s). */
  openTimeoutMs?: number;
}

const OPEN = 1;

/** The URL a WebSocket transport connects to: `url` plus the `token` and `channel` query parameters. */
export function connectionUrl(url: string, options: { token?: string; channel?: string } = {}): string {
  const target = new URL(url);
  if (options.token !== undefined) target.searchParams.set('token', options.token);
  if (options.channel !== undefined) target.searchParams.set('channel', options.channel);
  return target.toString();
}

/**
 * A transport factory over WebSocket, usable in Node and in the browser: it takes the socket
 * constructor (or a creation function) instead of importing one, so no Node module reaches a bundle.
 */
export function webSocketTransport(options: WebSocketTransportOptions): TransportFactory {
  return (context) =>
    new Promise<Transport>((resolve, reject) => {
      const channel = context.channel ?? options.channel;
      const url = connectionUrl(options.url, {
        ...(options.token !== undefined ? { token: options.token } : {}),
        ...(channel !== undefined ? { channel } : {}),
      });
      let socket: WebSocketLike;
      try {
        if (options.createSocket) socket = options.createSocket(url);
        else {
          const Constructor =
            options.WebSocket ?? (globalThis as { WebSocket?: new (url: string) => WebSocketLike }).WebSocket;
          if (!Constructor)
            throw new Error('No WebSocket implementation: pass `WebSocket` (e.g. from the `ws` package in Node).');
          socket = new Constructor(url);
        }
      } catch (error) {
        reject(
          new ProtocolClientError('CONNECT_FAILED', `Could not open ${options.url}: ${String(error)}`, {
            cause: error,
          }),
        );
        return;
      }
      const inbox = new Inbox();
      let opened = false;
      let lastError: unknown;
      const fail = (message: string, cause?: unknown) => {
        clearTimeout(timer);
        context.signal?.removeEventListener('abort', onAbort);
        reject(new ProtocolClientError('CONNECT_FAILED', message, cause === undefined ? {} : { cause }));
      };
      const onAbort = () => {
        try {
          socket.close(1000, 'aborted');
        } catch {
          // Closing a socket that never opened may throw in some implementations; the abort stands.
        }
        fail(`Connecting to ${options.url} was aborted.`);
      };
      const timer = setTimeout(() => {
        try {
          socket.close(1000, 'open timeout');
        } catch {
          // As above.
        }
        fail(`No answer from ${options.url} within ${options.openTimeoutMs ?? 10_000} ms.`);
      }, options.openTimeoutMs ?? 10_000);
      context.signal?.addEventListener('abort', onAbort, { once: true });
      socket.addEventListener('open', () => {
        opened = true;
        clearTimeout(timer);
        context.signal?.removeEventListener('abort', onAbort);
        resolve({
          start: (handlers) => inbox.start(handlers),
          send(frame) {
            if (inbox.isClosed || socket.readyState !== OPEN)
              throw new ProtocolClientError('CONNECTION_CLOSED', `The connection to ${options.url} is closed.`);
            socket.send(frame);
          },
          close(code = 1000, reason = '') {
            try {
              socket.close(code, reason);
            } finally {
              inbox.onClose({ code, reason });
            }
          },
        });
      });
      socket.addEventListener('message', (event: { data: unknown }) => {
        const data = event.data;
        if (typeof data === 'string') inbox.onMessage(data);
        else if (data instanceof ArrayBuffer) inbox.onMessage(new TextDecoder().decode(data));
        else if (ArrayBuffer.isView(data)) inbox.onMessage(new TextDecoder().decode(data));
      });
      socket.addEventListener('error', (event: { error?: unknown; message?: string }) => {
        lastError = event.error ?? event.message ?? event;
      });
      socket.addEventListener('close', (event: { code: number; reason: string | { toString(): string } }) => {
        if (!opened) {
          const detail = lastError instanceof Error ? lastError.message : `close code ${event.code}`;
          fail(`Could not connect to ${options.url}: ${detail}.`, lastError);
          return;
        }
        inbox.onClose({ code: event.code, reason: String(event.reason ?? '') });
      });
    });
}
