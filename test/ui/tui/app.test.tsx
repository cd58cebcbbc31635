import './terminal-env.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../../src/conversation/index.js';
import { RpcErrorCode } from '../../../src/protocol/index.js';
import { renderApp, type AppRig } from './app-rig.js';
import { loadRecording, RecordedPeer } from './recorded-peer.js';

const recording = loadRecording();
/** The draft session's events in the recording, by `seq`. */
const events = RecordedPeer.notifications(recording, 'channel_message').map(
  (frame) => (frame.params as { event: StreamEvent }).event,
);
const sessionId = events[0]!.sessionId;
const channelId = 'tui-demo';
const eventAt = (seq: number): StreamEvent => events.find((event) => event.seq === seq)!;
const seqOf = (predicate: (event: StreamEvent) => boolean): number => events.find(predicate)!.seq;

let rig: AppRig | undefined;
afterEach(() => rig?.stop());

function start(options: { autoplay?: boolean; now?: number } = {}): { rig: AppRig; peer: RecordedPeer } {
  const peer = new RecordedPeer(recording, { autoplay: options.autoplay ?? true });
  rig = renderApp(peer, options.now !== undefined ? { now: options.now } : {});
  return { rig, peer };
}

async function draft(app: AppRig): Promise<void> {
  await app.waitFor('Connected | No draft');
  await app.type('/task new Demo');
  await app.waitFor('Created task demo');
  await app.type('/draft product-analyst');
  await app.waitFor('Draft: product-analyst | Context: 0% | Turns: 0 | $0.00');
}

/** Plays recorded events through `seq` (inclusive) from `from`. */
function play(peer: RecordedPeer, from: number, through: number): void {
  for (const event of events)
    if (event.seq >= from && event.seq <= through) peer.notify('channel_message', { channelId, sessionId, event });
}

function titleLine(raw: string): string {
  return raw.split('\n').find((line) => line.includes('Parley') && line.includes('|')) ?? '';
}

const count = (text: string, part: string) => text.split(part).length - 1;

