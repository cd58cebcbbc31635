import { existsSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { CONFIG_FILE_NAME, readParleyConfig } from '../backends/index.js';
import { HarnessError } from './errors.js';

/**
 * Where a run's workflow is: a name from the project's `parley.config.json` (`workflows: { name:
 * path }`), else a module path relative to the project folder. Either way the module must be inside
 * the project: a run cannot load code from elsewhere on the machine.
 */
export async function resolveWorkflowRef(projectRoot: string, ref: string): Promise<{ ref: string; path: string }> {
  if (typeof ref !== 'string' || ref.trim() === '') {
    throw new HarnessError(
      'INVALID_INPUT',
      'A run needs a workflow: a module path under the project, or a name from the `workflows` of parley.config.json.',
      { fault: 'user' },
    );
  }
  const root = resolve(projectRoot);
  const config = await readParleyConfig(join(root, CONFIG_FILE_NAME));
  const named = config?.workflows?.[ref];
  const path = resolve(root, named ?? ref);
  const inside = relative(root, path);
  if (inside === '' || inside.startsWith('..') || isAbsolute(inside)) {
    throw new HarnessError(
      'INVALID_INPUT',
      `The workflow "${ref}" resolves to ${path}, which is outside the project folder ${root}. Put the workflow module inside the project.`,
      {
        fault: 'user',
        data: { workflow: ref, path },
      },
    );
  }
  if (!existsSync(path)) {
    const names = Object.keys(config?.workflows ?? {});
    throw new HarnessError(
      'WORKFLOW_LOAD_FAILED',
      named !== undefined
        ? `The workflow "${ref}" in ${CONFIG_FILE_NAME} points to ${path}, which does not exist. Fix its path in the \`workflows\` section.`
        : `No workflow "${ref}": there is no file ${path}, and ${CONFIG_FILE_NAME} names ${names.length > 0 ? `only ${names.join(', ')}` : 'no workflows'}. Give a module path under the project or a name from its \`workflows\` section.`,
      { fault: 'user', data: { workflow: ref, path } },
    );
  }
  return { ref, path };
}
