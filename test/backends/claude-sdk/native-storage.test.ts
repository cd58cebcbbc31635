import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  encodeCwd,
  findTranscript,
  isUuid,
  lastCostState,
  nativeIdFor,
  readCostState,
  readTranscripts,
  restoreTranscripts,
} from '../../../src/backends/claude-sdk/native-storage.js';
import { agentFile, claudeMd, writeAgentProfile } from '../../../src/backends/claude-sdk/profile.js';
import { isParleyError } from '../../../src/conversation/index.js';

let root: string;
let configDir: string;
let cwd: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'parley-native-'));
  configDir = join(root, 'config');
  cwd = join(root, 'my_work.dir');
  await mkdir(cwd);
});
afterEach(() => rm(root, { recursive: true, force: true }));

const session = '13618eeb-1111-4222-8333-444455556666';

describe('claude-sdk native storage', () => {
  it('encodes a cwd as Claude Code does: every non-alphanumeric character becomes "-"', () => {
    expect(encodeCwd('/tmp/work_dir.x-DlZ3UU')).toBe('-tmp-work-dir-x-DlZ3UU');
  });

  it('maps a Parley session id to a stable UUID, and keeps a UUID as it is', () => {
    const id = nativeIdFor('dev-feature-42');
    expect(isUuid(id)).toBe(true);
    expect(id[14]).toBe('5');
    expect(nativeIdFor('dev-feature-42')).toBe(id);
    expect(nativeIdFor('dev-feature-43')).not.toBe(id);
    expect(nativeIdFor(session.toUpperCase())).toBe(session);
  });

  it('reads the last cost-state record, skipping a torn last line', () => {
    const transcript = [
      JSON.stringify({ type: 'user', message: { content: 'cost-state in a prompt' } }),
      JSON.stringify({ type: 'cost-state', totalCostUSD: 0.1, totalAPIDuration: 10 }),
      JSON.stringify({ type: 'assistant' }),
      JSON.stringify({ type: 'cost-state', totalCostUSD: 0.25, totalAPIDuration: 40 }),
      '{"type":"cost-state","totalCostUSD":9',
    ].join('\n');
    expect(lastCostState(transcript)).toEqual({ totalCostUsd: 0.25, totalApiDurationMs: 40 });
    expect(lastCostState('{"type":"user"}\n')).toBeUndefined();
  });

  it('finds the last cost-state in a long transcript from its tail, and in a short one whole', async () => {
    const path = join(root, 'long.jsonl');
    const filler = `${JSON.stringify({ type: 'user', message: { content: 'x'.repeat(1000) } })}\n`;
    const early = `${JSON.stringify({ type: 'cost-state', totalCostUSD: 1, totalAPIDuration: 1 })}\n`;
    const late = `${JSON.stringify({ type: 'cost-state', totalCostUSD: 2.5, totalAPIDuration: 99 })}\n`;
    await writeFile(path, early + filler.repeat(600) + late + filler.repeat(10));
    expect(await readCostState(path)).toEqual({ totalCostUsd: 2.5, totalApiDurationMs: 99 });
    // Only far back: found by widening the window.
    await writeFile(path, late + filler.repeat(600));
    expect(await readCostState(path)).toEqual({ totalCostUsd: 2.5, totalApiDurationMs: 99 });
    await writeFile(path, filler);
    expect(await readCostState(path)).toBeUndefined();
    expect(await readCostState(join(root, 'missing.jsonl'))).toBeUndefined();
  });

  it('restores transcripts where the CLI looks, and reads them back with their subagents', async () => {
    const saved = {
      main: '{"type":"user","n":1}\n',
      subagents: [{ id: 'a8e163d61e0ae4027', rawTranscript: '{"isSidechain":true}\n' }],
    };
    const { path, kept } = await restoreTranscripts(configDir, session, cwd, saved);
    expect(kept).toBe(false);
    expect(path).toBe(join(configDir, 'projects', encodeCwd(cwd), `${session}.jsonl`));
    expect(
      await readFile(
        join(configDir, 'projects', encodeCwd(cwd), session, 'subagents', 'agent-a8e163d61e0ae4027.jsonl'),
        'utf8',
      ),
    ).toBe('{"isSidechain":true}\n');
    expect(await readTranscripts(configDir, session, cwd)).toEqual(saved);
  });

  it('keeps a local transcript that already holds the saved one and more', async () => {
    await restoreTranscripts(configDir, session, cwd, { main: 'line 1\nline 2\n' });
    const { kept } = await restoreTranscripts(configDir, session, cwd, { main: 'line 1\n' });
    expect(kept).toBe(true);
    expect((await readTranscripts(configDir, session, cwd))?.main).toBe('line 1\nline 2\n');
  });

  it('moves a different local transcript aside instead of overwriting it', async () => {
    await restoreTranscripts(configDir, session, cwd, { main: 'local history\n' });
    await restoreTranscripts(configDir, session, cwd, { main: 'saved history\n' });
    const dir = join(configDir, 'projects', encodeCwd(cwd));
    const names = await readdir(dir);
    const aside = names.find((name) => name.startsWith(`${session}.jsonl.replaced-`));
    expect(aside).toBeDefined();
    expect(await readFile(join(dir, aside!), 'utf8')).toBe('local history\n');
    expect(await readFile(join(dir, `${session}.jsonl`), 'utf8')).toBe('saved history\n');
    expect(names.some((name) => name.endsWith('.tmp'))).toBe(false);
  });

  it('finds a transcript written under another cwd, as the CLI does on resume', async () => {
    const other = join(configDir, 'projects', '-somewhere-else');
    await mkdir(other, { recursive: true });
    await writeFile(join(other, `${session}.jsonl`), '{}\n');
    expect(await findTranscript(configDir, session, cwd)).toBe(join(other, `${session}.jsonl`));
    expect(await findTranscript(configDir, session, cwd, { searchAllProjects: false })).toBeUndefined();
    expect(await findTranscript(configDir, nativeIdFor('missing'), cwd)).toBeUndefined();
  });

  it('refuses a subagent id that is not a safe file name', async () => {
    await expect(
      restoreTranscripts(configDir, session, cwd, {
        main: 'x\n',
        subagents: [{ id: '../../escape', rawTranscript: 'x' }],
      }),
    ).rejects.toThrow(/not a safe file name/);
  });
});

