import type { Command } from 'commander';
import { register as backends } from './backends.js';
import { register as chat } from './chat.js';
import { register as importCommand } from './import.js';
import { register as run } from './run.js';
import { register as serve } from './serve.js';
import { register as sessions } from './sessions.js';
import { register as tui } from './tui.js';

/** Every subcommand's `register`. Add one import and one line per command module. */
export const commands: Array<(program: Command) => void> = [
  sessions,
  chat,
  backends,
  serve,
  run,
  importCommand,
  tui,
];
