/**
 * The terminal UI's two speed promises, side by side with their baselines:
 *
 * 1. First paint: from spawning `parley` (no arguments) in a pseudo-terminal (tmux, 120×40) to the
 *    first screen that shows the title bar, polling `capture-pane` every 5 ms; and to Ink's first
 *    frame (the prompt, ready for keys; loading Ink and React is most of the gap, which the CLI
 *    covers with a plain-ANSI first frame). Built (esbuild emits src/ as ES modules into
 *    bench/.data, like `tsc` does into dist/) and from source (tsx). Beside it the floor (node
 *    running an empty script) and `parley --version` (which loads every command). Each run in a
 *    fresh project folder; the kinds take turns, one run each per round, so every row sees the same
 *    load; the first round is a warm-up.
 * 2. Render cost per streamed delta with 20 vs 2,000 finished blocks in the conversation: the real
 *    App in a real (non-debug) Ink render on a fake 120×40 TTY, fed over the in-memory transport;
 *    time from a `text_delta` notification to the frame that shows it, and bytes written per frame.
 *    Beside it the same stream rendered without `<Static>` (every block a normal child), which is
 *    what re-rendering finished history costs. Runs in a child process without CI set (Ink writes
 *    no live frames when it thinks it is in CI).
 */
import { execFile, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { StreamEvent } from '../src/conversation/index.js';
import type { Transport, TransportFactory } from '../src/protocol/index.js';
import { formatMs, percentile, ratio, table } from './stats.js';
import { InkTerminal } from './ink-terminal.js';

const exec = promisify(execFile);
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const CHILD_FLAG = '--tui-render-child';
const DELTAS = 200;
/** The baseline re-renders the whole history per delta (≈0.5 s at 2,000 blocks): fewer samples say as much. */
const BASELINE_DELTAS = 60;

// ---- 1. first paint ------------------------------------------------------------------------------

class Tmux {
  /** The server's socket, in a temp folder removed on close. */
  private socket = '';
  private counter = 0;

  tmux(...args: string[]): Promise<{ stdout: string }> {
    return exec('tmux', ['-S', this.socket, '-u', ...args]);
  }

  async start(): Promise<void> {
    this.socket = join(await mkdtemp(join(tmpdir(), 'parley-bench-tmux-')), 'socket');
    await this.tmux('new-session', '-d', '-s', 'idle', '-x', '120', '-y', '40', 'sleep 3600');
  }

  /** Runs `argv` in a new 120×40 pane in `cwd`; resolves with ms from spawn until `done(screen, dead)` holds. */
  async time(cwd: string, argv: string[], done: (screen: string, dead: boolean) => boolean): Promise<number> {
    const name = `run${this.counter++}`;
    const env = [
      'env',
      '-u',
      'CI',
      '-u',
      'CONTINUOUS_INTEGRATION',
      'LANG=C.UTF-8',
      'TERM=xterm-256color',
      `HOME=${cwd}`,
      `TSX_TSCONFIG_PATH=${join(root, 'tsconfig.json')}`,
    ];
    const command = [...env, ...argv].map((part) => `'${part.replace(/'/g, `'\\''`)}'`).join(' ');
    const started = performance.now();
    await this.tmux(
      'new-session',
      '-d',
      '-s',
      name,
      '-x',
      '120',
      '-y',
      '40',
      '-c',
      cwd,
      command,
      ';',
      'set-option',
      '-t',
      name,
      'remain-on-exit',
      'on',
    );
    const deadline = started + 60_000;
    for (;;) {
      const [{ stdout: screen }, { stdout: dead }] = await Promise.all([
        this.tmux('capture-pane', '-p', '-t', name),
        this.tmux('display-message', '-p', '-t', name, '#{pane_dead}'),
      ]);
      if (done(screen, dead.trim() === '1')) {
        const elapsed = performance.now() - started;
        await this.tmux('kill-session', '-t', name).catch(() => undefined);
        return elapsed;
      }
      if (performance.now() > deadline) throw new Error(`Nothing after 60 s:\n${screen}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  async close(): Promise<void> {
    await this.tmux('kill-server').catch(() => undefined);
    await rm(dirname(this.socket), { recursive: true, force: true });
  }
}

/** src/ as ES modules in bench/.data/tui-dist (node_modules resolve from the repository). */
async function buildDist(bundle = true): Promise<string> {
  const { build } = await import('esbuild');
  const out = join(root, 'bench', '.data', bundle ? 'tui-dist' : 'tui-dist-modules');
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  const entries: string[] = [];
  const walk = async (folder: string): Promise<void> => {
    for (const entry of await readdir(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) entries.push(path);
    }
  };
  await walk(join(root, 'src'));
  await build({
    entryPoints: entries,
    outdir: out,
    outbase: join(root, 'src'),
    format: 'esm',
    platform: 'node',
    target: 'node20',
    jsx: 'automatic',
    logLevel: 'silent',
  });
  if (!bundle) return out;
  // What `npm run build` ships: the TUI's first-frame modules in one bundle.
  const { bundleTui } = (await import(join(root, 'scripts', 'build-tui.mjs'))) as {
    bundleTui: (dist: string) => Promise<void>;
  };
  await bundleTui(out);
  return out;
}

interface PaintRow {
  label: string;
  samples: number[];
  target?: boolean;
  /** A peer's prompt-ready row that Parley's prompt-ready row must beat. */
  peer?: boolean;
  /** Parley's prompt-ready row, compared with the peers'. */
  parleyReady?: boolean;
}

/** A peer CLI from the root's optional dependencies; undefined when it is not installed. */
function peerBin(name: 'gemini' | 'codex'): string | undefined {
  const bin = join(root, 'node_modules', '.bin', name);
  return existsSync(bin) ? bin : undefined;
}

/**
 * The Gemini CLI offline with login skipped: an API key and `selectedType: gemini-api-key`, its
 * base URL a closed port on 127.0.0.1, the folder trusted, updates and telemetry off (as
 * /work/shared/reference/gemini-openai-acp.md measured). HOME is the run's folder.
 */
async function prepareGemini(cwd: string): Promise<string[]> {
  await mkdir(join(cwd, '.gemini'), { recursive: true });
  await writeFile(
    join(cwd, '.gemini', 'settings.json'),
    JSON.stringify({
      security: { auth: { selectedType: 'gemini-api-key' } },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
      general: { enableAutoUpdate: false, enableAutoUpdateNotification: false, maxAttempts: 1 },
    }),
  );
  return [
    `GEMINI_CLI_HOME=${cwd}`,
    'GEMINI_API_KEY=dummy',
    'GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:9',
    'GEMINI_CLI_TRUST_WORKSPACE=true',
  ];
}

/** Codex offline with login skipped: a Responses-API provider on a closed port whose key is in the environment, the folder trusted, no update check. */
async function prepareCodex(cwd: string): Promise<string[]> {
  const home = join(cwd, '.codex');
  await mkdir(home, { recursive: true });
  await writeFile(
    join(home, 'config.toml'),
    [
      'model = "gpt-5"',
      'model_provider = "offline"',
      'check_for_update_on_startup = false',
      '[model_providers.offline]',
      'name = "offline"',
      'base_url = "http://127.0.0.1:9/v1"',
      'env_key = "OFFLINE_KEY"',
      'wire_api = "responses"',
      `[projects.${JSON.stringify(cwd)}]`,
      'trust_level = "trusted"',
      '',
    ].join('\n'),
  );
  return [`CODEX_HOME=${home}`, 'OFFLINE_KEY=dummy'];
}

async function firstPaint(runs: number): Promise<PaintRow[]> {
  const dist = await buildDist();
  const unbundled = await buildDist(false);
  const tmux = new Tmux();
  await tmux.start();
  const titleShown = (screen: string) => /Parley [●○] \w+ \| No draft \| Agents: \d/.test(screen);
  const exited = (_screen: string, dead: boolean) => dead;
  const promptShown = (screen: string) => screen.includes('Type a message, or /help for commands');
  const gemini = peerBin('gemini');
  const codex = peerBin('codex');
  const kinds: Array<{
    label: string;
    argv: string[];
    done: (screen: string, dead: boolean) => boolean;
    target?: boolean;
    peer?: boolean;
    parleyReady?: boolean;
    /** Writes the run's config into its folder; returns environment assignments for the command. */
    prepare?: (cwd: string) => Promise<string[]>;
  }> = [
    { label: 'floor: node runs an empty script, exits', argv: [process.execPath, '-e', ''], done: exited },
    {
      label: '`parley --version` (built; loads every command), exits',
      argv: [process.execPath, join(dist, 'cli', 'main.js'), '--version'],
      done: exited,
    },
    {
      label: '`parley` → first frame with the title bar (built)',
      argv: [process.execPath, join(dist, 'cli', 'main.js')],
      done: titleShown,
      target: true,
    },
    {
      label: "`parley` → Ink's first frame: prompt ready for keys (built)",
      argv: [process.execPath, join(dist, 'cli', 'main.js')],
      done: promptShown,
      parleyReady: true,
    },
    {
      label: "`parley` → Ink's first frame, without the bundle (each module loaded on its own)",
      argv: [process.execPath, join(unbundled, 'cli', 'main.js')],
      done: promptShown,
    },
    ...(gemini
      ? [
          {
            label: '`gemini` (Gemini CLI, offline, login skipped) → prompt ready',
            argv: [gemini],
            done: (screen: string) => screen.includes('Type your message or @path/to/file'),
            peer: true,
            prepare: prepareGemini,
          },
        ]
      : []),
    ...(codex
      ? [
          {
            label: '`codex` (Codex CLI, offline, login skipped) → prompt ready',
            argv: [codex],
            // The composer's placeholder changes from run to run; its prompt mark and hint line do not.
            done: (screen: string) => /^› /m.test(screen) && screen.includes('? for shortcuts'),
            peer: true,
            prepare: prepareCodex,
          },
        ]
      : []),
    {
      label: '`parley` → first frame with the title bar (from source, tsx)',
      argv: [
        process.execPath,
        '--import',
        join(root, 'node_modules', 'tsx', 'dist', 'loader.mjs'),
        join(root, 'src', 'cli', 'main.ts'),
      ],
      done: titleShown,
    },
  ];
  // Round by round, every kind once per round: the machine's load changes over a run, and rows
  // measured one after another (all of Parley's, then all of a peer's) compared different loads.
  const samples = kinds.map((): number[] => []);
  try {
    for (let index = 0; index <= runs; index++) {
      for (const [position, kind] of kinds.entries()) {
        const cwd = await mkdtemp(join(tmpdir(), 'parley-bench-tui-'));
        try {
          const env = kind.prepare ? await kind.prepare(cwd) : [];
          const elapsed = await tmux.time(cwd, [...env, ...kind.argv], kind.done);
          if (index > 0) samples[position]!.push(elapsed);
          // Let the TUI's in-process server wind down before the folder goes.
          await new Promise((resolve) => setTimeout(resolve, 300));
        } finally {
          // A peer CLI killed with its pane may still be writing its state here for a moment.
          await rm(cwd, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
        }
      }
    }
  } finally {
    await tmux.close();
  }
  const rows: PaintRow[] = kinds.map((kind, position) => ({
    label: kind.label,
    samples: samples[position]!,
    ...(kind.target ? { target: true } : {}),
    ...(kind.peer ? { peer: true } : {}),
    ...(kind.parleyReady ? { parleyReady: true } : {}),
  }));
  return rows;
}

// ---- 2. render cost per delta (child process) -------------------------------------------------------

interface RenderResult {
  label: string;
  blocks: number;
  perDelta: number[];
  bytesPerDelta: number[];
  historyMs: number;
}

async function measureRender(): Promise<RenderResult[]> {
  const [{ render, Box, Text }, React, protocol, tui] = await Promise.all([
    import('ink'),
    import('react'),
    import('../src/protocol/index.js'),
    import('../src/ui/tui/index.js'),
  ]);
  const h = React.createElement;
  const at = 1_795_000_000_000;
  const sessionId = 'bench-session';

  class Keyboard extends EventEmitter {
    readonly isTTY = true;
    setRawMode() {
      return this;
    }
    setEncoding() {
      return this;
    }
    read() {
      return null;
    }
    resume() {
      return this;
    }
    pause() {
      return this;
    }
    ref() {
      return this;
    }
    unref() {
      return this;
    }
  }

  const history = (count: number): StreamEvent[] =>
    Array.from({ length: count }, (_, seq): StreamEvent => ({
      sessionId,
      conversationId: 'main',
      seq,
      at,
      type: 'block_complete',
      block:
        seq % 2 === 0
          ? {
              id: `b${seq}`,
              type: 'user_message',
              content: `Question ${seq}: what does the module at src/part-${seq}.ts do, and is it tested?`,
              createdAt: at,
            }
          : {
              id: `b${seq}`,
              type: 'assistant_text',
              content: `Answer ${seq}: it parses the input, validates it against its schema and hands it on.\nIt has three tests; one covers the error path.`,
              createdAt: at,
            },
    }));

  /** A minimal server over the in-memory transport: a draft whose log holds `events`. */
  const serve = (events: StreamEvent[]) => {
    const status = {
      sessionId,
      role: 'dev',
      project: 'bench',
      taskSlug: 'bench',
      taskDir: '/bench/.parley/tasks/bench',
      channelId: 'bench',
      backend: 'scripted',
      status: 'active',
      turnCount: 0,
      cumulativeCostUsd: 0,
      costUnknown: false,
      lastInputTokens: 0,
      lastOutputTokens: 0,
      contextWindow: 200_000,
      maxOutputTokens: 8_192,
      contextPct: 0,
      startedAt: new Date(at).toISOString(),
      lastActivityAt: new Date(at).toISOString(),
      turnRunning: false,
      activeAgents: 0,
    };
    const answers: Record<string, (params: Record<string, unknown>) => unknown> = {
      server_info: () => ({
        name: 'parley',
        version: '0.1.0',
        protocolVersion: 1,
        channelId: 'bench',
        connectionId: '1',
        projectRoot: '/bench',
        methods: [],
      }),
      list_projects: () => ({
        projects: [
          { name: 'bench', path: '/bench', dataDir: '/bench/.parley', current: true, defaultRole: 'product-analyst' },
        ],
      }),
      get_draft_status: () => ({ active: true, session: status }),
      list_agents: () => ({ agents: [] }),
      list_roles: () => ({ roles: [], errors: [] }),
      list_tasks: () => ({ tasks: [] }),
      get_events: (params) => ({
        events: events.filter((event) => event.seq > (params['afterSeq'] as number)),
        lastSeq: events.length - 1,
        hasMore: false,
      }),
      preview_request: () => ({ systemPrompt: '', userPrompt: '', totalTokens: 0, threshold: 90_000, budget: 100_000 }),
    };
    let server: Transport | undefined;
    const factory: TransportFactory = () => {
      const [client, side] = protocol.createInMemoryTransportPair();
      server = side;
      side.start({
        onMessage: (frame) => {
          const request = JSON.parse(frame) as { id: number; method: string; params: Record<string, unknown> };
          const answer = answers[request.method];
          side.send(
            JSON.stringify(
              answer
                ? { jsonrpc: '2.0', id: request.id, result: answer(request.params ?? {}) }
                : { jsonrpc: '2.0', id: request.id, error: { code: -32601, message: request.method } },
            ),
          );
        },
        onClose: () => {},
      });
      return Promise.resolve(client);
    };
    const notify = (event: StreamEvent) =>
      server!.send(
        JSON.stringify({ jsonrpc: '2.0', method: 'channel_message', params: { channelId: 'bench', sessionId, event } }),
      );
    return { factory, notify };
  };

  /** Finished history as plain children: what rendering without <Static> costs. */
  function Naive({ blocks, live }: { blocks: StreamEvent[]; live: string }) {
    return h(
      Box,
      { flexDirection: 'column' },
      ...blocks.map((event) =>
        h(
          Text,
          { key: event.seq },
          event.type === 'block_complete' && 'content' in event.block ? event.block.content : '',
        ),
      ),
      h(Text, { key: 'live' }, `${live}▍`),
    );
  }

  const results: RenderResult[] = [];
  for (const blocks of [20, 2_000]) {
    // Parley's App.
    {
      const events = history(blocks);
      const server = serve(events);
      const terminal = new InkTerminal(120, 40, 4_096);
      const client = new protocol.ProtocolClient({ transport: server.factory, onError: () => {} });
      const started = performance.now();
      const instance = render(
        h(tui.App, { client, onExit: () => {}, clock: () => at, historyLimit: 10_000, tickMs: 60_000 }),
        {
          stdout: terminal as unknown as NodeJS.WriteStream,
          stdin: new Keyboard() as unknown as NodeJS.ReadStream,
          debug: false,
          exitOnCtrlC: false,
          patchConsole: false,
          maxFps: 1_000,
        },
      );
      await terminal.until(`Answer ${blocks - 1}:`);
      await terminal.until('Draft: dev');
      const historyMs = performance.now() - started;
      server.notify({
        sessionId,
        conversationId: 'main',
        seq: blocks,
        at,
        type: 'block_start',
        block: { id: 'live', type: 'assistant_text', content: '', createdAt: at },
      });
      const perDelta: number[] = [];
      const bytesPerDelta: number[] = [];
      for (let index = 0; index < DELTAS; index++) {
        const bytes = terminal.bytes;
        const begin = performance.now();
        server.notify({
          sessionId,
          conversationId: 'main',
          seq: blocks + 1 + index,
          at,
          type: 'text_delta',
          blockId: 'live',
          delta: ` d${index}`,
        });
        await terminal.until(`d${index}`);
        perDelta.push(performance.now() - begin);
        bytesPerDelta.push(terminal.bytes - bytes);
        // Let Ink's 1 ms render throttle expire, so each delta is its own frame.
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      instance.unmount();
      client.close();
      results.push({
        label: 'Parley App (<Static> history)',
        blocks,
        perDelta: perDelta.slice(10),
        bytesPerDelta: bytesPerDelta.slice(10),
        historyMs,
      });
    }
    // The same stream without <Static>.
    {
      const events = history(blocks);
      const terminal = new InkTerminal(120, 40, 4_096);
      const started = performance.now();
      const instance = render(h(Naive, { blocks: events, live: '' }), {
        stdout: terminal as unknown as NodeJS.WriteStream,
        stdin: new Keyboard() as unknown as NodeJS.ReadStream,
        debug: false,
        exitOnCtrlC: false,
        patchConsole: false,
        maxFps: 1_000,
      });
      await terminal.until('▍');
      const historyMs = performance.now() - started;
      const perDelta: number[] = [];
      const bytesPerDelta: number[] = [];
      let live = '';
      for (let index = 0; index < BASELINE_DELTAS; index++) {
        const bytes = terminal.bytes;
        const begin = performance.now();
        live += ` d${index}`;
        instance.rerender(h(Naive, { blocks: events, live }));
        await terminal.until(`d${index}▍`);
        perDelta.push(performance.now() - begin);
        bytesPerDelta.push(terminal.bytes - bytes);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      instance.unmount();
      results.push({
        label: 'baseline: history as plain children (no <Static>)',
        blocks,
        perDelta: perDelta.slice(10),
        bytesPerDelta: bytesPerDelta.slice(10),
        historyMs,
      });
    }
  }
  return results;
}

function renderInChild(): Promise<RenderResult[]> {
  const env: NodeJS.ProcessEnv = { ...process.env, TSX_TSCONFIG_PATH: join(root, 'tsconfig.json') };
  delete env['CI'];
  delete env['CONTINUOUS_INTEGRATION'];
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', join(root, 'node_modules', 'tsx', 'dist', 'loader.mjs'), fileURLToPath(import.meta.url), CHILD_FLAG],
      { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    // Ink restores the cursor on stderr when it exits: kept out of the report, shown on failure.
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      const line = output.split('\n').find((entry) => entry.startsWith('{"results"'));
      if (code !== 0 || !line) reject(new Error(`The render child failed (${code}):\n${output}`));
      else resolve((JSON.parse(line) as { results: RenderResult[] }).results);
    });
  });
}

if (process.argv.includes(CHILD_FLAG)) {
  const results = await measureRender();
  process.stdout.write(`${JSON.stringify({ results })}\n`);
  process.exit(0);
}

// ---- report --------------------------------------------------------------------------------------

export async function run(): Promise<string> {
  const median = (values: readonly number[]) => percentile(values, 50);
  const out: string[] = ['## TUI: first paint and render cost per streamed delta', ''];
  out.push(
    `${cpus().length} cores, load average ${loadavg()
      .map((value) => value.toFixed(1))
      .join(' / ')} at the start (other work on the machine slows process start-up).`,
    '',
  );

  const paint = await firstPaint(5);
  const floor = median(paint[0]!.samples);
  const ready = paint.find((row) => row.parleyReady)!;
  out.push(
    '### First paint (spawn in a 120×40 tmux pane → screen shows it; 5 rounds after a warm-up, the kinds taking turns)',
    '',
  );
  out.push(
    table(
      ['what', 'median', 'p90', 'vs floor', 'target'],
      paint.map((row) => [
        row.label,
        formatMs(median(row.samples)),
        formatMs(percentile(row.samples, 90)),
        ratio(median(row.samples), floor),
        row.target
          ? median(row.samples) < 500
            ? '< 500 ms: met'
            : '< 500 ms: **missed**'
          : row.peer
            ? median(ready.samples) < median(row.samples)
              ? `Parley first (${ratio(median(ready.samples), median(row.samples))}): met`
              : `Parley first: **missed** (${ratio(median(ready.samples), median(row.samples))})`
            : '',
      ]),
    ),
    '',
  );
  if (!paint.some((row) => row.peer))
    out.push('The peer rows need the optional `@google/gemini-cli` and `@openai/codex` packages installed.', '');

  const render = await renderInChild();
  out.push(
    `### Render cost per streamed delta (${DELTAS - 10} deltas for Parley, ${BASELINE_DELTAS - 10} for the baseline, after 10 warm-up ones; notification → frame written)`,
    '',
  );
  const rows: string[][] = [];
  const labels = [...new Set(render.map((row) => row.label))];
  for (const label of labels) {
    const small = render.find((row) => row.label === label && row.blocks === 20)!;
    const large = render.find((row) => row.label === label && row.blocks === 2_000)!;
    rows.push([
      label,
      `${formatMs(median(small.perDelta))} / ${formatMs(percentile(small.perDelta, 90))}`,
      `${formatMs(median(large.perDelta))} / ${formatMs(percentile(large.perDelta, 90))}`,
      ratio(median(large.perDelta), median(small.perDelta)),
      `${Math.round(median(small.bytesPerDelta))} / ${Math.round(median(large.bytesPerDelta))}`,
      `${formatMs(small.historyMs)} / ${formatMs(large.historyMs)}`,
    ]);
  }
  out.push(
    table(
      [
        'renderer',
        '20 blocks: median / p90',
        '2,000 blocks: median / p90',
        '2,000 ÷ 20',
        'bytes per frame (20 / 2,000)',
        'first full screen (20 / 2,000)',
      ],
      rows,
    ),
    '',
  );
  out.push(
    'Flat (≈1×) means finished history is not re-rendered while a block streams; the baseline grows with the history because every frame lays out and writes every block again.',
    '',
  );
  return out.join('\n');
}
