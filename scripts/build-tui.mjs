#!/usr/bin/env node
/**
 * Bundles the TUI's first-frame modules (dist/cli/tui-entry.js: the UI, the protocol client, Ink,
 * React and the rest of their dependencies) into dist/cli/tui-entry.bundle.js, which `parley`
 * loads when it exists (src/cli/commands/tui.ts). One minified file parses far faster than the
 * ~730 ES modules Node would otherwise resolve and load one by one (bench/tui.bench.ts measures
 * both). `npm run build` runs it after tsc; the TUI bench runs `bundleTui` on its own build.
 * React runs its production build there (NODE_ENV defined), as it would for any shipped app.
 */
import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

/**
 * Ink imports react-devtools-core statically but uses it only when DEV=true; it is not installed,
 * so an empty module stands in for it.
 * @type {import('esbuild').Plugin}
 */
const noDevtools = {
  name: 'parley-no-devtools',
  setup(build) {
    build.onResolve({ filter: /^react-devtools-core$/ }, () => ({ path: 'devtools', namespace: 'parley-stub' }));
    build.onLoad({ filter: /.*/, namespace: 'parley-stub' }, () => ({ contents: 'export default {};', loader: 'js' }));
  },
};

/**
 * Yoga (Ink's layout engine) carries its WebAssembly inline, as a data: URL, and its Emscripten
 * loader reads that URL with `fetch` whenever `fetch` exists: in Node that loads undici, a tenth of
 * a second before the first frame. Without `fetch` the same loader decodes the same base64 at once.
 * A module-scoped `fetch` hides the global from that one file (esbuild renames it in the bundle).
 * @type {import('esbuild').Plugin}
 */
const yogaWithoutFetch = {
  name: 'parley-yoga-without-fetch',
  setup(build) {
    build.onLoad({ filter: /[\\/]yoga-layout[\\/]dist[\\/]binaries[\\/]yoga-wasm-base64-esm\.js$/ }, async (args) => ({
      contents: `const fetch = undefined;\n${await readFile(args.path, 'utf8')}`,
      loader: 'js',
    }));
  },
};

/** Where the bundle's lazily loaded parts go (the tokenizer, the highlighter: each `import()` its own chunk). */
const CHUNKS = 'tui-chunks';

/** Bundles `<dist>/cli/tui-entry.js` into `<dist>/cli/tui-entry.bundle.js` and its chunks. */
export async function bundleTui(dist) {
  const entry = join(dist, 'cli', 'tui-entry.js');
  if (!existsSync(entry)) throw new Error(`${entry} is missing: compile src/ first (npm run build does).`);
  // Chunks are named by their hash: the last build's would pile up.
  await rm(join(dist, 'cli', CHUNKS), { recursive: true, force: true });
  await build({
    entryPoints: { 'tui-entry.bundle': entry },
    outdir: join(dist, 'cli'),
    // What the UI imports lazily stays lazy: without splitting, esbuild inlines every `import()`,
    // and the first frame waited for the parse of a 1 MB tokenizer it never runs.
    splitting: true,
    chunkNames: `${CHUNKS}/[name]-[hash]`,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    minify: true,
    sourcemap: true,
    define: { 'process.env.NODE_ENV': '"production"' },
    // Some dependencies are CommonJS and call require(); an ES module has none of its own.
    banner: {
      js: "import { createRequire as __parleyRequire } from 'node:module'; const require = __parleyRequire(import.meta.url);",
    },
    plugins: [noDevtools, yogaWithoutFetch],
    logLevel: 'warning',
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await bundleTui(join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'dist'));
}
