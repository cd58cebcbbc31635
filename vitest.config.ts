import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { HeavyFirstSequencer } from './test/helpers/heavy-first-sequencer.js';

const source = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  resolve: {
    // As tsconfig.json's `paths`: the examples import `parley` as a user would, and get this checkout's source.
    alias: [
      { find: /^parley$/, replacement: source('./src/index.ts') },
      { find: /^parley\/(.+)$/, replacement: source('./src/entry/$1.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    // Two cores: tests that start real CLIs (≈200 MB, ≈0.5 s each) must not all run at once.
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    // The longest files first, also in a clean clone with no recorded durations (see the file).
    sequence: { sequencer: HeavyFirstSequencer },
    // Compiles src/ once, so the tests that start `parley` as a process start it with plain node.
    globalSetup: ['test/helpers/compiled-cli.ts'],
    // The bounds of waiting on a busy machine: 120 s for a test in an end-to-end file, 20 s for
    // vi.waitFor and vi.waitUntil (see the file); expect.poll's here.
    setupFiles: ['test/helpers/test-setup.ts'],
    expect: { poll: { timeout: 20_000 } },
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
