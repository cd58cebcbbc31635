import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createCodexBackend,
  findRollout,
  parseCodexRollout,
  writeCodexRollout,
  type PortableHistory,
} from '../../../src/backends/index.js';
import type { ConversationBlock } from '../../../src/conversation/index.js';

const THREAD = '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b';
const CWD = '/home/dev/project';
const at = (n: number) => Date.UTC(2026, 10, 25, 12, 0, n);

function blocks(): ConversationBlock[] {
  let seq = 0;
  const base = () => ({ id: `b${seq}`, seq: seq++, createdAt: at(seq), completedAt: at(seq) });
  return [
    { ...base(), type: 'user_message', content: 'List the files.' },
    { ...base(), type: 'thinking', content: 'The user wants a listing.' },
    { ...base(), type: 'tool_use', toolUseId: 'c1', name: 'shell', input: { command: 'ls; exit 3' }, status: 'error' },
    { ...base(), type: 'tool_result', toolUseId: 'c1', content: 'a.txt', isError: true, output: { exitCode: 3 } },
    { ...base(), type: 'tool_use', toolUseId: 'c2', name: 'Bash', input: { command: 'pwd' }, status: 'success' },
    { ...base(), type: 'tool_result', toolUseId: 'c2', content: '/work' },
    { ...base(), type: 'system', subtype: 'error', content: 'The back end failed.' },
    { ...base(), type: 'assistant_text', content: 'One file, in /work.' },
    { ...base(), type: 'user_message', content: 'Thanks.' },
  ] as ConversationBlock[];
}

interface Record {
  type: string;
  timestamp: string;
  payload: { type?: string; role?: string; [key: string]: unknown };
}
const recordsOf = (text: string) =>
  text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record);

describe('the Codex rollout writer', () => {
  it('writes a session_meta, then each message and shell call as the response items Codex replays; the rest as marked text', () => {
    const history: PortableHistory = { source: 'claude-code', blocks: blocks() };
    const written = writeCodexRollout(history, { nativeSessionId: THREAD, cwd: CWD, now: at(0) });
    const records = recordsOf(written.main);
    expect(records[0]).toMatchObject({
      type: 'session_meta',
      payload: { id: THREAD, cwd: CWD, cli_version: '0.163.0' },
    });
    const items = records.filter((record) => record.type === 'response_item').map((record) => record.payload);
    expect(items.map((item) => `${item.type}:${item.role ?? item['name'] ?? ''}`)).toEqual([
      'message:user',
      'message:assistant',
      'function_call:exec_command',
      'function_call_output:',
      'message:assistant',
      'message:assistant',
      'message:user',
    ]);
    expect(JSON.parse(items[2]!['arguments'] as string)).toEqual({ cmd: 'ls; exit 3' });
    expect(items[3]).toMatchObject({
      call_id: items[2]!['call_id'],
      output: 'Process exited with code 3\nOutput:\na.txt',
    });
    expect(JSON.stringify(items[1])).toContain('[thinking from claude-code, converted to text]');
    expect(JSON.stringify(items[4])).toContain('[tool call from claude-code, converted to text: Bash');
    // Codex's own session list reads the event messages.
    const events = records.filter((record) => record.type === 'event_msg').map((record) => record.payload);
    expect(events.filter((event) => event.type === 'user_message').map((event) => event['message'])).toEqual([
      'List the files.',
      'Thanks.',
    ]);
    expect(written.conversions).toEqual([
      { kind: 'thinking', count: 1 },
      { kind: 'tool_call', count: 1, names: ['Bash'] },
      { kind: 'notice', count: 1 },
    ]);
  });

  it('replaces what a checkpoint compacted with a compacted record, as Codex’s own compaction leaves it', () => {
    const history: PortableHistory = {
      blocks: blocks(),
      compacted: { summary: 'The user listed files.', coversSeq: 7 },
    };
    const records = recordsOf(writeCodexRollout(history, { nativeSessionId: THREAD, cwd: CWD, now: at(0) }).main);
    const compacted = records.findIndex((record) => record.type === 'compacted');
    expect(records[compacted]?.payload['message']).toBe('The user listed files.');
    expect(JSON.stringify(records[compacted]?.payload['replacement_history'])).toContain('The user listed files.');
    // What the checkpoint covers comes before it; what followed, after.
    const after = records.slice(compacted + 1).filter((record) => record.type === 'response_item');
    expect(after.map((record) => JSON.stringify(record.payload))).toEqual([expect.stringContaining('Thanks.')]);
  });
});

describe('Parley reads back the rollouts it writes', () => {
  it('parseCodexRollout of a written rollout gives the same user messages, answers and shell call', () => {
    const written = writeCodexRollout(
      { source: 'claude-code', blocks: blocks() },
      { nativeSessionId: THREAD, cwd: CWD, now: at(0) },
    );
    const parsed = parseCodexRollout(written.main);
    expect(parsed.warnings).toEqual([]);
    const of = (type: string) =>
      parsed.blocks.flatMap((block) => (block.type === type && 'content' in block ? [String(block.content)] : []));
    expect(of('user_message')).toEqual(['List the files.', 'Thanks.']);
    expect(of('assistant_text')).toContain('One file, in /work.');
    const call = parsed.blocks.find((block) => block.type === 'tool_use');
    expect(JSON.stringify(call)).toContain('ls; exit 3');
  });
});

describe('putting a rollout where Codex looks', () => {
  let home: string;
  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), 'parley-codex-rollout-'));
  });
  afterAll(() => rm(home, { recursive: true, force: true }));

  it('writes a new thread under today’s folder, and a rewrite of a deleted one back at the path Codex recorded', async () => {
    const backend = createCodexBackend({ codexHome: home });
    const now = Date.UTC(2026, 11, 2, 5, 6, 7);
    const written = backend.writeSessionTranscripts!({ blocks: blocks() }, { nativeSessionId: THREAD, cwd: CWD, now });
    await backend.setupSessionTranscripts!(
      THREAD,
      { main: written.main },
      { cwd: CWD, writeFile: () => Promise.resolve() },
    );
    const path = (await findRollout(home, THREAD))!;
    expect(path).toMatch(new RegExp(`/sessions/\\d{4}/\\d{2}/\\d{2}/rollout-[0-9T-]+-${THREAD}\\.jsonl$`));
    expect(await backend.readSessionTranscripts!(THREAD, { cwd: CWD, writeFile: () => Promise.resolve() })).toEqual({
      main: written.main,
    });

    // Codex's state database keeps this path: after the file is deleted the thread is written back there.
    await rm(path);
    await backend.setupSessionTranscripts!(
      THREAD,
      { main: 'rewritten\n' },
      { cwd: CWD, writeFile: () => Promise.resolve() },
    );
    expect(await readFile(path, 'utf8')).toBe('rewritten\n');
  });

  it('ignores a noted path outside Codex’s sessions folder', async () => {
    const other = '01b2c3d4-0000-7000-8000-000000000001';
    await mkdir(join(home, 'parley', 'rollouts'), { recursive: true });
    await writeFile(join(home, 'parley', 'rollouts', other), '/etc/passwd');
    const backend = createCodexBackend({ codexHome: home });
    await backend.setupSessionTranscripts!(other, { main: 'x\n' }, { cwd: CWD, writeFile: () => Promise.resolve() });
    expect(await findRollout(home, other)).toContain(join(home, 'sessions'));
  });
});