describe('claude-sdk agent profile', () => {
  const profile = {
    name: 'code-reviewer',
    description: 'Reviews code: finds bugs',
    instructions: 'Review every diff.\nBe brief.',
    allowedTools: ['Read', 'Grep'],
    model: 'claude-sonnet-5-5',
  };

  it('writes CLAUDE.md with the role and .claude/agents/<name>.md with frontmatter', async () => {
    const written = new Map<string, string>();
    await writeAgentProfile(profile, {
      cwd,
      writeFile: (path, content) => Promise.resolve(void written.set(path, content)),
    });
    expect([...written.keys()]).toEqual(['CLAUDE.md', '.claude/agents/code-reviewer.md']);
    expect(written.get('CLAUDE.md')).toBe(claudeMd(profile));
    expect(claudeMd(profile)).toBe('# code-reviewer\n\nReviews code: finds bugs\n\nReview every diff.\nBe brief.\n');
    expect(agentFile(profile)).toBe(
      '---\nname: code-reviewer\ndescription: "Reviews code: finds bugs"\ntools: Read, Grep\nmodel: claude-sonnet-5-5\n---\n\nReview every diff.\nBe brief.\n',
    );
  });

  it('refuses a name that cannot be a file name, writing nothing', async () => {
    const written: string[] = [];
    const error = await writeAgentProfile(
      { ...profile, name: '../evil' },
      { cwd, writeFile: (path) => Promise.resolve(void written.push(path)) },
    ).catch((caught: unknown) => caught);
    expect(isParleyError(error, 'INVALID_INPUT')).toBe(true);
    expect(written).toEqual([]);
  });
});
