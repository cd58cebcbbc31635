// @ts-check
/**
 * Mastra's side of the peers bench: its storage as Mastra's `Memory` uses it, a session being a
 * thread and each step one `saveMessages` of a ~1 KB assistant message to that thread (Mastra
 * saves a turn's messages that way; the call also bumps the thread's `updatedAt`).
 *
 * Systems: `mastra-pg` (`PostgresStore` from @mastra/pg) and `mastra-libsql` (`LibSQLStore` from
 * @mastra/libsql on a local `file:` database). `LibSQLStore` sets WAL with synchronous=NORMAL on a
 * local file, which does not flush each commit; for the same durability as the others the driver
 * sets synchronous=FULL after `init()`, and `mastra-libsql-normal` runs it as it comes, for reference.
 *
 * Mastra's packages declare Node >= 22.13; the bench runs this driver under a Node 22 when the
 * machine's Node is older (see bench/peers.bench.ts).
 */
import { driverArguments, report, runWorkload } from './workload.mjs';

const { system, options } = driverArguments();

/** @param {any} storage a Mastra composite store, initialized */
async function drive(storage) {
  const memory = await storage.getStore('memory');
  if (memory === undefined) throw new Error(`${system}: the store has no memory domain`);
  const thread = (session) => `peer-thread-${session}`;
  const result = await runWorkload({
    sessions: options.sessions,
    steps: options.steps,
    prepare: (session) =>
      memory.saveThread({
        thread: {
          id: thread(session),
          resourceId: 'peer-resource',
          title: `Session ${session}`,
          createdAt: new Date(1_700_000_000_000),
          updatedAt: new Date(1_700_000_000_000),
          metadata: {},
        },
      }),
    step: (session, step, text) =>
      memory.saveMessages({
        messages: [
          {
            id: `s${session}-${step}`,
            threadId: thread(session),
            resourceId: 'peer-resource',
            role: 'assistant',
            type: 'v2',
            createdAt: new Date(),
            content: { format: 2, parts: [{ type: 'text', text }] },
          },
        ],
      }),
  });
  return result;
}

if (system === 'mastra-pg') {
  const { PostgresStore } = await import('@mastra/pg');
  const storage = new PostgresStore({
    id: 'peers-bench',
    connectionString: options.url ?? '',
    schemaName: options.schema,
  });
  await storage.init();
  report(system, await drive(storage));
  await storage.close();
} else if (system === 'mastra-libsql' || system === 'mastra-libsql-normal') {
  const { LibSQLStore } = await import('@mastra/libsql');
  const storage = new LibSQLStore({ id: 'peers-bench', url: `file:${options.dir}/mastra.db` });
  await storage.init();
  /** @type {any} */
  const client = Reflect.get(storage, 'client');
  const asItComes = (await client.execute('PRAGMA synchronous')).rows[0]?.synchronous;
  if (system === 'mastra-libsql') await client.execute('PRAGMA synchronous = FULL');
  const names = ['OFF', 'NORMAL', 'FULL', 'EXTRA'];
  const mode = async () => names[Number((await client.execute('PRAGMA synchronous')).rows[0]?.synchronous)];
  const before = await mode();
  const result = await drive(storage);
  report(system, result, [
    `journal_mode=${(await client.execute('PRAGMA journal_mode')).rows[0]?.journal_mode}, synchronous=${before} ` +
      `(as it comes: ${names[Number(asItComes)]}; after the run: ${await mode()})`,
  ]);
  await storage.close();
} else {
  throw new Error(`mastra-driver: unknown system "${system}" (mastra-pg, mastra-libsql, mastra-libsql-normal)`);
}
