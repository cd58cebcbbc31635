import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { parleyNodeArguments } from '../../helpers/parley-cli.js';

/**
 * `parley` in a real terminal: tmux runs it (see ../../helpers/parley-cli.ts) in a folder; tests type into it with
 * send-keys and read the screen with capture-pane, waiting on what a user would see (polling,
 * bounded by a deadline), never on fixed sleeps.
 */

const run = promisify(execFile);
const repo = resolve(import.meta.dirname, '..', '..', '..');

export class Terminal {
  /** A tmux server of its own, its socket in a temp folder that goes with it. */
  private socket: string | undefined;

  private async tmux(...args: string[]): Promise<{ stdout: string }> {
    this.socket ??= join(await mkdtemp(join(tmpdir(), 'parley-tmux-')), 'socket');
    return run('tmux', ['-S', this.socket, '-u', ...args], { maxBuffer: 16 * 1024 * 1024 });
  }

  /** Starts `parley` in a 120×40 terminal in `cwd`, with only the given environment. */
  async open(cwd: string, env: Record<string, string> = {}, args: string[] = []): Promise<void> {
    const variables = {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: cwd,
      LANG: 'C.UTF-8',
      TERM: 'xterm-256color',
      // The repo's tsconfig (react-jsx) for files tsx compiles from outside the repo's folder (the source run
      // through tsx, or a .ts workflow).
      TSX_TSCONFIG_PATH: join(repo, 'tsconfig.json'),
      ...env,
    };
    const command = [
      'env',
      '-i',
      ...Object.entries(variables).map(([key, value]) => `${key}=${value}`),
      process.execPath,
      ...parleyNodeArguments(),
      ...args,
    ]
      .map(quote)
      .join(' ');
    await this.tmux(
      'new-session',
      '-d',
      '-x',
      '120',
      '-y',
      '40',
      '-s',
      'parley',
      '-c',
      cwd,
      command,
      ';',
      'set-option',
      '-t',
      'parley',
      'remain-on-exit',
      'on',
    );
  }

  /** The screen as a user sees it (wrapped lines joined). */
  async screen(): Promise<string> {
    return (await this.tmux('capture-pane', '-p', '-J', '-t', 'parley')).stdout;
  }

  /** The screen and the scrollback above it, with the colours' escape sequences (`-e`). */
  async coloured(): Promise<string> {
    return (await this.tmux('capture-pane', '-p', '-e', '-J', '-S', '-', '-t', 'parley')).stdout;
  }

  /** The screen with its colours (SGR escapes kept). */
  async colouredScreen(): Promise<string> {
    return (await this.tmux('capture-pane', '-p', '-e', '-J', '-t', 'parley')).stdout;
  }

  /** Sends keys as typed, without Enter. */
  async press(keys: string): Promise<void> {
    await this.tmux('send-keys', '-t', 'parley', '-l', keys);
  }

  /** Sends named keys (tmux's names: `Up`, `Down`, `Enter`, `Escape`, `C-u`), one send-keys each. */
  async keys(...names: string[]): Promise<void> {
    for (const name of names) await this.tmux('send-keys', '-t', 'parley', name);
  }

  async type(text: string): Promise<void> {
    await this.tmux('send-keys', '-t', 'parley', '-l', text);
    await this.tmux('send-keys', '-t', 'parley', 'Enter');
  }

  /** Polls the screen until it shows `expected` (or the predicate holds); fails with the screen after `timeoutMs`. */
  async waitFor(expected: string | RegExp | ((screen: string) => boolean), timeoutMs = 60_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const screen = await this.screen();
      if (
        typeof expected === 'string'
          ? screen.includes(expected)
          : typeof expected === 'function'
            ? expected(screen)
            : expected.test(screen)
      )
        return screen;
      if (Date.now() > deadline) throw new Error(`The terminal never showed ${String(expected)}. Screen:\n${screen}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async exited(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while ((await this.tmux('display-message', '-p', '-t', 'parley', '#{pane_dead}')).stdout.trim() !== '1') {
      if (Date.now() > deadline) throw new Error(`parley did not exit. Screen:\n${await this.screen()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async close(): Promise<void> {
    if (!this.socket) return;
    await this.tmux('kill-server').catch(() => undefined);
    await rm(dirname(this.socket), { recursive: true, force: true });
  }
}

function quote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}
