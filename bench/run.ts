/**
 * `npm run bench [name…]`: runs every `bench/*.bench.ts` (or the named ones) in one process, one after
 * another, and prints each one's markdown section. Each module exports `run(): Promise<string>` and
 * measures Parley side by side with its baseline and floor in the same run, printing ratios.
 */
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const wanted = process.argv.slice(2);
const files = readdirSync(here)
  .filter((name) => name.endsWith('.bench.ts'))
  .filter((name) => wanted.length === 0 || wanted.some((want) => name.startsWith(want)))
  .sort();

console.log(`# Parley benchmarks\n\nnode ${process.version}, ${new Date().toISOString()}\n`);
for (const file of files) {
  const module = (await import(pathToFileURL(join(here, file)).href)) as { run: () => Promise<string> };
  const started = performance.now();
  const section = await module.run();
  console.log(section.trimEnd());
  console.log(`\n_(${file}: ${((performance.now() - started) / 1000).toFixed(1)} s)_\n`);
}
