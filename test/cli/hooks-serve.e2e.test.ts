import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connectToServer, startServeProcess } from '../server/serve-process.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('parley serve with hooks in parley.config.json', () => {
  it("runs the project's Stop hook on a turn; bad entries are reported with file and line and left out", async () => {
    const project = await mkdtemp(join(tmpdir(), 'parley-serve-hooks-'));
    const userHome = await mkdtemp(join(tmpdir(), 'parley-serve-hooks-user-'));
    cleanups.push(() => rm(project, { recursive: true, force: true }));
    cleanups.push(() => rm(userHome, { recursive: true, force: true }));
    const config = join(project, 'parley.config.json');
    await writeFile(
      config,
      JSON.stringify(
        {
          defaultRole: 'dev',
          hooks: {
            Stop: [{ hooks: [{ type: 'command', command: 'cat > "$PARLEY_PROJECT_DIR/stop.json"' }] }],
            AfterEverything: [{ hooks: [{ type: 'command', command: 'true' }] }],
            PreToolUse: [{ hooks: [{ type: 'command' }] }],
          },
          notifications: { desktop: false, loudness: 11 },
        },
        null,
        2,
      ),
    );
    const serve = await startServeProcess(project, { PARLEY_CONFIG_HOME: userHome });
    cleanups.push(async () => {
      if (serve.child.exitCode === null) serve.child.kill('SIGKILL');
      await serve.exited;
    });
    const output = serve.output();
    expect(output).toContain(`hooks: ${config} (line 14): hooks.AfterEverything: is not an event;`);
    expect(output).toContain(`hooks: ${config} (line 24): hooks.PreToolUse[0].hooks[0].command:`);
    expect(output).toContain(`hooks: ${config} (line 36): notifications.loudness: is not a setting;`);

    const client = await connectToServer(serve.info, 'hooked');
    cleanups.push(async () => client.close());
    const name = (await client.request('list_projects')).projects.find((entry) => entry.current)!.name;
    await client.request('create_task', { project: name, title: 'hooked', slug: 'hooked' });
    await client.request('draft', { role: 'dev', project: name, task: 'hooked' });
    const status = new Promise<void>((resolve) => client.on('draft_status', () => resolve()));
    const { sessionId } = await client.request('submit_prompt', { content: 'Hello' });
    await status;
    const stop = JSON.parse(await readFile(join(project, 'stop.json'), 'utf8')) as Record<string, unknown>;
    expect(stop).toMatchObject({
      hook_event_name: 'Stop',
      session_id: sessionId,
      cwd: project,
      stop_hook_active: false,
    });
  });
});
