#!/usr/bin/env node
/**
 * The `parley` command: the composition root. Each subcommand lives in `commands/<name>.ts` and
 * exports `register(program)`; this file only lists them.
 */
import { Command, CommanderError } from 'commander';
import { isParleyError } from '../conversation/index.js';
import { commands } from './commands/index.js';

export function createProgram(): Command {
  const program = new Command('parley')
    .description('An open harness for conversational AI-agent sessions.')
    .version('0.1.0')
    .option('--data-dir <dir>', 'Parley data folder (default: .parley in the project folder)')
    .showHelpAfterError('(run parley --help for usage)');
  for (const register of commands) register(program);
  return program;
}

export async function main(argv: readonly string[] = process.argv): Promise<void> {
  const program = createProgram();
  program.exitOverride();
  try {
    await program.parseAsync([...argv]);
  } catch (error) {
    if (error instanceof CommanderError) {
      process.exitCode = error.exitCode;
      return;
    }
    if (isParleyError(error)) {
      process.stderr.write(`parley: ${error.message}\n`);
      process.exitCode = error.fault === 'user' ? 2 : 1;
      return;
    }
    throw error;
  }
}

await main();
