#!/usr/bin/env node
/**
 * Builds the web UI into dist/web (or `--out-dir <dir>`): src/ui/web/main.ts bundled by esbuild
 * into app.js (ES2022, minified, with a source map) beside the static files (index.html, styles.css).
 * What the page loads only when it needs it (highlight.js, on the first code block) is split into
 * chunks/, so the first paint does not wait for it.
 * `npm run build` runs it after tsc; the web UI's end-to-end test calls `buildWeb` with a temp folder.
 */
import { copyFile, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(root, 'src', 'ui', 'web');

/**
 * Keeps the bundle to what the page runs (bench/web.bench.ts prints its size): Parley's own modules
 * are pure definitions, so an export nothing uses is dropped (`sideEffects: false`); zod's locale
 * bundle and JSON-Schema import are left out (the page shows the server's English messages and never
 * reads a JSON Schema).
 * @type {import('esbuild').Plugin}
 */
const lean = {
  name: 'parley-lean',
  setup(build) {
    const stubs = {
      '../locales/index.js': 'export {};',
      './from-json-schema.js':
        'export function fromJSONSchema() { throw new Error("fromJSONSchema is not in the web bundle"); }',
    };
    build.onResolve({ filter: /^\.\.?\/(locales\/index|from-json-schema)\.js$/ }, (args) =>
      args.importer.includes(`${join('node_modules', 'zod')}`) && args.path in stubs
        ? { path: args.path, namespace: 'parley-stub' }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'parley-stub' }, (args) => ({ contents: stubs[args.path], loader: 'js' }));
    build.onResolve({ filter: /^\./ }, async (args) => {
      if (args.pluginData?.lean || !args.importer.startsWith(join(root, 'src'))) return undefined;
      const result = await build.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: { lean: true },
      });
      if (result.errors.length > 0) return { errors: result.errors };
      return { ...result, sideEffects: false };
    });
  },
};

/**
 * @param {{ outDir?: string, minify?: boolean, sourcemap?: boolean }} [options]
 * @returns {Promise<{ outDir: string, files: string[], bundleBytes: number, lazyBytes: number }>}
 */
export async function buildWeb(options = {}) {
  const outDir = resolve(options.outDir ?? join(root, 'dist', 'web'));
  await mkdir(outDir, { recursive: true });
  await rm(join(outDir, 'chunks'), { recursive: true, force: true });
  const result = await build({
    entryPoints: { app: join(source, 'main.ts') },
    outdir: outDir,
    chunkNames: 'chunks/[name]-[hash]',
    splitting: true,
    metafile: true,
    // The metafile's paths are relative to this, whatever folder the script is run from.
    absWorkingDir: root,
    bundle: true,
    format: 'esm',
    // `browser`: a Node built-in reaching the bundle is a build error, not a broken page.
    platform: 'browser',
    target: ['es2022'],
    minify: options.minify ?? true,
    sourcemap: options.sourcemap ?? true,
    legalComments: 'none',
    tsconfig: join(root, 'tsconfig.json'),
    // conversation/'s tokenizer loads lazily and the page never counts tokens: keep it out.
    external: ['gpt-tokenizer', 'gpt-tokenizer/*'],
    logLevel: 'warning',
    plugins: [lean],
  });
  const files = Object.keys(result.metafile.outputs).map((path) =>
    relative(outDir, resolve(root, path)).split(sep).join('/'),
  );
  for (const name of await readdir(join(source, 'static'))) {
    await copyFile(join(source, 'static', name), join(outDir, name));
    files.push(name);
  }
  const bundleBytes = (await stat(join(outDir, 'app.js'))).size;
  let lazyBytes = 0;
  for (const [path, output] of Object.entries(result.metafile.outputs))
    if (path.endsWith('.js') && !path.endsWith('app.js')) lazyBytes += output.bytes;
  return { outDir, files, bundleBytes, lazyBytes };
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const index = process.argv.indexOf('--out-dir');
  const outDir = index > 0 ? process.argv[index + 1] : undefined;
  const result = await buildWeb(outDir ? { outDir } : {});
  console.log(
    `web UI: ${result.files.join(', ')} in ${result.outDir} (app.js ${(result.bundleBytes / 1024).toFixed(1)} KiB, loaded later ${(result.lazyBytes / 1024).toFixed(1)} KiB)`,
  );
}
