import type { Command } from 'commander';

/** Every subcommand's `register`. Add one line per command module. */
export const commands: Array<(program: Command) => void> = [];