describe('title bar', () => {
  it('shows "No draft | Agents: 0" with a green dot once connected', async () => {
    const { rig } = start();
    await rig.waitFor('Parley ● Connected | No draft | Agents: 0');
    expect(titleLine(rig.raw())).toContain('\u001b[32m●');
  });

  it('shows the draft, context, turns and cost as seed 000 gives them', async () => {
    const { rig } = start();
    await draft(rig);
    await rig.type('Please add a hello.txt greeting file');
    await rig.waitFor('Parley ● Connected | Draft: product-analyst | Context: 31% | Turns: 1 | $0.23');
  });

  it('colours the context figure yellow past the warning point and red near compaction', async () => {
    const { rig, peer } = start();
    await draft(rig);
    await rig.type('Please add a hello.txt greeting file');
    await rig.waitFor('Context: 31%');
    // The managed session compacts at 90,000 of a 200,000-token window: 45%. 31% is plain.
    expect(titleLine(rig.raw())).not.toMatch(/\u001b\[3[13]m/);
    const status = {
      channelId,
      sessionId,
      role: 'product-analyst',
      turnCount: 1,
      costUsd: 0.23,
      lastActivity: '2026-11-21T07:00:00.000Z',
    };
    peer.notify('draft_status', { ...status, contextPct: 38 });
    await rig.waitFor('Context: 38%');
    expect(titleLine(rig.raw())).toMatch(/\u001b\[33m38%/);
    peer.notify('draft_status', { ...status, contextPct: 44 });
    await rig.waitFor('Context: 44%');
    expect(titleLine(rig.raw())).toMatch(/\u001b\[31m44%/);
  });

  it('shows Disconnected in red while the server cannot be reached, with the reason, and connects when it can', async () => {
    const peer = new RecordedPeer(recording);
    peer.refuse = true;
    rig = renderApp(peer);
    const frame = await rig.waitFor('Parley ○ Disconnected | No draft | Agents: 0');
    expect(frame).toContain('connection refused');
    expect(frame).toContain('Retrying in 0s');
    expect(titleLine(rig.raw())).toContain('\u001b[31m○');
    peer.refuse = false;
    await rig.waitFor('Parley ● Connected | No draft');
  });

  it('shows Reconnecting in yellow with a spinner when the link drops, then Connected again', async () => {
    const { rig, peer } = start();
    peer.handlers.set('get_draft_status', () => ({ active: false }));
    await rig.waitFor('Connected | No draft');
    peer.refuse = true;
    peer.drop();
    const frame = await rig.waitFor('Parley ● Reconnecting | No draft');
    expect(frame).toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] Reconnecting… 0s/);
    expect(titleLine(rig.raw())).toContain('\u001b[33m●');
    peer.refuse = false;
    await rig.waitFor('Parley ● Connected | No draft');
    expect(rig.frame()).not.toContain('Reconnecting…');
  });

  it('counts the workers running on the channel when there is no draft', async () => {
    const { rig, peer } = start();
    await rig.waitFor('Connected | No draft | Agents: 0');
    await rig.waitFor(() => peer.count('list_roles') > 0);
    const worker = {
      agentId: 'dev-1',
      kind: 'worker',
      role: 'dev',
      project: 'demo-project',
      channelId,
      status: 'running',
      sessionId: 'other',
      startedAt: '2026-11-21T07:00:00.000Z',
      costUsd: 0,
    };
    peer.notify('agent_status', { channelId, agent: worker });
    await rig.waitFor('No draft | Agents: 1');
    peer.notify('agent_status', {
      channelId,
      agent: { ...worker, status: 'completed', endedAt: '2026-11-21T07:01:00.000Z' },
    });
    await rig.waitFor('No draft | Agents: 0');
  });
});

describe('commands', () => {
  it('/help lists every command with its usage', async () => {
    const { rig } = start();
    await rig.waitFor('Connected');
    await rig.type('/help');
    const frame = await rig.waitFor('/quit');
    for (const usage of [
      '/draft <role>',
      '/undraft',
      '/context',
      '/project <name>',
      '/task new <title>',
      '/task select <slug>',
      '/roles',
      '/sessions',
      '/compact [instructions]',
      '/agents',
      '/rewind',
      '/branches <id>',
      '/fork <backend>',
      '/checkpoints',
      '/restore-checkpoint <version>',
      '/help',
    ]) {
      expect(frame).toContain(usage);
    }
    expect(frame).toContain('Esc interrupts the turn');
    expect(frame).toContain('Esc Esc on an empty line rewinds');
  });

  it('an unknown command says what exists and suggests the closest', async () => {
    const { rig } = start();
    await rig.waitFor('Connected');
    await rig.type('/drat dev');
    await rig.waitFor(
      '✗ Unknown command /drat. Did you mean /draft? Commands: /draft /undraft /context /project /task /roles /sessions /rename /tag /pin /search /rewind /branches /fork /checkpoints /restore-checkpoint /compact /agents /runs /answer /say /backend /goal /help /quit',
    );
  });

  it('/draft says what it needs: a role, then a task, and refuses a second draft', async () => {
    const { rig } = start();
    await rig.waitFor('Connected');
    await rig.waitFor(() => true);
    await rig.type('/draft');
    await rig.waitFor('✗ /draft needs one role: /draft <role>. Roles: dev, product-analyst, qa.');
    await rig.type('/draft dev');
    await rig.waitFor(
      '✗ No active task in project demo-project. Create one with /task new <title>, or choose one with /task select <slug> (/task lists them).',
    );
    await rig.type('/task new Demo');
    await rig.waitFor('Created task demo');
    await rig.type('/draft product-analyst');
    await rig.waitFor('Draft: product-analyst');
    await rig.type('/draft qa');
    await rig.waitFor('✗ product-analyst is already drafted on task demo. /undraft it first.');
  });

  it("a command typed while the terminal is still reading the server's state waits for it", async () => {
    const { rig, peer } = start();
    const projects = (
      recording.frames.find((frame) => 'response' in frame && frame.response === 'list_projects') as { result: unknown }
    ).result;
    let release!: () => void;
    peer.handlers.set('list_projects', () => new Promise((resolve) => (release = () => resolve(projects))));
    await rig.waitFor(() => peer.count('list_projects') === 1);
    await rig.type('/task new Demo');
    release();
    await rig.waitFor('Created task demo ("Demo") in project demo-project');
    expect(rig.frame()).not.toContain('No active project');
  });

  it('/task lists, creates and selects tasks, and says what is expected', async () => {
    const { rig } = start();
    await rig.waitFor('Connected');
    await rig.type('/task');
    await rig.waitFor('No tasks in project demo-project yet. Create one with /task new <title>.');
    await rig.type('/task new');
    await rig.waitFor('✗ /task new needs a title: /task new <title>.');
    await rig.type('/task select nope');
    await rig.waitFor('✗ No task "nope" in project demo-project. Create one with /task new <title>.');
    await rig.type('/task archive demo');
    await rig.waitFor('✗ Unknown /task action "archive". Expected /task, /task new <title> or /task select <slug>.');
    await rig.type('/task new Demo');
    await rig.waitFor('Created task demo ("Demo") in project demo-project; it is the active task.');
  });

  it('/project lists the projects and refuses an unknown one', async () => {
    const { rig } = start();
    await rig.waitFor('Connected');
    await rig.type('/project');
    await rig.waitFor(/› demo-project \/home\/user\/demo-project \(this folder\)/);
    await rig.type('/project elsewhere');
    await rig.waitFor('✗ No project "elsewhere". Projects: demo-project.');
    await rig.type('/project demo-project');
    await rig.waitFor('Active project: demo-project (/home/user/demo-project).');
  });

  it('/roles lists the roles and /sessions the recent sessions', async () => {
    const { rig } = start();
    await rig.waitFor('Connected');
    await rig.type('/roles');
    const roles = await rig.waitFor('Draft one with /draft <role>.');
    expect(roles).toMatch(/ dev Implements a task/);
    expect(roles).toMatch(/product-analyst Talks the product through.*· drafts workers/);
    await rig.type('/sessions');
    await rig.waitFor(/Recent sessions [0-9a-f]{8} product-analyst: Demo scripted active \d turns?, \$0\.2\d \d+s ago/);
  });

  it('/context shows tokens, window, % used, sections, distance to compaction, cost and turns', async () => {
    const { rig } = start();
    await draft(rig);
    await rig.type('Please add a hello.txt greeting file');
    await rig.waitFor('Turns: 1');
    await rig.type('Casual, please');
    await rig.waitFor('Turns: 2');
    await rig.type('/context');
    const frame = await rig.waitFor('Turns 2');
    expect(frame).toContain('Context · product-analyst on task demo · scripted / scripted-1');
    expect(frame).toContain('Input tokens 62,000 (last request: input + cache read + cache write)');
    expect(frame).toContain('Context window 200,000');
    expect(frame).toContain('Used 31% (31.0%)');
    expect(frame).toMatch(
      /Sections role \d+ · context \d+ · checkpoint \d+ · conversation \d+ · next prompt 0 \(next request: [\d,]+\)/,
    );
    expect(frame).toMatch(/Compaction at 90,000 tokens \(90% of the 100,000-token budget\): [\d,]+ tokens to go/);
    expect(frame).toContain('Cost $0.24 cumulative');
  });

  it('/context and /compact without a draft say to draft first', async () => {
    const { rig, peer } = start();
    await rig.waitFor('Connected');
    peer.handlers.set('get_draft_status', () => ({ active: false }));
    await rig.type('/context');
    await rig.waitFor('✗ No agent is drafted, so there is no context to show. Draft one with /draft <role>.');
    await rig.type('/compact');
    await rig.waitFor('✗ No agent is drafted, so there is nothing to compact. Draft one with /draft <role>.');
    expect(peer.count('submit_prompt')).toBe(0);
  });

  it('/compact shows a spinner with its elapsed time, then the new checkpoint', async () => {
    const { rig, peer } = start();
    await draft(rig);
    let finish!: (value: unknown) => void;
    peer.handlers.set('force_compact', (params) => {
      expect(params).toEqual({ sessionId, instructions: 'keep the file names' });
      return new Promise((resolve) => (finish = resolve));
    });
    await rig.type('/compact keep the file names');
    await rig.waitFor(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] Compacting the context… 0s/);
    rig.advance(4_000);
    await rig.waitFor('Compacting the context… 4s');
    finish({ compacted: true, checkpoint: checkpoint() });
    await rig.waitFor(
      'Compacted in 4s: checkpoint v2 covers the conversation through seq 63 (12 messages); nothing was deleted.',
    );
    expect(rig.frame()).not.toContain('Compacting the context…');
  });

  it('/compact says when the checkpoint was built structurally, with no model', async () => {
    const { rig, peer } = start();
    await draft(rig);
    peer.handlers.set('force_compact', () =>
      Promise.resolve({
        compacted: true,
        checkpoint: { ...(checkpoint() as object), summarizer: { kind: 'structural' } },
      }),
    );
    await rig.type('/compact');
    await rig.waitFor(
      'checkpoint v2 (built structurally, no model) covers the conversation through seq 63 (12 messages); nothing was deleted.',
    );
  });

  it('/compact explains when the server has no model to summarize with', async () => {
    const { rig, peer } = start();
    // Servers before the structural checkpoint builder refused to compact without a model.
    peer.handlers.set('force_compact', () => ({
      error: {
        code: RpcErrorCode.UNSUPPORTED,
        message: 'No summarizer is configured.',
        data: { code: 'COMPACTION_NO_SUMMARIZER' },
      },
    }));
    await draft(rig);
    await rig.type('/compact');
    await rig.waitFor(
      '✗ Cannot compact: this server has no model to write the summary with (the scripted back end cannot summarize).',
    );
  });

  it('/agents lists the workers with their status and cost', async () => {
    const { rig } = start();
    await draft(rig);
    await rig.type('Please add a hello.txt greeting file');
    await rig.waitFor('Turns: 1 | $0.23');
    await rig.type('/agents');
    const frame = await rig.waitFor('Agents · 0 workers running');
    expect(frame).toMatch(/dev-[0-9a-f]+ +dev +completed +\d+s +\$0\.04 +Write hello.txt with a friendly greeting\./);
  });

  it('/undraft shows the summary; with arguments or without a draft it says what is expected', async () => {
    const { rig, peer } = start();
    await draft(rig);
    await rig.type('/undraft now');
    await rig.waitFor('✗ /undraft takes no arguments (got "now"). Usage: /undraft');
    await rig.type('/undraft');
    await rig.waitFor(/Undrafted product-analyst \(task demo\): 2 turns, \$0\.24, \d+s\./);
    await rig.waitFor('Parley ● Connected | No draft | Agents: 0');
    peer.handlers.set('undraft', () => ({
      error: { code: -32005, message: 'Channel "tui-demo" has no active draft.', data: { code: 'NO_ACTIVE_DRAFT' } },
    }));
    await rig.type('/undraft');
    await rig.waitFor('✗ No agent is drafted on this channel. Draft one with /draft <role>.');
  });

  it('/quit leaves; Ctrl+C clears a typed line first, then leaves', async () => {
    const { rig } = start();
    await rig.waitFor('Connected');
    await rig.type('/quit');
    await rig.waitFor(() => rig.exits() === 1);
    await rig.press('half a line');
    await rig.waitFor('❯ half a line');
    await rig.press('\u0003');
    await rig.waitFor((frame) => !frame.includes('half a line'));
    expect(rig.exits()).toBe(1);
    await rig.press('\u0003');
    await rig.waitFor(() => rig.exits() === 2);
  });
});

