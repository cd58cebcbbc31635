import { createHmac } from 'node:crypto';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readParleyConfig } from '../../src/backends/index.js';
import {
  HookRunner,
  loadHooksConfig,
  parseHooksConfig,
  SIGNATURE_HEADER,
  userConfigPath,
  type ConfiguredHook,
  type HookInput,
} from '../../src/hooks/index.js';

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'parley-hooks-'));
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

/** A shell script in the temp folder; returns its path. */
async function script(name: string, body: string): Promise<string> {
  const path = join(folder, name);
  await writeFile(path, `#!/bin/sh\n${body}\n`);
  await chmod(path, 0o755);
  return path;
}

function runnerOf(event: string, hooks: unknown[], matcher?: string): HookRunner {
  const parsed = parseHooksConfig({ [event]: [{ ...(matcher ? { matcher } : {}), hooks }] }, 'test.json');
  expect(parsed.problems).toEqual([]);
  return new HookRunner({ hooks: parsed.hooks, projectDir: folder });
}

const input = (event: HookInput['hook_event_name'], fields: Record<string, unknown> = {}): HookInput => ({
  session_id: 's1',
  cwd: '/project',
  hook_event_name: event,
  ...fields,
});

describe('hook configuration', () => {
  it('keeps the good entries and names the file and field of each bad one', () => {
    const parsed = parseHooksConfig(
      {
        PreToolUse: [
          { matcher: 'Bash', hooks: [{ type: 'command', command: 'true' }, { type: 'command' }] },
          { matcher: '(unclosed', hooks: [{ type: 'command', command: 'true' }] },
        ],
        AfterEverything: [{ hooks: [{ type: 'command', command: 'true' }] }],
        Stop: [{ hooks: [{ type: 'http', url: 'ftp://example.com', secretEnv: 'not a name' }] }],
      },
      'parley.config.json',
    );
    expect(parsed.hooks.map((hook) => hook.source)).toEqual(['parley.config.json hooks.PreToolUse[0].hooks[0]']);
    expect(parsed.problems).toHaveLength(4);
    expect(parsed.problems[0]).toMatch(/hooks\.PreToolUse\[0\]\.hooks\[1\]\.command/);
    expect(parsed.problems[1]).toMatch(/hooks\.PreToolUse\[1\]\.matcher: is not a valid regular expression/);
    expect(parsed.problems[2]).toMatch(/hooks\.AfterEverything: is not an event; use one of SessionStart/);
    expect(parsed.problems[3]).toMatch(/hooks\.Stop\[0\]\.hooks\[0\]\.(url|secretEnv)/);
  });

  it('a project file with hooks still passes the strict config schema; a bad hook file reports its line and runs none', async () => {
    const project = join(folder, 'parley.config.json');
    await writeFile(
      project,
      JSON.stringify({ backend: 'scripted', hooks: { Stop: [{ hooks: [{ type: 'command', command: 'true' }] }] } }),
    );
    await expect(readParleyConfig(project)).resolves.toMatchObject({ backend: 'scripted' });
    const home = join(folder, 'home');
    await rm(home, { recursive: true, force: true });
    await writeFile(join(folder, 'user.json'), '');
    const env = { PARLEY_CONFIG_HOME: join(folder, 'user') };
    expect(userConfigPath(env)).toBe(join(folder, 'user', 'config.json'));
    expect(userConfigPath({ XDG_CONFIG_HOME: '/x' })).toBe('/x/parley/config.json');
    expect(userConfigPath({ HOME: '/h' })).toBe('/h/.config/parley/config.json');

    const loaded = await loadHooksConfig({ projectDir: folder, env });
    expect(loaded.problems).toEqual([]);
    expect(loaded.hooks.map((hook) => hook.event)).toEqual(['Stop']);

    await writeFile(project, '{\n  "hooks": {\n    "Stop": [ { "hooks": [ { "type": "command" } ] } ]\n  }\n}\n');
    const bad = await loadHooksConfig({ projectDir: folder, env });
    expect(bad.hooks).toEqual([]);
    expect(bad.problems[0]).toContain(`${project} (line 3): hooks.Stop[0].hooks[0].command`);

    await writeFile(project, '{\n  "hooks": {\n    "Stop": 1 x\n  }\n}\n');
    const broken = await loadHooksConfig({ projectDir: folder, env });
    expect(broken.problems[0]).toMatch(/is not valid JSON \(line 3: .*\); no hook from it runs/);
  });

  it('reads the user file before the project file and runs a command listed in both once', async () => {
    const user = join(folder, 'user');
    await writeFile(join(folder, 'log'), '');
    const { mkdir } = await import('node:fs/promises');
    await mkdir(user);
    const command = `echo ran >> ${join(folder, 'log')}`;
    const hooks = { Stop: [{ hooks: [{ type: 'command', command }] }] };
    await writeFile(join(user, 'config.json'), JSON.stringify({ hooks }));
    await writeFile(join(folder, 'parley.config.json'), JSON.stringify({ hooks }));
    const loaded = await loadHooksConfig({ projectDir: folder, env: { PARLEY_CONFIG_HOME: user } });
    expect(loaded.hooks.map((hook) => hook.source.split(' ')[0])).toEqual([
      join(user, 'config.json'),
      join(folder, 'parley.config.json'),
    ]);
    await new HookRunner({ hooks: loaded.hooks }).run(input('Stop'));
    const { readFile } = await import('node:fs/promises');
    expect(await readFile(join(folder, 'log'), 'utf8')).toBe('ran\n');
  });
});

