#!/usr/bin/env node
/**
 * Builds the web UI into dist/web (or `--out-dir <dir>`): src/ui/web/main.ts bundled by esbuild
 * into app.js (ES2022, minified, with a source map) beside the static files (index.html, styles.css).
 * `npm run build` runs it after tsc; the web UI's end-to-end test calls `buildWeb` with a temp folder.
 */
import { copyFile, mkdir, readdir, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(root, 'src', 'ui', 'web');

/**
 * Keeps the bundle to what the page runs (≈250 KiB minified instead of ≈530): Parley's own modules
 * are pure definitions, so an export nothing uses is dropped (`sideEffects: false`); zod's locale
 * bundle and JSON-Schema import are left out (the page shows the server's English messages and never
 * reads a JSON Schema).
 * @type {import('esbuild').Plugin}
 */
const lean = {
  name: 'parley-lean',
  setup(build) {
    const stubs = { '../locales/index.js': 'export {};', './from-json-schema.js': 'export function fromJSONSchema() { throw new Error("fromJSONSchema is not in the web bundle"); }' };
    build.onResolve({ filter: /^\.\.?\/(locales\/index|from-json-schema)\.js$/ }, (args) =>
      args.importer.includes(`${join('node_modules', 'zod')}`) && args.path in stubs ? { path: args.path, namespace: 'parley-stub' } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'parley-stub' }, (args) => ({ contents: stubs[args.path], loader: 'js' }));
    build.onResolve({ filter: /^\./ }, async (args) => {
      if (args.pluginData?.lean || !args.importer.startsWith(join(root, 'src'))) return undefined;
      const result = await build.resolve(args.path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, pluginData: { lean: true } });
      if (result.errors.length > 0) return { errors: result.errors };
      return { ...result, sideEffects: false };
    });
  },
};

/**
 * @param {{ outDir?: string, minify?: boolean, sourcemap?: boolean }} [options]
 * @returns {Promise<{ outDir: string, files: string[], bundleBytes: number }>}
 */
export async function buildWeb(options = {}) {
  const outDir = resolve(options.outDir ?? join(root, 'dist', 'web'));
  await mkdir(outDir, { recursive: true });
  await build({
    entryPoints: [join(source, 'main.ts')],
    outfile: join(outDir, 'app.js'),
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
  const files = ['app.js'];
  if (options.sourcemap ?? true) files.push('app.js.map');
  for (const name of await readdir(join(source, 'static'))) {
    await copyFile(join(source, 'static', name), join(outDir, name));
    files.push(name);
  }
  const bundleBytes = (await stat(join(outDir, 'app.js'))).size;
  return { outDir, files, bundleBytes };
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const index = process.argv.indexOf('--out-dir');
  const outDir = index > 0 ? process.argv[index + 1] : undefined;
  const result = await buildWeb(outDir ? { outDir } : {});
  console.log(`web UI: ${result.files.join(', ')} in ${result.outDir} (app.js ${(result.bundleBytes / 1024).toFixed(1)} KiB)`);
}
