import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { createScriptedBackend, step } from '../../src/backends/index.js';
import { HookRunner, parseHooksConfig } from '../../src/hooks/index.js';
import { closeAll, harness, tempProject, writeRole } from './helpers.js';

afterEach(closeAll);

/**
 * A draft's workers run their back end themselves, not through `runTurn`: they still run people's
 * hooks around their tools and at the end of their turn, and `WorkerEnd` once when they end.
 */
describe('hooks of a worker', () => {
  it('PreToolUse, PostToolUse and Stop fire once on its turn, then WorkerEnd with the documented input', async () => {
    const project = await tempProject();
    // After the harness is closed (afterEach): the project is this test's to remove.
    onTestFinished(project.cleanup);
    const file = join(project.root, 'events.jsonl');
    const record = join(project.root, 'record.sh');
    await writeFile(record, `#!/bin/sh\ninput=$(cat)\nprintf '%s\\n' "$input" >> ${file}\n`);
    await chmod(record, 0o755);
    const entry = [{ hooks: [{ type: 'command', command: record }] }];
    const parsed = parseHooksConfig(
      {
        PreToolUse: entry,
        PostToolUse: entry,
        Stop: entry,
        WorkerEnd: [{ matcher: 'reader', hooks: entry[0]!.hooks }],
      },
      'parley.config.json',
    );
    expect(parsed.problems).toEqual([]);
    const dev = createScriptedBackend({ idPrefix: 'dev' });
    const h = await harness({
      project,
      backends: { 'dev-backend': dev },
      hooks: new HookRunner({ hooks: parsed.hooks, projectDir: project.root }),
    });
    await writeRole(
      h.dataDir,
      'reader.md',
      '---\ndescription: Reads files\nbackend: dev-backend\npermissions: [files-read]\n---\nYou read files.\n',
    );
    await writeFile(join(project.root, 'notes.txt'), 'hello\n');
    dev.enqueue([
      step.tool('read_file', { path: 'notes.txt' }),
      step.text('{"status":"done","summary":"Read the notes","details":"hello"}'),
    ]);
    const answer = await h.service.submitPrompt({ channelId: 'solo', content: 'Read notes.txt', role: 'reader' });
    expect(answer).toMatchObject({ mode: 'dispatch', result: { status: 'completed' } });
    if (answer.mode !== 'dispatch') return;
    const read = async () =>
      (await readFile(file, 'utf8'))
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    await vi.waitFor(async () => expect(await read()).toHaveLength(4));
    const inputs = await read();
    expect(inputs.map((input) => input['hook_event_name'])).toEqual(['PreToolUse', 'PostToolUse', 'Stop', 'WorkerEnd']);
    expect(inputs[0]).toMatchObject({
      session_id: answer.sessionId,
      tool_name: 'read_file',
      tool_input: { path: 'notes.txt' },
    });
    expect(inputs[1]).toMatchObject({ tool_name: 'read_file', tool_response: { isError: false } });
    expect(inputs[3]).toEqual({
      session_id: answer.sessionId,
      cwd: project.root,
      hook_event_name: 'WorkerEnd',
      agent_id: answer.result.agentId,
      role: 'reader',
      status: 'completed',
      summary: 'Read the notes',
      attempts: 1,
      duration_ms: answer.result.durationMs,
      cost_usd: 0,
      conversation_id: 'main',
      project: expect.any(String),
    });
  });
});
