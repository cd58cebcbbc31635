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

  it("fails when a module reaches past another layer's index.ts", async () => {
    const root = await tree({
      'conversation/index.ts': "export * from './blocks.js';\n",
      'conversation/blocks.ts': 'export const b = 1;\n',
      'store/index.ts': "export { b } from '../conversation/blocks.js';\n",
    });
    const result = await check(root);
    expect(result.ok).toBe(false);
    expect(result.output).toContain('past the public face');
  });

  it('fails when runtime imports form a cycle', async () => {
    const cyclic = await tree({
      'sessions/index.ts': "export * from './a.js';\n",
      'sessions/a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
      'sessions/b.ts': "import { a } from './a.js';\nexport const b = () => a;\n",
    });
    const result = await check(cyclic);
    expect(result.ok).toBe(false);
    expect(result.output).toContain('import cycle');
  });

  it('fails on a cycle between files inside a layer closed by a type-only import, naming its path', async () => {
    // The shape src/backends/ had: the registry imports a registration, which imports the registry's types.
    const root = await tree({
      'backends/index.ts': "export * from './registry.js';\n",
      'backends/registry.ts':
        "import { scripted } from './scripted/registration.js';\nexport interface Registration { name: string }\nexport const all = [scripted];\n",
      'backends/scripted/registration.ts':
        "import type { Registration } from '../registry.js';\nexport const scripted: Registration = { name: 'scripted' };\n",
    });
    const result = await check(root);
    expect(result.ok).toBe(false);
    expect(result.output).toContain(
      'import cycle: backends/registry.ts -> backends/scripted/registration.ts -> backends/registry.ts',
    );
  });

  it('passes when the shared types live in a contract module both sides import, and for dynamic imports', async () => {
    const root = await tree({
      'backends/index.ts': "export * from './registry.js';\n",
      'backends/contract.ts': 'export interface Registration { name: string }\n',
      'backends/registry.ts':
        "import type { Registration } from './contract.js';\nimport { scripted } from './scripted/registration.js';\nexport const all: Registration[] = [scripted];\nexport const load = () => import('./lazy.js');\n",
      'backends/scripted/registration.ts':
        "import type { Registration } from '../contract.js';\nexport const scripted: Registration = { name: 'scripted' };\n",
      'backends/lazy.ts':
        "import type { Registration } from './contract.js';\nexport const count = (all: Registration[]) => all.length;\n",
    });
    const result = await check(root);
    expect(result.output).not.toContain('import cycle');
    expect(result.ok).toBe(true);
  });

  it('fails on a cycle closed by a dynamic import: a lazy opener whose implementation imports it back', async () => {
    // The shape src/store/postgres/ had: index.ts loaded each store with import(), and each store
    // imported index.ts back for its default schema.
    const root = await tree({
      'store/index.ts': "export * from './opener.js';\n",
      'store/opener.ts':
        "export const DEFAULT_SCHEMA = 'parley';\nexport const open = async () => (await import('./implementation.js')).openStore();\n",
      'store/implementation.ts':
        "import { DEFAULT_SCHEMA } from './opener.js';\nexport const openStore = () => DEFAULT_SCHEMA;\n",
    });
    const result = await check(root);
    expect(result.ok).toBe(false);
    expect(result.output).toContain(
      'import cycle: store/implementation.ts -> store/opener.ts -> store/implementation.ts',
    );
  });
});