describe('command hooks', () => {
  it('gets the event JSON on standard input; exit 0 output is context, JSON output can add context', async () => {
    const plain = await script('plain.sh', `cat > ${join(folder, 'input.json')}; echo "remember the tests"`);
    const json = await script('json.sh', `echo '{"hookSpecificOutput":{"additionalContext":"from json"}}'`);
    const runner = runnerOf('UserPromptSubmit', [
      { type: 'command', command: plain },
      { type: 'command', command: json },
    ]);
    const outcome = await runner.run(input('UserPromptSubmit', { prompt: 'hello' }));
    expect(outcome).toEqual({ context: ['remember the tests', 'from json'], failures: [] });
    const { readFile } = await import('node:fs/promises');
    expect(JSON.parse(await readFile(join(folder, 'input.json'), 'utf8'))).toEqual({
      session_id: 's1',
      cwd: '/project',
      hook_event_name: 'UserPromptSubmit',
      prompt: 'hello',
    });
  });

  it('exit code 2 blocks with standard error as the reason; another code is a failure, not a block', async () => {
    const block = await script('block.sh', 'echo "rm is not allowed here" >&2; exit 2');
    const crash = await script('crash.sh', 'echo "boom" >&2; exit 3');
    const blocked = await runnerOf('PreToolUse', [{ type: 'command', command: block }]).run(input('PreToolUse'));
    expect(blocked.blocked?.reason).toBe('rm is not allowed here');
    const crashed = await runnerOf('PreToolUse', [{ type: 'command', command: crash }]).run(input('PreToolUse'));
    expect(crashed.blocked).toBeUndefined();
    expect(crashed.failures).toEqual([expect.objectContaining({ target: crash, reason: 'exited with code 3: boom' })]);
  });

  it('a JSON decision of block or a deny permission decision blocks too', async () => {
    const deny = await script(
      'deny.sh',
      `echo '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"not on main"}}'`,
    );
    const outcome = await runnerOf('PreToolUse', [{ type: 'command', command: deny }]).run(input('PreToolUse'));
    expect(outcome.blocked?.reason).toBe('not on main');
  });

  it('a hook that hangs past its timeout is stopped, and the failure says so', async () => {
    const hang = await script('hang.sh', 'sleep 30');
    const started = Date.now();
    const outcome = await runnerOf('Stop', [{ type: 'command', command: hang, timeout: 0.3 }]).run(input('Stop'));
    expect(outcome.failures[0]?.reason).toBe('did not finish within 0.3 s and was stopped');
    // Killed with its process group: the sleeping child does not keep the run waiting for 30 s.
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('garbage output is a failure and decides nothing', async () => {
    const garbage = await script('garbage.sh', `printf '{"decision": "block", oops'`);
    const binary = await script('binary.sh', `printf 'ok\\001\\002\\003'`);
    const outcome = await runnerOf('PreToolUse', [
      { type: 'command', command: garbage },
      { type: 'command', command: binary },
    ]).run(input('PreToolUse'));
    expect(outcome.blocked).toBeUndefined();
    expect(outcome.context).toEqual([]);
    expect(outcome.failures.map((failure) => failure.reason)).toEqual([
      expect.stringMatching(/^printed output that is not valid JSON/),
      expect.stringMatching(/^printed output that is not text/),
    ]);
  });

  it('a matcher selects tools by name, as an anchored regular expression', async () => {
    const block = await script('block.sh', 'echo no >&2; exit 2');
    const runner = runnerOf('PreToolUse', [{ type: 'command', command: block }], 'Bash|write_.*');
    expect((await runner.run(input('PreToolUse'), { matchValue: 'Bash' })).blocked).toBeDefined();
    expect((await runner.run(input('PreToolUse'), { matchValue: 'write_file' })).blocked).toBeDefined();
    expect((await runner.run(input('PreToolUse'), { matchValue: 'BashOutput' })).blocked).toBeUndefined();
    expect((await runner.run(input('PreToolUse'), { matchValue: 'read_file' })).blocked).toBeUndefined();
    expect(runner.has('PreToolUse', 'read_file')).toBe(false);
  });
});

describe('HTTP hooks', () => {
  let received: Array<{ headers: IncomingHttpHeaders; body: string }>;
  let answer: { status: number; body: string; type: string };
  let server: ReturnType<typeof createServer>;
  let url: string;
  beforeEach(async () => {
    received = [];
    answer = { status: 200, body: 'ok', type: 'text/plain' };
    server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      request.on('end', () => {
        received.push({ headers: request.headers, body });
        response.writeHead(answer.status, { 'content-type': answer.type }).end(answer.body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook/secret-path`;
  });
  afterEach(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('posts the event JSON signed with an HMAC-SHA256 of the secret', async () => {
    const hooks: ConfiguredHook[] = parseHooksConfig(
      { Stop: [{ hooks: [{ type: 'http', url, secretEnv: 'HOOK_SECRET' }] }] },
      'test.json',
    ).hooks;
    const runner = new HookRunner({ hooks, env: { HOOK_SECRET: 'shh' } });
    const outcome = await runner.run(input('Stop', { stop_reason: 'end_turn' }));
    expect(outcome).toEqual({ context: [], failures: [] });
    const [request] = received;
    expect(JSON.parse(request!.body)).toMatchObject({ hook_event_name: 'Stop', stop_reason: 'end_turn' });
    const expected = `sha256=${createHmac('sha256', 'shh').update(request!.body).digest('hex')}`;
    expect(request!.headers[SIGNATURE_HEADER]).toBe(expected);
    expect(request!.headers['x-parley-event']).toBe('Stop');
    expect(request!.body).not.toContain('shh');
  });

  it('a JSON answer can block; an error status or a missing secret is a failure that hides the URL path', async () => {
    const hooks = parseHooksConfig(
      { PreToolUse: [{ hooks: [{ type: 'http', url, secretEnv: 'HOOK_SECRET' }] }] },
      'test.json',
    ).hooks;
    answer = { status: 200, body: '{"decision":"block","reason":"webhook says no"}', type: 'application/json' };
    const runner = new HookRunner({ hooks, env: { HOOK_SECRET: 'shh' } });
    expect((await runner.run(input('PreToolUse'))).blocked?.reason).toBe('webhook says no');
    answer = { status: 500, body: 'down', type: 'text/plain' };
    const failed = await runner.run(input('PreToolUse'));
    expect(failed.failures[0]?.reason).toMatch(/^answered 500/);
    expect(failed.failures[0]?.target).not.toContain('secret-path');
    const unsigned = await new HookRunner({ hooks, env: {} }).run(input('PreToolUse'));
    expect(unsigned.failures[0]?.reason).toBe('its secret variable HOOK_SECRET is not set, so nothing was sent');
  });
});
