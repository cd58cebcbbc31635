import type { Command } from 'commander';
import {
  importTranscripts,
  openDataFolderStore,
  watchTranscripts,
  type ImportProgress,
  type ImportResult,
} from '../../sessions/index.js';
import { isParleyError } from '../../conversation/index.js';
import { StoreError, type SessionStore } from '../../store/index.js';
import { openChosenStore, resolveDataDir } from '../options.js';

/** `parley import <path>`: native transcripts become read-only sessions that `parley sessions` lists and `parley show` prints. */
export function register(program: Command): void {
  program
    .command('import')
    .description(
      'Import Claude Code, Gemini CLI or Codex sessions (a file or a whole folder), or seed-layout sessions, as read-only sessions',
    )
    .argument(
      '<path>',
      'a session file, or a folder such as ~/.claude/projects/<project>/, ~/.gemini/tmp/<project>/chats/, ~/.codex/sessions/ or a seed-layout sessions folder',
    )
    .option('--json', 'print the result as JSON (with --watch: one JSON line per import pass)')
    .option(
      '--watch',
      'keep importing while Claude Code, the Gemini CLI or Codex writes there, so the session can be followed live (Ctrl+C stops)',
    )
    .action(async (path: string, options: { json?: boolean; watch?: boolean }, command: Command) => {
      const store =
        (await openChosenStore(command)) ??
        // A folder another Parley process holds is imported into through that process.
        (await openDataFolderStore(resolveDataDir(command), (warning) =>
          process.stderr.write(`parley store: ${warning.message}\n`),
        ).catch((error: unknown) => {
          if (!isParleyError(error, 'STORE_LOCKED')) throw error;
          // Most often a running `parley serve` on this folder: say how to follow sessions into it.
          throw new StoreError(
            'STORE_LOCKED',
            `${error.message} If it is \`parley serve\`, import with it stopped, or let it follow the project's own Claude Code, Gemini CLI and Codex sessions with \`parley serve --watch-native\` (or keep sessions in PostgreSQL, where an import and servers share them).`,
            { fault: 'user', cause: error },
          );
        }));
      // Ctrl-C stops at the next chunk; what was written is kept and the next import finishes it.
      const controller = new AbortController();
      const stop = (): void => controller.abort();
      process.once('SIGINT', stop);
      const progress = process.stderr.isTTY && !options.json ? showProgress : undefined;
      if (options.watch) {
        try {
          await follow(path, store, controller.signal, options.json === true);
        } finally {
          process.off('SIGINT', stop);
          await store.close();
        }
        return;
      }
      try {
        const result = await importTranscripts(path, {
          store,
          signal: controller.signal,
          ...(progress ? { onProgress: progress } : {}),
        });
        if (progress) process.stderr.write('\r\x1b[K');
        process.stdout.write(options.json ? `${JSON.stringify(result, null, 2)}\n` : describe(result));
      } finally {
        process.off('SIGINT', stop);
        await store.close();
      }
    });
}

/** `--watch`: the first pass as a normal import, then a line per session each time one grows, until Ctrl+C. */
async function follow(path: string, store: SessionStore, signal: AbortSignal, json: boolean): Promise<void> {
  let first = true;
  const watcher = watchTranscripts(path, {
    store,
    signal,
    onSync: (result) => {
      if (json) process.stdout.write(`${JSON.stringify(result)}\n`);
      else if (first) process.stdout.write(describe(result));
      else process.stdout.write(describeChanges(result));
      first = false;
    },
    onWarning: (warning) => process.stderr.write(`parley import: warning: ${warning.message}\n`),
    onError: (error) =>
      process.stderr.write(
        `parley import: ${error instanceof Error ? error.message : String(error)} (still watching; the next change tries again)\n`,
      ),
  });
  await watcher.ready;
  if (!signal.aborted)
    process.stderr.write(`Following ${path}: new lines are imported as they are written. Ctrl+C stops.\n`);
  if (!signal.aborted)
    await new Promise<void>((done) => signal.addEventListener('abort', () => done(), { once: true }));
  await watcher.stop();
  process.stderr.write('Stopped following; everything imported so far is kept.\n');
}

function describeChanges(result: ImportResult): string {
  const time = new Date().toISOString().slice(11, 19);
  const lines = result.sessions
    .filter((session) => session.status !== 'unchanged')
    .map(
      (session) =>
        `${time}  ${session.sessionId}  ${STATUS_WORD[session.status]}  +${session.appendedBlocks} blocks  ${JSON.stringify(session.title)}`,
    );
  return lines.length > 0 ? `${lines.join('\n')}\n` : '';
}

function showProgress(progress: ImportProgress): void {
  if (progress.phase !== 'reading' || progress.totalBytes === undefined || progress.bytesRead === undefined) return;
  const percent = progress.totalBytes > 0 ? Math.floor((progress.bytesRead / progress.totalBytes) * 100) : 100;
  process.stderr.write(
    `\r\x1b[Kimporting ${progress.sessionId ?? ''} ${percent}% (session ${progress.sessionsDone + 1} of ${progress.sessionsTotal})`,
  );
}

const STATUS_WORD = { imported: 'new', updated: 'updated', unchanged: 'unchanged' } as const;

function describe(result: ImportResult): string {
  const count = (status: keyof typeof STATUS_WORD) =>
    result.sessions.filter((session) => session.status === status).length;
  const lines = [
    `Imported ${result.sessions.length} session${result.sessions.length === 1 ? '' : 's'} from ${result.path} (${count('imported')} new, ${count('updated')} updated, ${count('unchanged')} unchanged):`,
  ];
  for (const session of result.sessions) {
    const subagents =
      session.subagents > 0 ? `, ${session.subagents} subagent${session.subagents === 1 ? '' : 's'}` : '';
    const written = session.status === 'updated' ? ` (${session.appendedBlocks} new)` : '';
    const checkpoint = session.checkpoint ? ', checkpoint' : '';
    const warnings = session.warnings > 0 ? `, ${session.warnings} warning${session.warnings === 1 ? '' : 's'}` : '';
    lines.push(
      `  ${session.sessionId}  ${session.source}  ${STATUS_WORD[session.status]}  ${session.blocks} blocks${written}${subagents}${checkpoint}${warnings}  ${JSON.stringify(session.title)}`,
    );
  }
  if (result.warnings.length > 0) {
    lines.push(`Warnings (${result.warnings.length}):`);
    for (const warning of result.warnings.slice(0, 20)) lines.push(`  ${warning.message}`);
    if (result.warnings.length > 20) lines.push(`  … and ${result.warnings.length - 20} more (see --json)`);
  }
  if (result.skipped.length > 0) {
    lines.push(`Skipped (${result.skipped.length}):`);
    for (const skipped of result.skipped.slice(0, 20)) lines.push(`  ${skipped.path}: ${skipped.reason}`);
    if (result.skipped.length > 20) lines.push(`  … and ${result.skipped.length - 20} more (see --json)`);
  }
  const first = result.sessions[0];
  if (first !== undefined)
    lines.push(`Show one with \`parley show ${first.sessionId}\`; the native files were not modified.`);
  return `${lines.join('\n')}\n`;
}
