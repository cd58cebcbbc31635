import type { Command } from 'commander';
import { ValidationError } from '../../conversation/index.js';
import { MAX_SEARCH_LIMIT } from '../../store/index.js';
import { openListingStore } from '../listing-store.js';

/** `parley search <words…>`: the newest messages of any session holding every word. */
export function register(program: Command): void {
  program
    .command('search')
    .description('Search every message of every session; open a hit with `parley show <sessionId>`')
    .argument('<words...>', 'words a message must all hold (any script; punctuation only separates words)')
    .option('--limit <count>', `hits to print (default 20, at most ${MAX_SEARCH_LIMIT})`, (value) => Number(value))
    .option('--json', 'print the hits as JSON')
    .action(async (words: string[], options: { limit?: number; json?: boolean }, command: Command) => {
      const store = await openListingStore(command);
      try {
        if (store.searchSessions === undefined)
          throw new ValidationError(
            `The ${store.kind} store keeps no search index; search needs the file or the PostgreSQL store.`,
          );
        const result = await store.searchSessions({
          text: words.join(' '),
          ...(options.limit !== undefined ? { limit: options.limit } : {}),
        });
        if (options.json) {
          process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
          return;
        }
        if (result.hits.length === 0) {
          process.stdout.write(
            result.terms.length === 0
              ? 'No words to search for: a word is letters or digits.\n'
              : `No message holds ${result.terms.map((term) => `"${term}"`).join(' and ')}.\n`,
          );
          return;
        }
        for (const hit of result.hits) {
          const when = new Date(hit.at).toISOString().replace('T', ' ').slice(0, 16);
          process.stdout.write(`${hit.sessionId}  seq ${hit.seq}  ${hit.role}  ${when}\n    ${hit.snippet}\n`);
        }
      } finally {
        await store.close();
      }
    });
}