describe('the first message', () => {
  const slugOf = (title: string) => title.toLowerCase().replace(/[^a-z0-9]+/g, '-');

  /**
   * A server that drafts for a first message (`submit_prompt { draft }`) its default role, into the
   * task named or a new one named after the message, and answers with the recorded turn.
   */
  function serveFirstMessages(peer: RecordedPeer, defaultRole = 'product-analyst'): void {
    peer.adjust.set('submit_prompt', (recorded, params) => {
      const draft = params['draft'] as { project: string; task?: string } | undefined;
      if (!draft) return recorded;
      const taskSlug = draft.task ?? slugOf(String(params['content']));
      return {
        ...(recorded as object),
        drafted: { role: defaultRole, project: draft.project, taskSlug, createdTask: draft.task === undefined },
      };
    });
    peer.handlers.set('draft', (params) => ({ sessionId, taskSlug: params['task'], project: params['project'] }));
  }

  it("with no draft, sends the message in one call that drafts the project's default role into a new task, and says so in one line", async () => {
    const { rig, peer } = start();
    serveFirstMessages(peer);
    await rig.waitFor('Connected | No draft');
    await rig.type('Fix the login bug');
    const frame = await rig.waitFor(
      "Created task fix-the-login-bug and drafted product-analyst on it (the project's default role; /undraft to change).",
    );
    // The turn the message started shows once, loaded with the draft's history.
    const answered = await rig.waitFor('A dev worker is on it. Should the greeting be formal or casual?');
    expect(count(answered, "Sure. I'll ask a developer to write hello.txt")).toBe(1);
    expect(frame).not.toContain('✗');
    expect(
      peer.requests.filter((request) => request.method === 'submit_prompt').map((request) => request.params),
    ).toEqual([{ content: 'Fix the login bug', draft: { project: 'demo-project' } }]);
    expect(peer.count('create_task')).toBe(0);
    expect(peer.count('draft')).toBe(0);
    expect(rig.frame()).toContain('Draft: product-analyst');
  });

  it('names the task already selected, so the server drafts into it', async () => {
    const { rig, peer } = start();
    serveFirstMessages(peer, 'dev');
    await rig.waitFor('Connected | No draft');
    await rig.type('/task new Demo');
    await rig.waitFor('Created task demo');
    await rig.type('hello?');
    await rig.waitFor("Drafted dev on task demo (the project's default role; /undraft to change).");
    expect(peer.requests.find((request) => request.method === 'submit_prompt')?.params).toEqual({
      content: 'hello?',
      draft: { project: 'demo-project', task: 'demo' },
    });
    expect(peer.count('create_task')).toBe(1);
  });

  it('a message typed while the first one is drafting meets its turn and drafts nothing', async () => {
    const { rig, peer } = start();
    serveFirstMessages(peer);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const drafted = peer.adjust.get('submit_prompt')!;
    peer.adjust.set('submit_prompt', async (recorded, params) => {
      await held;
      return drafted(recorded, params);
    });
    await rig.waitFor('Connected | No draft');
    await rig.type('first');
    await rig.waitFor('Drafting an agent for your message');
    await rig.type('second');
    await rig.waitFor('✗ The agent is still answering. Wait for it, or press Esc to interrupt it.');
    release();
    await rig.waitFor(
      "Created task first and drafted product-analyst on it (the project's default role; /undraft to change).",
    );
    expect(
      peer.requests.filter((request) => request.method === 'submit_prompt').map((request) => request.params),
    ).toEqual([{ content: 'first', draft: { project: 'demo-project' } }]);
  });

  it("a default role that does not exist: the server's error with the command that helps, the task made is the active one, no draft", async () => {
    const { rig, peer } = start();
    serveFirstMessages(peer);
    peer.adjust.set('submit_prompt', () => ({
      error: {
        code: -32001,
        message:
          'Created task write-the-guide, but could not draft reviewer on it: No role "reviewer". Roles: dev, product-analyst, qa. Your message was not sent.',
        data: {
          code: 'NOT_FOUND',
          drafting: {
            step: 'draft',
            project: 'demo-project',
            role: 'reviewer',
            taskSlug: 'write-the-guide',
            createdTask: true,
          },
        },
      },
    }));
    await rig.waitFor('Connected | No draft');
    await rig.type('Write the guide');
    await rig.waitFor(
      '✗ Created task write-the-guide, but could not draft reviewer on it: No role "reviewer". Roles: dev, product-analyst, qa. Your message was not sent. Draft a role with /draft <role> (/roles lists them), then send it again.',
    );
    expect(rig.frame()).toContain('No draft');
    expect(rig.frame()).not.toContain('Drafting');
    // The new task is the active one: /draft goes there.
    await rig.type('/draft product-analyst');
    await rig.waitFor('Drafted product-analyst on task write-the-guide');
  });

  it('a project the server does not know: the error says to choose one', async () => {
    const { rig, peer } = start();
    peer.adjust.set('submit_prompt', () => ({
      error: {
        code: -32001,
        message:
          'Could not draft an agent for your message: No project "demo-project". Known projects: other. Create it with create_project. Your message was not sent.',
        data: { code: 'NOT_FOUND', drafting: { step: 'project', project: 'demo-project', createdTask: false } },
      },
    }));
    await rig.waitFor('Connected | No draft');
    await rig.type('hello');
    await rig.waitFor(
      'Your message was not sent. Choose a project with /project <name> (/project lists them), then send it again.',
    );
    expect(rig.frame()).toContain('No draft');
  });
});

