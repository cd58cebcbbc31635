import { render } from 'ink';
import { App, type AppProps } from './app.js';

export interface RunTuiOptions extends Omit<AppProps, 'onExit'> {
  stdout?: NodeJS.WriteStream;
  stdin?: NodeJS.ReadStream;
  stderr?: NodeJS.WriteStream;
}

export interface RunningTui {
  /** Changes props of the running app (e.g. a notice learnt after the first paint). */
  update(props: Partial<Omit<AppProps, 'client' | 'onExit'>>): void;
  /** Resolves once the user quit (`/quit`, Ctrl+C) or `unmount` was called. */
  readonly exited: Promise<void>;
  unmount(): void;
}

/**
 * Renders the TUI in the terminal. Ctrl+C is the prompt's (it clears the line first), so Ink's own
 * Ctrl+C handling is off. (Ink's incremental rendering is left off: in tmux it left stale spinner
 * lines behind; the live area is small, so redrawing it whole is cheap.)
 */
export function runTui(options: RunTuiOptions): RunningTui {
  const { stdout, stdin, stderr, ...appProps } = options;
  let props: Omit<AppProps, 'onExit'> = appProps;
  let quit!: () => void;
  const exited = new Promise<void>((resolve) => (quit = resolve));
  const onExit = () => {
    instance.unmount();
  };
  const instance = render(<App {...props} onExit={onExit} />, {
    ...(stdout ? { stdout } : {}),
    ...(stdin ? { stdin } : {}),
    ...(stderr ? { stderr } : {}),
    exitOnCtrlC: false,
  });
  void instance.waitUntilExit().then(quit, quit);
  return {
    update(next) {
      props = { ...props, ...next };
      instance.rerender(<App {...props} onExit={onExit} />);
    },
    exited,
    unmount: () => instance.unmount(),
  };
}
