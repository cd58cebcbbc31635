import type { Command } from 'commander';
import { createSessionManager } from '../../sessions/index.js';
import { openChosenStore, storeOption } from '../options.js';
import { describeScope, formatCost } from '../render.js';
import { sessionText } from '../show-text.js';

/** `parley sessions` and `parley show`: every session in the data folder, and one session's blocks. */
export function register(program: Command): void {
  program
    .command('sessions')
    .description('List sessions (drafts, task sessions, workflow agents, imported transcripts)')
    .option('--json', 'print JSON')
    .option('--status <status>', 'active or archived')
    .option('--agent-type <type>', 'pm, dev, qa, harness, merge, or a role')
    .option('--backend <name>', 'only sessions on this back end')
    .action(
      async (
        options: { json?: boolean; status?: 'active' | 'archived'; agentType?: string; backend?: string },
        command: Command,
      ) => {
        const store = await openChosenStore(command);
        const manager = await createSessionManager(storeOption(command, store));
        try {
          const sessions = await manager.listSessions({
            ...(options.status ? { status: options.status } : {}),
            ...(options.agentType ? { agentType: options.agentType } : {}),
            ...(options.backend ? { type: options.backend } : {}),
          });
          if (options.json) {
            process.stdout.write(`${JSON.stringify(sessions, null, 2)}\n`);
            return;
          }
          if (sessions.length === 0) {
            process.stdout.write(
              'No sessions yet. Start one with `parley chat "hello"`, or import one with `parley import <path>`.\n',
            );
            return;
          }
          for (const session of sessions) {
            const when = new Date(session.lastActivity ?? session.updatedAt)
              .toISOString()
              .replace('T', ' ')
              .slice(0, 16);
            const title = session.title ? `  ${session.title.slice(0, 60)}` : '';
            process.stdout.write(
              `${session.sessionId}  ${session.status}  ${describeScope(session)}  ${session.type}  ${session.stats.totalMessages} msgs  ${session.stats.totalTokens} tok  ${formatCost(session.metrics)}  ${when}${title}\n`,
            );
          }
        } finally {
          await manager.close();
          await store?.close();
        }
      },
    );

  program
    .command('show')
    .description("Print one session's blocks and subagent threads")
    .argument('<sessionId>', 'the session id (see `parley sessions`)')
    .option('--json', 'print the session data as JSON (RuntimeSessionData)')
    .option('--verbose', 'end with a count of the native records kept but not shown')
    .action(async (sessionId: string, options: { json?: boolean; verbose?: boolean }, command: Command) => {
      const store = await openChosenStore(command);
      const manager = await createSessionManager(storeOption(command, store));
      try {
        if (options.json) {
          const record = await manager.getSession(sessionId);
          const { rawTranscript: _raw, ...rest } = await manager.getRuntimeSession(sessionId);
          process.stdout.write(
            `${JSON.stringify({ session: record, ...rest, subagents: rest.subagents.map(({ rawTranscript: _thread, ...thread }) => thread) }, null, 2)}\n`,
          );
          return;
        }
        process.stdout.write(`${await sessionText(manager, sessionId, { verbose: options.verbose === true })}\n`);
      } finally {
        await manager.close();
        await store?.close();
      }
    });
}