describe('Tab completion', () => {
  it('completes command names and role names, listing the choices when several fit', async () => {
    const { rig } = start();
    await rig.waitFor('Connected');
    await rig.waitFor(() => true);
    await rig.press('/dr\t');
    await rig.waitFor('❯ /draft ');
    await rig.press('\t');
    await rig.waitFor('dev  product-analyst  qa');
    await rig.press('pr\t');
    await rig.waitFor('❯ /draft product-analyst');
    await rig.press('\u0015');
    await rig.press('/');
    await rig.press('\t');
    // Wider than the rig's 100 columns: the list is cut with an ellipsis.
    await rig.waitFor(
      'agents  answer  backend  branches  checkpoints  compact  context  draft  fork  goal  help  pin  pro…',
    );
    await rig.press('co\t');
    await rig.waitFor('❯ /co');
    await rig.waitFor('compact  context');
    await rig.press('\u0015');
    await rig.press('/res\t');
    await rig.waitFor('❯ /restore-checkpoint ');
  });
});

describe('the conversation', () => {
  it('streams assistant text as it is typed, with a spinner saying what is happening', async () => {
    const { rig, peer } = start({ autoplay: false });
    await draft(rig);
    await rig.type('Please add a hello.txt greeting file');
    play(peer, 0, 0);
    await rig.waitFor('❯ Please add a hello.txt greeting file');
    await rig.waitFor('Waiting for the model… 0s · Esc interrupts');
    const text = seqOf((event) => event.type === 'block_start' && event.block.type === 'assistant_text');
    play(peer, 1, text + 3);
    const frame = await rig.waitFor("Sure. I'll ask a developer to ▍");
    expect(frame).toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] Writing… 0s · Esc interrupts/);
    rig.advance(2_000);
    await rig.waitFor('Writing… 2s');
    play(peer, text + 4, text + 9);
    await rig.waitFor(
      (screen) =>
        screen.includes("Sure. I'll ask a developer to write hello.txt and report back when it is done.") &&
        !screen.includes('done.▍'),
    );
  });

  it('collapses thinking to a line, and Ctrl+O shows it in full', async () => {
    const { rig, peer } = start({ autoplay: false });
    await draft(rig);
    await rig.type('Please add a hello.txt greeting file');
    play(peer, 0, 4);
    await rig.waitFor('✻ Thinking… (6 words · Ctrl+O shows thinking)');
    expect(rig.frame()).not.toContain('The user wants');
    await rig.waitFor('Thinking… 0s · Esc interrupts');
    await rig.press('\u000f');
    await rig.waitFor('✻ Thinking… (6 words) The user wants a greeting file.');
    await rig.press('\u000f');
    const thinkingDone = seqOf((event) => event.type === 'block_complete' && event.block.type === 'thinking');
    play(peer, 5, thinkingDone);
    await rig.waitFor('✻ Thought (16 words · Ctrl+O shows thinking)');
    expect(rig.frame()).not.toContain('The user wants');
  });

  it('shows each tool call with its status and a short result', async () => {
    const { rig, peer } = start({ autoplay: false });
    await draft(rig);
    await rig.type('Please add a hello.txt greeting file');
    const running = seqOf((event) => event.type === 'block_update' && event.updates['status'] === 'running');
    play(peer, 0, running);
    let frame = await rig.waitFor(
      /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] draft_agent\(role: "dev", prompt: "Write hello.txt with a friendly greeting."\)/,
    );
    expect(frame).toContain('Running draft_agent… 0s · Esc interrupts');
    const result = seqOf((event) => event.type === 'block_complete' && event.block.type === 'tool_result');
    play(peer, running + 1, result);
    frame = await rig.waitFor('✓ draft_agent(role: "dev", prompt: "Write hello.txt with a friendly greeting.")');
    expect(frame).toMatch(/ ⎿ \{ "agentId": "dev-[0-9a-f]+", "status": "running" \}/);
  });

  it('shows a worker as a thread with its live status, time and cost, collapsed to its latest work', async () => {
    const start0 = (
      eventAt(seqOf((event) => event.type === 'block_start' && event.block.type === 'subagent')) as StreamEvent & {
        type: 'block_start';
      }
    ).block.createdAt;
    const { rig, peer } = start({ autoplay: false, now: start0 + 3_000 });
    await draft(rig);
    await rig.type('Please add a hello.txt greeting file');
    const written = seqOf(
      (event) =>
        event.type === 'block_complete' &&
        event.conversationId !== 'main' &&
        event.block.type === 'tool_use' &&
        event.block.name === 'write_file',
    );
    play(peer, 0, written);
    let frame = await rig.waitFor(
      /⎇ [⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] dev worker · running 3s · Write hello.txt with a friendly greeting\./,
    );
    expect(frame).toContain('│ ✓ write_file(path: "hello.txt", content: "Hello, and welcome!")');
    expect(frame).not.toContain('│ Reading the project layout first.');
    await rig.press('\u000f');
    frame = await rig.waitFor('│ Reading the project layout first.');
    expect(frame).toContain('│ ✓ list_files(path: ".")');
    await rig.press('\u000f');
    const costed = seqOf((event) => event.type === 'metadata_update' && event.conversationId !== 'main');
    play(peer, written + 1, costed);
    await rig.waitFor(/dev worker · running 3s · \$0\.04 ·/);
    play(peer, costed + 1, costed + 1);
    frame = await rig.waitFor(/⎇ ✓ dev worker · done in 0s · \$0\.04 · Write hello.txt/);
    expect(frame).toContain('⎿ Wrote hello.txt (19 bytes).');
  });

  it('shows compactions and errors as system lines', async () => {
    const { rig, peer } = start({ autoplay: false });
    await draft(rig);
    const at = Date.parse('2026-11-21T07:00:00Z');
    const system = (seq: number, subtype: string, content: string, data?: unknown): StreamEvent =>
      ({
        sessionId,
        conversationId: 'main',
        seq,
        at,
        type: 'block_complete',
        block: { id: `system-${seq}`, type: 'system', subtype, content, createdAt: at, ...(data ? { data } : {}) },
      }) as StreamEvent;
    peer.notify('channel_message', {
      channelId,
      sessionId,
      event: system(0, 'compaction', 'Compacted (manual).', {
        trigger: 'manual',
        tokensBefore: 91_234,
        tokensAfter: 8_100,
        version: 2,
      }),
    });
    await rig.waitFor('※ Context compacted (manual): 91,234 → 8,100 tokens · checkpoint v2. Nothing was deleted.');
    peer.notify('channel_message', {
      channelId,
      sessionId,
      event: system(1, 'error', 'The model is overloaded (HTTP 529). Try again in a minute.'),
    });
    await rig.waitFor('✗ The model is overloaded (HTTP 529). Try again in a minute.');
    expect(rig.raw()).toMatch(/\u001b\[31m✗ The model is overloaded/);
  });

  it('Esc interrupts the running turn', async () => {
    const { rig, peer } = start({ autoplay: false });
    await draft(rig);
    peer.handlers.set('cancel', () => ({ cancelled: true }));
    await rig.press('\u001b');
    expect(peer.count('cancel')).toBe(0);
    await rig.type('Please add a hello.txt greeting file');
    await rig.waitFor('Esc interrupts');
    await rig.press('\u001b');
    await rig.waitFor(() => peer.count('cancel') === 1);
    await rig.type('another one');
    await rig.waitFor('✗ The agent is still answering. Wait for it, or press Esc to interrupt it.');
  });

  it('after the link drops mid-turn it resumes from the last event it saw: nothing missing, nothing doubled', async () => {
    const { rig, peer } = start({ autoplay: false });
    await draft(rig);
    await rig.type('Please add a hello.txt greeting file');
    const text = seqOf((event) => event.type === 'block_start' && event.block.type === 'assistant_text');
    play(peer, 0, text + 4);
    await rig.waitFor("Sure. I'll ask a developer to write hello.txt ▍");
    peer.refuse = true;
    peer.drop();
    await rig.waitFor('Parley ● Reconnecting');
    // What the server streamed while this terminal was away.
    const turnEnd = seqOf((event) => event.type === 'metadata_update' && event.conversationId === 'main');
    for (const event of events) if (event.seq > text + 4 && event.seq <= turnEnd) peer.append(event);
    peer.refuse = false;
    const frame = await rig.waitFor('Parley ● Connected | Draft: product-analyst | Context: 31%');
    expect(count(frame, "Sure. I'll ask a developer to write hello.txt and report back when it is done.")).toBe(1);
    expect(count(frame, '❯ Please add a hello.txt greeting file')).toBe(1);
    expect(count(frame, '✻ Thought (16 words')).toBe(1);
    expect(count(frame, 'draft_agent(role: "dev"')).toBe(1);
    expect(count(frame, 'A dev worker is on it. Should the greeting be formal or casual?')).toBe(1);
    expect(frame).not.toContain('Waiting for the model…');
    const resumed = peer.requests.filter((request) => request.method === 'get_events').at(-1)!;
    expect(resumed.params).toEqual({ sessionId, afterSeq: text + 4 });
    // Live events after the reconnect carry on from there, and repeats of old ones change nothing.
    // The worker's blocks interleave with the main turn's end as the recording's timing had it.
    const workerWrite = seqOf(
      (event) => event.type === 'block_start' && event.block.type === 'tool_use' && event.block.name === 'write_file',
    );
    play(peer, text, Math.max(turnEnd, workerWrite) + 1);
    await rig.waitFor('│ ● write_file(path: "hello.txt"');
    expect(count(rig.frame(), "Sure. I'll ask a developer to write hello.txt")).toBe(1);
  });

  it('finds its draft again when the terminal connects to a channel that has one, with the history', async () => {
    const peer = new RecordedPeer(recording, { autoplay: false });
    for (const event of events) if (event.seq <= 20) peer.append(event);
    const status = (
      recording.frames.find(
        (frame) =>
          'response' in frame && frame.response === 'get_draft_status' && (frame.result as { active: boolean }).active,
      ) as { result: unknown }
    ).result;
    peer.handlers.set('get_draft_status', () => status);
    rig = renderApp(peer);
    const frame = await rig.waitFor("Sure. I'll ask a developer to write hello.txt and report back when it is done.");
    expect(frame).toContain('Draft: product-analyst');
    expect(frame).toContain('❯ Please add a hello.txt greeting file');
  });
});

