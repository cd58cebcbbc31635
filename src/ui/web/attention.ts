import type { AttentionNeeded, ProtocolClient } from '../../protocol/index.js';

/**
 * The web UI's side of notifications: while the tab is in the background, each `attention_needed`
 * the server sends becomes a system notification (once the browser allowed it); clicking one, or
 * opening a notification's link from a phone or a chat, opens what waits (`#session=…`,
 * `#approval=<session>/<request>`, `#run=…`). The browser's permission is asked on the page's first
 * click or key press, as browsers only grant it from a gesture.
 */

/** What a route opens. */
export type AttentionRoute =
  | { kind: 'session'; sessionId: string }
  | { kind: 'approval'; sessionId: string; requestId: string }
  | { kind: 'run'; runId: string };

/** Reads a notification's route (a URL fragment); undefined for any other fragment. */
export function parseRoute(hash: string): AttentionRoute | undefined {
  const match = /^#?(session|approval|run)=(.+)$/.exec(hash);
  if (!match) return undefined;
  const value = match[2]!;
  try {
    if (match[1] === 'session') return { kind: 'session', sessionId: decodeURIComponent(value) };
    if (match[1] === 'run') return { kind: 'run', runId: decodeURIComponent(value) };
    const [sessionId, requestId] = value.split('/');
    if (!sessionId || !requestId) return undefined;
    return { kind: 'approval', sessionId: decodeURIComponent(sessionId), requestId: decodeURIComponent(requestId) };
  } catch {
    return undefined;
  }
}

/** The browser's pieces, injected so the logic runs in a test without a browser. */
export interface AttentionEnvironment {
  /** Whether the tab is in the background (`document.hidden`). */
  hidden(): boolean;
  /** `Notification.permission`, or undefined where the browser has no notifications. */
  permission(): NotificationPermission | undefined;
  requestPermission(): Promise<NotificationPermission>;
  /** Shows a system notification; `onClick` runs when the person clicks it. */
  show(title: string, options: { body: string; tag: string }, onClick: () => void): void;
  /** Runs `listener` once on the page's first click or key press. */
  onFirstGesture(listener: () => void): void;
  /** The fragment now, and a listener for its changes. */
  hash(): string;
  onHashChange(listener: () => void): void;
  setHash(hash: string): void;
  focus(): void;
}

/** Where a route leads in this page: the session it names (an approval's dialog shows over it by itself). */
export interface AttentionOptions {
  client: Pick<ProtocolClient, 'on'>;
  environment: AttentionEnvironment;
  openSession(sessionId: string): void;
  /** Optional: a run's route; without it, a run's route opens nothing beyond the page. */
  openRun?(runId: string): void;
}

/** Follows `attention_needed` and the page's fragment. `start` once; `stop` undoes it. */
export class AttentionNotifications {
  private stopListening: (() => void) | undefined;

  constructor(private readonly options: AttentionOptions) {}

  start(): void {
    const { environment } = this.options;
    this.stopListening = this.options.client.on('attention_needed', (notification) => this.show(notification));
    if (environment.permission() === 'default')
      environment.onFirstGesture(() => void environment.requestPermission().catch(() => undefined));
    environment.onHashChange(() => this.open(environment.hash()));
    this.open(environment.hash());
  }

  stop(): void {
    this.stopListening?.();
  }

  /** A notification of the server's: shown only while the tab is hidden (in view, the page itself shows what waits). */
  show(notification: AttentionNeeded): void {
    const { environment } = this.options;
    if (!environment.hidden() || environment.permission() !== 'granted') return;
    const first = notification.items[0];
    environment.show(notification.title, { body: notification.message, tag: first?.key ?? notification.title }, () => {
      environment.focus();
      if (!first) return;
      // The same fragment again fires no hashchange: open it here then.
      if (environment.hash() === first.route) this.open(first.route);
      else environment.setHash(first.route);
    });
  }

  /** Opens what a fragment names. */
  open(hash: string): void {
    const route = parseRoute(hash);
    if (!route) return;
    if (route.kind === 'run') this.options.openRun?.(route.runId);
    else this.options.openSession(route.sessionId);
  }
}

/** The browser's own environment. */
export function browserAttentionEnvironment(): AttentionEnvironment {
  const supported = typeof Notification === 'function';
  return {
    hidden: () => document.hidden,
    permission: () => (supported ? Notification.permission : undefined),
    requestPermission: () => (supported ? Notification.requestPermission() : Promise.resolve('denied')),
    show: (title, options, onClick) => {
      const shown = new Notification(title, options);
      shown.onclick = () => {
        onClick();
        shown.close();
      };
    },
    onFirstGesture: (listener) => {
      const once = () => {
        document.removeEventListener('click', once, true);
        document.removeEventListener('keydown', once, true);
        listener();
      };
      document.addEventListener('click', once, true);
      document.addEventListener('keydown', once, true);
    },
    hash: () => location.hash,
    onHashChange: (listener) => window.addEventListener('hashchange', listener),
    setHash: (hash) => {
      location.hash = hash;
    },
    focus: () => window.focus(),
  };
}
