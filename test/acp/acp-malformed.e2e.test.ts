import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { spawnParleyAcp } from './acp-process.js';

/** Raw stdio, no SDK client: what an editor with a bug (or a fuzzer) sends to `parley acp`. */

let project: string;

beforeEach(async () => {
  project = await mkdtemp(join(tmpdir(), 'parley-acp-bad-'));
});

afterEach(async () => {
  await rm(project, { recursive: true, force: true });
});

/** 1,000 lines that each need a JSON-RPC error answer, of six kinds. */
function malformedLines(): Array<{ line: string; code: number; id: number | null }> {
  const lines: Array<{ line: string; code: number; id: number | null }> = [];
  for (let index = 0; index < 1000; index++) {
    switch (index % 6) {
      case 0:
        lines.push({ line: `{"jsonrpc":"2.0","id":${index},"method":"session/prompt"`, code: -32700, id: null });
        break;
      case 1:
        lines.push({ line: `not json at all ${index} \u0000\u00ff`, code: -32700, id: null });
        break;
      case 2:
        lines.push({ line: `[{"jsonrpc":"2.0","id":${index},"method":"initialize"}]`, code: -32600, id: null });
        break;
      case 3:
        lines.push({ line: String(index), code: -32600, id: null });
        break;
      case 4:
        lines.push({
          line: JSON.stringify({ jsonrpc: '2.0', id: index, method: 'no/such_method', params: {} }),
          code: -32601,
          id: index,
        });
        break;
      default:
        // A real method with params its schema refuses.
        lines.push({
          line: JSON.stringify({ jsonrpc: '2.0', id: index, method: 'session/new', params: { cwd: index } }),
          code: -32602,
          id: index,
        });
    }
  }
  return lines;
}

it('answers each of 1,000 malformed lines with a JSON-RPC error, writes nothing else on stdout, and still serves', async () => {
  const child = spawnParleyAcp({ cwd: project });
  const stdout = createInterface({ input: child.stdout });
  const received: unknown[] = [];
  const stray: string[] = [];
  let wake: (() => void) | undefined;
  stdout.on('line', (line) => {
    try {
      received.push(JSON.parse(line));
    } catch {
      stray.push(line);
    }
    wake?.();
  });
  const until = async (count: number): Promise<void> => {
    while (received.length < count) await new Promise<void>((resolve) => (wake = resolve));
  };

  child.stdin.write(
    `${JSON.stringify({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: 1 } })}\n`,
  );
  await until(1);
  expect(received.splice(0)[0]).toMatchObject({
    id: 'init',
    result: { protocolVersion: 1, agentInfo: { name: 'parley' } },
  });

  const lines = malformedLines();
  child.stdin.write(lines.map((entry) => entry.line).join('\n') + '\n');
  await until(lines.length);
  const answers = received.splice(0) as Array<{ jsonrpc: string; id: number | null; error?: { code: number } }>;
  expect(answers.every((answer) => answer.jsonrpc === '2.0' && answer.error !== undefined)).toBe(true);
  // Errors with an id come back with that id; those without one (unparseable) in order, as id null.
  const expectedCodes = lines.map((entry) => `${entry.id}:${entry.code}`).sort();
  expect(answers.map((answer) => `${answer.id}:${answer.error!.code}`).sort()).toEqual(expectedCodes);

  // The agent is still there and speaks the protocol.
  child.stdin.write(
    `${JSON.stringify({ jsonrpc: '2.0', id: 'list', method: 'session/list', params: { cwd: project } })}\n`,
  );
  await until(1);
  expect(received[0]).toMatchObject({ id: 'list', result: { sessions: [] } });
  // Listing a folder with no data folder creates none; none of the bad lines made one either.
  expect(existsSync(join(project, '.parley'))).toBe(false);
  expect(stray).toEqual([]);

  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  child.stdin.end();
  expect(await exited).toBe(0);
});
