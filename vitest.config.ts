import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

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
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