describe('a compaction of the draft that this terminal did not start', () => {
  const draftStatus = () =>
    (
      recording.frames.find(
        (frame) =>
          'response' in frame && frame.response === 'get_draft_status' && (frame.result as { active: boolean }).active,
      ) as { result: unknown }
    ).result;
  const now = Date.parse('2026-11-21T07:00:00Z');
  const running = {
    running: true,
    startedAt: new Date(now - 12_000).toISOString(),
    trigger: 'auto',
    tokensBefore: 91_000,
    summarizer: { kind: 'model' },
    consecutiveFailures: 0,
    autoCompactionStopped: false,
    structuralFallback: false,
  };
  const idle = { running: false, consecutiveFailures: 0, autoCompactionStopped: false, structuralFallback: false };

  function connectToDraft(status: () => unknown): { rig: AppRig; peer: RecordedPeer } {
    const peer = new RecordedPeer(recording, { autoplay: false });
    for (const event of events) if (event.seq <= 20) peer.append(event);
    const active = draftStatus();
    peer.handlers.set('get_draft_status', () => active);
    peer.handlers.set('subscribe', (params) => ({
      all: false,
      sessionIds: [],
      notices: { all: false, sessionIds: params['sessionIds'] },
    }));
    peer.handlers.set('unsubscribe', () => ({ all: false, sessionIds: [] }));
    peer.handlers.set('get_compaction_status', (params) => {
      expect(params).toEqual({ sessionId });
      return status();
    });
    rig = renderApp(peer, { now });
    return { rig, peer };
  }

  it('one already running when the terminal connects shows the /compact spinner, timed from its start, until compaction_completed', async () => {
    const { rig, peer } = connectToDraft(() => running);
    await rig.waitFor(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] Compacting the context… 12s/);
    // Notices only: the draft's events come as channel_message, not a second time as session_event.
    expect(peer.requests.filter((request) => request.method === 'subscribe').map((request) => request.params)).toEqual([
      { sessionIds: [sessionId], events: false },
    ]);
    rig.advance(3_000);
    await rig.waitFor('Compacting the context… 15s');
    peer.notify('compaction_completed', {
      sessionId,
      trigger: 'auto',
      version: 2,
      tokensBefore: 91_000,
      tokensAfter: 4_000,
    });
    await rig.waitFor((frame) => !frame.includes('Compacting the context…'));
  });

  it('one that ended while the link was down no longer shows after the reconnect; one started meanwhile does', async () => {
    let status: unknown = running;
    const { rig, peer } = connectToDraft(() => status);
    await rig.waitFor('Compacting the context… 12s');
    status = idle;
    peer.drop();
    await rig.waitFor(() => peer.count('get_compaction_status') === 2);
    await rig.waitFor((frame) => !frame.includes('Compacting the context…'));
    status = { ...running, startedAt: new Date(now - 2_000).toISOString() };
    peer.drop();
    await rig.waitFor('Compacting the context… 2s');
    expect(peer.count('get_compaction_status')).toBe(3);
  });

  it('one started by another client shows when compaction_started comes, and clears on compaction_failed', async () => {
    const { rig, peer } = connectToDraft(() => idle);
    await rig.waitFor('Draft: product-analyst');
    await rig.waitFor(() => peer.count('get_compaction_status') === 1);
    expect(rig.frame()).not.toContain('Compacting the context…');
    peer.notify('compaction_started', { sessionId, trigger: 'auto', tokensBefore: 91_000 });
    await rig.waitFor('Compacting the context… 0s');
    peer.notify('compaction_failed', {
      sessionId,
      trigger: 'auto',
      code: 'COMPACTION_SUMMARIZER_FAILED',
      message: 'The summarizer failed: 503',
    });
    await rig.waitFor((frame) => !frame.includes('Compacting the context…'));
    // Another session's notices are not the draft's.
    peer.notify('compaction_started', { sessionId: 'another-session', trigger: 'manual', tokensBefore: 1_000 });
    peer.notify('compaction_started', { sessionId, trigger: 'manual', tokensBefore: 91_000 });
    await rig.waitFor('Compacting the context… 0s');
    expect(count(rig.frame(), 'Compacting the context…')).toBe(1);
  });
});

