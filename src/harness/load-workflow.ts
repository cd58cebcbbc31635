import { existsSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isHarness } from './define.js';
import { HarnessError } from './errors.js';
import type { AnyHarness } from './types.js';

/**
 * The workflow contract: a module whose default export is a harness made by `defineHarness()`. A
 * `.js` (or `.mjs`) module is imported as is; a `.ts` module is loaded through tsx. Used by
 * `parley run` and by the run service (which loads a run's module again after a restart).
 */
/** Imports a workflow module and returns its default export, which must be a harness. */
export async function loadWorkflow(path: string): Promise<AnyHarness> {
  const absolute = resolve(path);
  if (!existsSync(absolute)) {
    throw new HarnessError('WORKFLOW_LOAD_FAILED', `No workflow file at ${absolute}.`, {
      fault: 'user',
      data: { path: absolute },
    });
  }
  const url = pathToFileURL(absolute).href;
  let module: { default?: unknown };
  try {
    if (['.ts', '.mts', '.cts', '.tsx'].includes(extname(absolute))) {
      let tsImport: (specifier: string, parentURL: string) => Promise<unknown>;
      try {
        ({ tsImport } = await import('tsx/esm/api'));
      } catch {
        throw new HarnessError(
          'WORKFLOW_LOAD_FAILED',
          `Loading a .ts workflow (${path}) needs tsx: install it with \`npm install --save-dev tsx\`, or compile the workflow to .js, which runs without it.`,
          { fault: 'user' },
        );
      }
      module = (await tsImport(url, import.meta.url)) as { default?: unknown };
    } else {
      module = (await import(url)) as { default?: unknown };
    }
  } catch (error) {
    if (error instanceof HarnessError) throw error;
    throw new HarnessError(
      'WORKFLOW_LOAD_FAILED',
      `Could not load the workflow ${path}: ${error instanceof Error ? error.message : String(error)}`,
      {
        fault: 'user',
        cause: error,
      },
    );
  }
  // A module outside an ESM package loads as CommonJS: its default export sits one level down.
  const exported = isHarness(module.default)
    ? module.default
    : (module.default as { default?: unknown } | undefined)?.default;
  if (!isHarness(exported)) {
    throw new HarnessError(
      'WORKFLOW_LOAD_FAILED',
      `${path} must \`export default\` a harness made by defineHarness() (its default export is ${module.default === undefined ? 'missing' : typeof module.default}).`,
      { fault: 'user' },
    );
  }
  return exported;
}
