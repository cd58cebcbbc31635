import type { Command } from 'commander';
import { createSessionManager, parseForkPoint, REWIND_RESTORES, type RewindRestore } from '../../sessions/index.js';
import { ValidationError } from '../../conversation/index.js';
import { openChosenStore, storeOption } from '../options.js';

interface RewindCommandOptions {
  to: string;
  restore?: string;
  overwrite?: boolean;
}

/**
 * `parley rewind <sessionId> --to <seq|block>` and `parley branches <sessionId> [--switch <branch>]`:
 * the history tree from the command line. A rewind keeps every event (what came after stays as a
 * branch `parley branches` lists); the next `parley chat --session <id>` goes on from the point.
 */
export function register(program: Command): void {
  program
    .command('rewind')
    .description('Take a session back to a point: what came after stays, as a branch')
    .argument('<sessionId>', 'the session to rewind (see `parley sessions`)')
    .requiredOption('--to <point>', 'the last seq or block id kept (see `parley show`)')
    .option('--restore <what>', 'conversation, files or both', 'conversation')
    .option('--overwrite', 'with files: overwrite files changed since the agent last touched them')
    .action(async (sessionId: string, options: RewindCommandOptions, command: Command) => {
      const to = parseForkPoint(options.to);
      const restore = restoreOf(options.restore);
      const store = await openChosenStore(command);
      const manager = await createSessionManager(storeOption(command, store));
      try {
        const result = await manager.rewind(sessionId, {
          to,
          restore,
          ...(options.overwrite ? { overwrite: true } : {}),
        });
        const files = result.files ? `, ${result.files.restored.length} files restored` : '';
        process.stdout.write(
          `rewound ${sessionId} to seq ${result.seq} (${restore}${files}); what came after is kept as a branch (parley branches ${sessionId})\n`,
        );
      } finally {
        await manager.close();
        await store?.close();
      }
    });

  program
    .command('branches')
    .description("List a session's branches, or switch to one")
    .argument('<sessionId>', 'the session (see `parley sessions`)')
    .option('--switch <branch>', 'make this branch (an id from the list) the active one')
    .action(async (sessionId: string, options: { switch?: string }, command: Command) => {
      const store = await openChosenStore(command);
      const manager = await createSessionManager(storeOption(command, store));
      try {
        if (options.switch !== undefined) {
          const result = await manager.switchBranch(sessionId, options.switch);
          process.stdout.write(`switched ${sessionId} to branch ${options.switch} (ends at seq ${result.seq})\n`);
          return;
        }
        for (const branch of await manager.listBranches(sessionId)) {
          const when = branch.at === undefined ? '' : ` · ${new Date(branch.at).toISOString()}`;
          const last = branch.lastMessage === undefined ? '' : ` · "${branch.lastMessage}"`;
          process.stdout.write(
            `${branch.active ? '*' : ' '} ${branch.id}  from seq ${branch.forkSeq} to ${branch.tipSeq} · ${branch.turns} turns · $${branch.costUsd.toFixed(4)}${when}${last}\n`,
          );
        }
      } finally {
        await manager.close();
        await store?.close();
      }
    });
}

function restoreOf(text: string | undefined): RewindRestore {
  const restore = text ?? 'conversation';
  if ((REWIND_RESTORES as readonly string[]).includes(restore)) return restore as RewindRestore;
  throw new ValidationError(`--restore must be conversation, files or both (got "${restore}").`);
}
