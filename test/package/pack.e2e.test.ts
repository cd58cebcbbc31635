/**
 * The package as a user gets it: `npm pack` (which builds through `prepack`), then an install of
 * the tarball into an empty project, then the `parley` binary and one import of each entry point.
 *
 * The install is offline: the project gets a lockfile made from this repository's (the locked
 * versions of the runtime dependencies, with their integrity hashes), so npm takes every package
 * from its cache, filled by the `npm ci` that set this checkout up, and asks no registry. Optional
 * back ends (the Claude Agent SDK, the Gemini CLI) are left out, as a user without them would.
 * It costs one build (tsc and the web bundle) and one install: about a minute of CPU.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const REPOSITORY = resolve(import.meta.dirname, '..', '..');
const PACK_TIMEOUT = 900_000;

/** A name each entry point must export, by specifier. */
const KNOWN_NAMES: Record<string, string> = {
  parley: 'createSessionManager',
  'parley/conversation': 'applyEvent',
  'parley/store': 'createFileStore',
  'parley/backends': 'createBackend',
  'parley/sessions': 'SessionManager',
  'parley/harness': 'defineHarness',
  'parley/protocol': 'ProtocolClient',
  'parley/testing': 'createScriptedBackend',
};

interface Manifest {
  name: string;
  version: string;
  bin: Record<string, string>;
  engines: Record<string, string>;
  license: string;
  dependencies: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  exports: Record<string, string | { types: string; import: string }>;
  scripts: Record<string, string>;
}

interface LockEntry {
  dev?: boolean;
  link?: boolean;
  [field: string]: unknown;
}

/** A lockfile for a project that depends only on the tarball: the repository's locked runtime tree under it. */
function lockfileFor(manifest: Manifest, lock: { packages: Record<string, LockEntry> }, tarball: string): unknown {
  const packages: Record<string, unknown> = {
    '': { name: 'app', dependencies: { [manifest.name]: tarball } },
    [`node_modules/${manifest.name}`]: {
      version: manifest.version,
      resolved: tarball,
      license: manifest.license,
      dependencies: manifest.dependencies,
      optionalDependencies: manifest.optionalDependencies,
      bin: manifest.bin,
      engines: manifest.engines,
    },
  };
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (path !== '' && !entry.dev && !entry.link) packages[path] = entry;
  }
  return { name: 'app', lockfileVersion: 3, requires: true, packages };
}

const folders: string[] = [];
afterAll(async () => Promise.all(folders.map((folder) => rm(folder, { recursive: true, force: true }))));

describe('the packed package', () => {
  it(
    'installs from its tarball with no install-time script, runs `parley --version` and imports every entry point',
    async () => {
      const manifest = JSON.parse(await readFile(join(REPOSITORY, 'package.json'), 'utf8')) as Manifest;
      for (const script of ['preinstall', 'install', 'postinstall', 'prepare'])
        expect(manifest.scripts[script], `package.json must not have an install-time "${script}" script`).toBe(
          undefined,
        );

      const root = await mkdtemp(join(tmpdir(), 'parley-pack-'));
      folders.push(root);
      const { stdout: packed } = await run('npm', ['pack', '--silent', '--pack-destination', root], {
        cwd: REPOSITORY,
        maxBuffer: 64 * 1024 * 1024,
      });
      const tarballName = packed.trim().split('\n').at(-1)!;
      const { stdout: listing } = await run('tar', ['tzf', join(root, tarballName)], { maxBuffer: 64 * 1024 * 1024 });
      const files = listing.trim().split('\n');
      expect(files.filter((file) => !file.startsWith('package/dist/')).sort()).toEqual(
        ['package/README.md', 'package/package.json']
          .concat(existsSync(join(REPOSITORY, 'LICENSE')) ? ['package/LICENSE'] : [])
          .sort(),
      );
      expect(files.filter((file) => file.endsWith('.map') || /\.test\.|^package\/(src|test)\//.test(file))).toEqual([]);

      const app = join(root, 'app');
      await mkdir(app);
      const tarball = `file:../${tarballName}`;
      const lock = JSON.parse(await readFile(join(REPOSITORY, 'package-lock.json'), 'utf8')) as {
        packages: Record<string, LockEntry>;
      };
      await writeFile(
        join(app, 'package.json'),
        JSON.stringify({ name: 'app', private: true, type: 'module', dependencies: { [manifest.name]: tarball } }),
      );
      await writeFile(join(app, 'package-lock.json'), JSON.stringify(lockfileFor(manifest, lock, tarball)));
      const install = await run('npm', ['ci', '--offline', '--no-audit', '--no-fund', '--omit=optional'], {
        cwd: app,
        maxBuffer: 64 * 1024 * 1024,
      });
      expect(`${install.stdout}${install.stderr}`).not.toMatch(/install script|prepare/i);
      expect(await readdir(join(app, 'node_modules', '@anthropic-ai'))).not.toContain('claude-agent-sdk');

      const { stdout: version } = await run(join(app, 'node_modules', '.bin', 'parley'), ['--version'], { cwd: app });
      expect(version.trim()).toBe(manifest.version);

      const installed = join(app, 'node_modules', manifest.name);
      for (const [subpath, target] of Object.entries(manifest.exports)) {
        if (typeof target === 'string') continue;
        expect(existsSync(join(installed, target.types)), `${subpath}: ${target.types}`).toBe(true);
      }
      const probe = `const known = ${JSON.stringify(KNOWN_NAMES)};
for (const [specifier, name] of Object.entries(known)) {
  const module = await import(specifier);
  console.log(specifier + ' ' + typeof module[name]);
}`;
      await writeFile(join(app, 'probe.mjs'), probe);
      const { stdout: imported } = await run(process.execPath, ['probe.mjs'], { cwd: app });
      expect(imported.trim().split('\n')).toEqual(Object.keys(KNOWN_NAMES).map((specifier) => `${specifier} function`));
      expect(Object.keys(manifest.exports).filter((subpath) => subpath !== './package.json')).toEqual(
        Object.keys(KNOWN_NAMES).map((specifier) => (specifier === 'parley' ? '.' : `./${specifier.slice(7)}`)),
      );
    },
    PACK_TIMEOUT,
  );
});
