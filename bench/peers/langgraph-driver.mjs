// @ts-check
/**
 * LangGraph.js's side of the peers bench: its checkpointers as a LangGraph graph uses them for each
 * super-step. A step is `putWrites` (the node's ~1 KB output, recorded against the current
 * checkpoint) then `put` (the next checkpoint, whose one changed channel holds that output, stored
 * as a new blob version: LangGraph stores only the channels a step changed). The session is a
 * thread; each `put` names the previous checkpoint as its parent.
 *
 * Systems: `langgraph-postgres` (`PostgresSaver` from @langchain/langgraph-checkpoint-postgres,
 * its own `pg` pool of its default size) and `langgraph-sqlite` (`SqliteSaver` from
 * @langchain/langgraph-checkpoint-sqlite on better-sqlite3, one file). `SqliteSaver` turns WAL on;
 * better-sqlite3 is built with WAL commits at synchronous=NORMAL (not flushed per commit), so for
 * the same durability as the others the driver sets synchronous=FULL, and `langgraph-sqlite-normal`
 * runs it as it comes, for reference.
 */
import { emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import { driverArguments, report, runWorkload } from './workload.mjs';

const { system, options } = driverArguments();

/** @param {import('@langchain/langgraph-checkpoint').BaseCheckpointSaver} saver */
async function drive(saver, notes = []) {
  /** Per session: the config of its newest checkpoint. */
  const heads = new Map();
  const thread = (session) => `peer-thread-${session}`;
  const result = await runWorkload({
    sessions: options.sessions,
    steps: options.steps,
    prepare: async (session) => {
      const checkpoint = { ...emptyCheckpoint(), id: uuid6(-1) };
      const config = { configurable: { thread_id: thread(session), checkpoint_ns: '' } };
      heads.set(session, await saver.put(config, checkpoint, { source: 'input', step: -1, parents: {} }, {}));
    },
    step: async (session, step, text) => {
      const head = heads.get(session);
      await saver.putWrites(head, [['output', text]], `task-${session}-${step}`);
      const version = step + 1;
      const checkpoint = {
        ...emptyCheckpoint(),
        id: uuid6(-1),
        channel_values: { output: text },
        channel_versions: { output: version },
        versions_seen: { agent: { output: version } },
      };
      heads.set(session, await saver.put(head, checkpoint, { source: 'loop', step, parents: {} }, { output: version }));
    },
  });
  report(system, result, notes);
}

if (system === 'langgraph-postgres') {
  const { PostgresSaver } = await import('@langchain/langgraph-checkpoint-postgres');
  const saver = PostgresSaver.fromConnString(options.url ?? '', { schema: options.schema ?? 'public' });
  await saver.setup();
  await drive(saver);
  await saver.end();
} else if (system === 'langgraph-sqlite' || system === 'langgraph-sqlite-normal') {
  const { SqliteSaver } = await import('@langchain/langgraph-checkpoint-sqlite');
  const saver = SqliteSaver.fromConnString(`${options.dir}/checkpoints.sqlite`);
  // SqliteSaver sets itself up (tables, WAL) on first use: make it do so now, then set durability.
  await saver.getTuple({ configurable: { thread_id: 'setup', checkpoint_ns: '' } });
  const asItComes = saver.db.pragma('synchronous', { simple: true });
  if (system === 'langgraph-sqlite') saver.db.pragma('synchronous = FULL');
  const now = saver.db.pragma('synchronous', { simple: true });
  const names = ['OFF', 'NORMAL', 'FULL', 'EXTRA'];
  await drive(saver, [
    `journal_mode=${saver.db.pragma('journal_mode', { simple: true })}, synchronous=${names[now]} (as it comes: ${names[asItComes]})`,
  ]);
  saver.db.close();
} else {
  throw new Error(
    `langgraph-driver: unknown system "${system}" (langgraph-postgres, langgraph-sqlite, langgraph-sqlite-normal)`,
  );
}