function checkpoint(): unknown {
  return {
    sessionId,
    version: 2,
    createdAt: '2026-11-21T07:00:04.000Z',
    trigger: 'manual',
    summary: { completed: [], inProgress: [], pending: [], decisions: [], blockers: [] },
    pinned: [],
    liveHandles: [],
    covers: { throughSeq: 63, messageCount: 12 },
    tokens: { checkpoint: 800, lastCompactionInput: 62_000, totalSaved: 61_200 },
  };
}

describe('/backend', () => {
  it('without a draft says to draft first and sends nothing', async () => {
    const { rig, peer } = start();
    await rig.waitFor('Connected | No draft');
    await rig.type('/backend gemini-cli');
    await rig.waitFor('No draft to move. Draft an agent first with /draft <role>.');
    expect(peer.count('submit_prompt')).toBe(0);
  });

  it('shows the back end, and sends the next message with the back end to move the draft to, once', async () => {
    const { rig, peer } = start();
    await draft(rig);
    await rig.type('/backend');
    await rig.waitFor('The draft runs on scripted');
    await rig.type('/backend gemini-cli');
    await rig.waitFor('The next message continues this draft on gemini-cli, with its history so far.');
    await rig.type('Please add a hello.txt greeting file');
    await rig.waitFor(() => peer.count('submit_prompt') === 1);
    const asked = peer.requests
      .filter((request) => request.method === 'submit_prompt')
      .map((request) => request.params);
    expect(asked).toEqual([{ content: 'Please add a hello.txt greeting file', backend: 'gemini-cli' }]);
  });
});
