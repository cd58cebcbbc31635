#!/usr/bin/env node
/**
 * The `parley` command: the composition root. Each subcommand lives in `commands/<name>.ts` and
 * exports `register(program)`; this file only lists them.
 */
import { createRequire } from 'node:module';
import type * as Commander from 'commander';
import type { Command } from 'commander';
import { dropOutputWhenReaderCloses } from './closed-output.js';
import { paintSplash } from './splash.js';
import { startTelemetry } from './telemetry.js';

// Commander is CommonJS: an `import` of it makes Node scan its files for their export names first
// (cjs-module-lexer), which took as long as loading it, before `parley` paints anything. `require`
// loads the same module object, so its classes are the ones every command module imports.
const commander = createRequire(import.meta.url)('commander') as typeof Commander;

function baseProgram(): Command {
  return new commander.Command('parley')
    .description('An open harness for conversational AI-agent sessions.')
    .version('0.1.0')
    .option('--data-dir <dir>', 'Parley data folder (default: .parley in the project folder)')
    .option(
      '--store <url>',
      'keep sessions in PostgreSQL: postgres://user:password@host:5432/database (default: $PARLEY_DATABASE_URL, else the data folder)',
    )
    .showHelpAfterError('(run parley --help for usage)');
}

/** The program with every command, or only the one `args` names (help lists them all). */
export async function createProgram(args: readonly string[] = []): Promise<Command> {
  const program = baseProgram();
  const { commandModules, loadCommands } = await import('./commands/index.js');
  const named = commandName(args);
  const wantsHelp = args.includes('--help') || args.includes('-h');
  // `parley --version` names no command and prints only the version: it needs no command module.
  const wantsVersion = named === undefined && !wantsHelp && (args.includes('--version') || args.includes('-V'));
  const only = wantsVersion
    ? []
    : named !== undefined && named in commandModules && !(named === 'help' || wantsHelp)
      ? [named]
      : undefined;
  for (const register of await loadCommands(only)) register(program);
  return program;
}

/** Global options that take a value as the next argument. */
const GLOBAL_OPTIONS_WITH_VALUE = new Set(['--data-dir', '--store']);

/** The first argument that is not a global option (skipping `--data-dir <dir>` and `--store <url>`). */
function commandName(args: readonly string[]): string | undefined {
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    if (GLOBAL_OPTIONS_WITH_VALUE.has(arg)) {
      index += 1;
      continue;
    }
    if (!arg.startsWith('-')) return arg;
  }
  return undefined;
}

/**
 * `parley` with no subcommand (only global options) opens the TUI. It loads only the TUI command,
 * not every other one, so the first frame is painted sooner.
 */
function tuiProgram(): Command {
  return baseProgram().action(async (_options: unknown, command: Command) => {
    // The first frame comes before the TUI's modules load; a terminal that is not a TTY gets the TUI's error instead.
    const erase = process.stdin.isTTY && process.stdout.isTTY ? paintSplash() : undefined;
    try {
      await (await import('./commands/tui.js')).openTui(command, {}, erase);
    } catch (error) {
      erase?.();
      throw error;
    }
  });
}

function namesNoCommand(args: readonly string[]): boolean {
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    if (GLOBAL_OPTIONS_WITH_VALUE.has(arg) && index + 1 < args.length) index += 1;
    else if (![...GLOBAL_OPTIONS_WITH_VALUE].some((option) => arg.startsWith(`${option}=`))) return false;
  }
  return true;
}

export async function main(argv: readonly string[] = process.argv): Promise<void> {
  const program = namesNoCommand(argv.slice(2)) ? tuiProgram() : await createProgram(argv.slice(2));
  program.exitOverride();
  dropOutputWhenReaderCloses(process.stdout);
  // OpenTelemetry's SDK, when OTEL_* variables ask for it; nothing is loaded otherwise.
  const telemetry = await startTelemetry();
  try {
    await program.parseAsync([...argv]);
  } catch (error) {
    if (error instanceof commander.CommanderError) {
      process.exitCode = error.exitCode;
      return;
    }
    // Loaded on this path only: the conversation layer is a tenth of a second of start-up.
    const { isParleyError } = await import('../conversation/index.js');
    if (isParleyError(error)) {
      process.stderr.write(`parley: ${error.message}\n`);
      process.exitCode = error.fault === 'user' ? 2 : 1;
      return;
    }
    throw error;
  } finally {
    await telemetry?.shutdown();
  }
}

await main();
