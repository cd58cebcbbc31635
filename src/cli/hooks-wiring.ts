import { HookRunner, loadHooksConfig } from '../hooks/index.js';

/**
 * The hooks of the user's file and the project's `parley.config.json`, as a runner for the session
 * manager; undefined when none is configured. Each bad entry is reported through `warn` and left
 * out: a typo in one hook never stops Parley.
 */
export async function loadProjectHooks(
  projectRoot: string,
  warn: (line: string) => void,
): Promise<HookRunner | undefined> {
  const config = await loadHooksConfig({ projectDir: projectRoot });
  for (const problem of config.problems) warn(`hooks: ${problem}`);
  return config.hooks.length > 0 ? new HookRunner({ hooks: config.hooks, projectDir: projectRoot }) : undefined;
}
