import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const script = join(process.cwd(), 'scripts/check-layers.mjs');
const folders: string[] = [];
afterEach(async () => Promise.all(folders.splice(0).map((folder) => rm(folder, { recursive: true, force: true }))));

async function tree(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'parley-layers-'));
  folders.push(root);
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), content);
  }
  return root;
}

async function check(root: string): Promise<{ ok: boolean; output: string }> {
  try {
    const { stdout } = await run(process.execPath, [script, root]);
    return { ok: true, output: stdout };
  } catch (error) {
    const failure = error as { stderr: string };
    return { ok: false, output: failure.stderr };
  }
}

describe('check-layers', () => {
  it('passes the real source tree', async () => {
    expect((await check(join(process.cwd(), 'src'))).ok).toBe(true);
  });

  it('fails when a module imports a layer above its own', async () => {
    const root = await tree({
      'store/index.ts': "export * from '../sessions/index.js';\n",
      'sessions/index.ts': 'export const x = 1;\n',
    });
    const result = await check(root);
    expect(result.ok).toBe(false);
    expect(result.output).toContain("layer 'store' may not import layer 'sessions'");
  });

  it('fails when a module reaches past another layer\'s index.ts', async () => {
    const root = await tree({
      'conversation/index.ts': "export * from './blocks.js';\n",
      'conversation/blocks.ts': 'export const b = 1;\n',
      'store/index.ts': "export { b } from '../conversation/blocks.js';\n",
    });
    const result = await check(root);
    expect(result.ok).toBe(false);
    expect(result.output).toContain('past the public face');
  });

  it('fails when runtime imports form a cycle, but not for type-only imports', async () => {
    const cyclic = await tree({
      'sessions/index.ts': "export * from './a.js';\n",
      'sessions/a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
      'sessions/b.ts': "import { a } from './a.js';\nexport const b = () => a;\n",
    });
    const result = await check(cyclic);
    expect(result.ok).toBe(false);
    expect(result.output).toContain('import cycle');
    const typeOnly = await tree({
      'sessions/index.ts': "export * from './a.js';\n",
      'sessions/a.ts': "import type { B } from './b.js';\nexport type A = { b?: B };\nexport const a = 1;\n",
      'sessions/b.ts': "import { a } from './a.js';\nexport type B = { a: typeof a };\n",
    });
    expect((await check(typeOnly)).ok).toBe(true);
  });
});
