import type { Command } from 'commander';

type CommandModule = { register: (program: Command) => void };

/**
 * Every command module, by the command names it registers. Loaded on demand: `parley serve` needs
 * only serve.ts, and each module pulls in its layers (back-end SDKs, the harness, the TUI), so
 * loading one instead of all keeps start-up short. Add one line per command module.
 */
export const commandModules: Record<string, () => Promise<CommandModule>> = {
  sessions: () => import('./sessions.js'),
  show: () => import('./sessions.js'),
  search: () => import('./search.js'),
  fork: () => import('./fork.js'),
  rewind: () => import('./history.js'),
  branches: () => import('./history.js'),
  chat: () => import('./chat.js'),
  backends: () => import('./backends.js'),
  serve: () => import('./serve.js'),
  run: () => import('./run.js'),
  runs: () => import('./runs.js'),
  answer: () => import('./runs.js'),
  import: () => import('./import.js'),
  tui: () => import('./tui.js'),
  migrate: () => import('./migrate.js'),
  acp: () => import('./acp.js'),
  pair: () => import('./pair.js'),
  devices: () => import('./devices.js'),
  goal: () => import('./goal.js'),
  schedule: () => import('./schedule.js'),
};

/** The modules for `names`, or all of them (for help and unknown commands), each once. */
export async function loadCommands(names?: readonly string[]): Promise<Array<(program: Command) => void>> {
  const loaders = names ? names.map((name) => commandModules[name]!) : Object.values(commandModules);
  const modules = await Promise.all([...new Set(loaders)].map((load) => load()));
  return [...new Set(modules)].map((module) => module.register);
}
