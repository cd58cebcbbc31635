import './terminal-env.js';
import { render } from 'ink-testing-library';
import { ProtocolClient } from '../../../src/protocol/index.js';
import { App, type AppProps } from '../../../src/ui/tui/index.js';
import type { RecordedPeer } from './recorded-peer.js';

/** Removes ANSI escapes: what a user reads. */
export function plain(text: string): string {
  return text.replace(/\u001b\[[0-9;?]*[A-Za-z]|\u001b\][^\u0007]*\u0007/g, '');
}

/** Text with every run of white space (line breaks included) as one space: what a user reads, however the terminal wrapped it. */
export function flat(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

export interface AppRig {
  client: ProtocolClient;
  /** The screen as text (history and live area), white space collapsed so wrapping does not matter. */
  frame(): string;
  /** The screen as text with its line breaks. */
  lines(): string;
  /** The screen with its colours. */
  raw(): string;
  /** Polls the screen (`frame()`) until `expected` shows (bounded by a deadline; the screen is in the error). */
  waitFor(expected: string | RegExp | ((frame: string) => boolean), timeoutMs?: number): Promise<string>;
  /** Types a line and presses Enter. */
  type(line: string): Promise<void>;
  /** Sends raw keys (`\t`, `\u001b`, `\u000f` for Ctrl+O…). */
  press(keys: string): Promise<void>;
  /** Moves the app's clock. */
  advance(ms: number): void;
  exits(): number;
  stop(): void;
}

/**
 * The whole app on a client over the in-memory transport to a recorded peer (after
 * gemini-cli's AppRig), or over any transport (`{ factory: webSocketTransport(…) }`: a real server).
 */
export function renderApp(
  peer: Pick<RecordedPeer, 'factory'>,
  options: { now?: number; props?: Partial<AppProps> } = {},
): AppRig {
  let now = options.now ?? Date.parse('2026-11-21T07:00:00Z');
  let exits = 0;
  const client = new ProtocolClient({
    transport: peer.factory,
    reconnect: { initialDelayMs: 5, maxDelayMs: 20, jitter: 0 },
    onError: () => {},
  });
  const instance = render(
    <App
      client={client}
      onExit={() => (exits += 1)}
      banner={[{ text: 'Parley test rig', bold: true }]}
      clock={() => now}
      tickMs={10}
      retryDelayMs={() => 10}
      {...options.props}
    />,
  );
  const lines = () => plain(instance.lastFrame() ?? '');
  const frame = () => flat(lines());
  const settle = () => new Promise((resolve) => setTimeout(resolve, 15));
  return {
    client,
    frame,
    lines,
    raw: () => instance.lastFrame() ?? '',
    async waitFor(expected, timeoutMs = 20_000) {
      const matches = (text: string) =>
        typeof expected === 'string'
          ? text.includes(flat(expected))
          : expected instanceof RegExp
            ? expected.test(text)
            : expected(text);
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const text = frame();
        if (matches(text)) return text;
        if (Date.now() > deadline)
          throw new Error(`The screen never showed ${String(expected)}. Last frame:\n${lines()}`);
        await settle();
      }
    },
    type(line) {
      instance.stdin.write(line);
      instance.stdin.write('\r');
      return Promise.resolve();
    },
    press(keys) {
      instance.stdin.write(keys);
      return Promise.resolve();
    },
    advance(ms) {
      now += ms;
    },
    exits: () => exits,
    stop() {
      instance.unmount();
      client.close();
    },
  };
}
