/**
 * `npm run soak -- --outage [--drafts 50 --phase 30 --down 10 --delay 200]` (soak.ts): two `parley serve`
 * processes on one PostgreSQL (started from a temp folder, as the tests do, fsync on), every
 * connection of theirs through a TCP proxy on 127.0.0.1 (test/helpers/tcp-proxy.ts). `--drafts`
 * drafts stream turns of the scripted back end, half on each server, each watched live from the
 * other server too. Four phases of `--phase` seconds:
 *
 * 1. calm: the baseline;
 * 2. outage: `pg_ctl stop -m immediate`, started again `--down` seconds later;
 * 3. cut: the proxy ends every connection at once, mid-phase;
 * 4. slow: the proxy holds every chunk `--delay` ms, both ways.
 *
 * Then every client's view is checked against its session's log: lost (an event a client was
 * given that the log does not hold, or one of the log's it never got), doubled (one given twice, a
 * seq repeated, a block of a turn stored twice) and the watchers' the same way. The table gives,
 * per phase, turns, events per second, errors, the longest turn, and how long after PostgreSQL was
 * back each server appended again and each LISTEN connection delivered again. Exits 1 on any loss
 * or doubling, or a turn that never ended.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import WebSocket from 'ws';
import { applyEvents, emptyConversation, type StreamEvent } from '../src/conversation/index.js';
import { ProtocolClient, webSocketTransport, type WebSocketLike } from '../src/protocol/index.js';
import { startTestPostgres, TEST_ROLE } from '../test/helpers/postgres.js';
import { startTcpProxy, type TcpProxy } from '../test/helpers/tcp-proxy.js';
import { startServeProcess, type ServeProcess } from '../test/server/serve-process.js';
import { table } from './stats.js';

export interface OutageSoakOptions {
  drafts: number;
  phaseMs: number;
  downMs: number;
  delayMs: number;
  /** Text blocks per turn, each followed by a pause of `pauseMs`. */
  parts: number;
  pauseMs: number;
  /** A turn not ended after this long counts as hung (and the draft moves on). */
  hungAfterMs: number;
  log: (line: string) => void;
}

export const outageDefaults: Omit<OutageSoakOptions, 'log'> = {
  drafts: 50,
  phaseMs: 30_000,
  downMs: 10_000,
  delayMs: 200,
  parts: 8,
  pauseMs: 100,
  hungAfterMs: 120_000,
};

type PhaseName = 'calm' | 'outage' | 'cut' | 'slow';
const PHASES: readonly PhaseName[] = ['calm', 'outage', 'cut', 'slow'];

interface PhaseStats {
  turns: number;
  errorTurns: number;
  failedSubmits: number;
  events: number;
  longestTurnMs: number;
  startedAt: number;
  endedAt: number;
}

interface Draft {
  index: number;
  sessionId: string;
  home: 'A' | 'B';
  client: ProtocolClient;
  watcher: ProtocolClient;
  seen: StreamEvent[];
  watched: StreamEvent[];
  turns: number;
  hung: number;
}

export interface OutageSoakReport {
  options: Omit<OutageSoakOptions, 'log'>;
  phases: Record<PhaseName, PhaseStats>;
  lost: number;
  doubled: number;
  watcherLost: number;
  watcherDoubled: number;
  tornTurns: number;
  hung: number;
  /** After `pg_ctl start` returned: each server's first append, and its LISTEN's first cross-server event. */
  reconnect: Record<'A' | 'B', { appendMs: number | undefined; listenMs: number | undefined }>;
  /** After the cut: the same. */
  afterCut: Record<'A' | 'B', { appendMs: number | undefined; listenMs: number | undefined }>;
  proxy: { accepted: number; cut: number };
  passed: boolean;
}

function part(index: number): string {
  return `Part ${index} of a streamed answer.`;
}

function isTurnEnd(event: StreamEvent): boolean {
  return event.type === 'metadata_update' && event.conversationId === 'main' && event.metadata.turnComplete === true;
}

export async function runOutageSoak(options: OutageSoakOptions): Promise<OutageSoakReport> {
  const log = options.log;
  const root = await mkdtemp(join(tmpdir(), 'parley-outage-soak-'));
  const postgres = await startTestPostgres({ fsync: true });
  const servers: ServeProcess[] = [];
  const drafts: Draft[] = [];
  let proxy: TcpProxy | undefined;
  try {
    await postgres.admin(`CREATE DATABASE outage OWNER ${TEST_ROLE}`);
    proxy = await startTcpProxy({ targetHost: postgres.host, targetPort: postgres.port });
    const proxied = postgres.url({ database: 'outage' }).replace(`:${postgres.port}/`, `:${proxy.port}/`);
    const script = {
      defaultTurn: Array.from({ length: options.parts }, (_, index) => [
        { type: 'text', text: part(index), chunks: [`Part ${index} `, 'of a ', 'streamed ', 'answer.'] },
        { type: 'delay', ms: options.pauseMs },
      ]).flat(),
    };
    await writeFile(join(root, 'script.json'), JSON.stringify(script));
    // The same folder name under two parents: both servers serve the project "shop".
    for (const name of ['a', 'b']) {
      const project = join(root, name, 'shop');
      await mkdir(project, { recursive: true });
      servers.push(
        await startServeProcess(project, {
          PARLEY_SCRIPTED_SCRIPT: join(root, 'script.json'),
          PARLEY_DATABASE_URL: proxied,
        }),
      );
    }
    const [serverA, serverB] = servers as [ServeProcess, ServeProcess];
    log(
      `servers up: A pid ${serverA.info.pid}, B pid ${serverB.info.pid}; PostgreSQL ${postgres.port} via proxy ${proxy.port}`,
    );

    const connect = async (server: ServeProcess, channel: string) => {
      const client = new ProtocolClient({
        transport: webSocketTransport({
          url: server.info.wsUrl,
          token: server.info.token,
          channel,
          createSocket: (url) => new WebSocket(url) as unknown as WebSocketLike,
        }),
        reconnect: { initialDelayMs: 50, maxDelayMs: 1_000 },
        requestTimeoutMs: 120_000,
        onError: (error) => log(`client ${channel}: ${String(error)}`),
      });
      await client.connect();
      return client;
    };

    const setup = await connect(serverA, 'setup');
    for (let index = 0; index < options.drafts; index += 1)
      await setup.request('create_task', { project: 'shop', title: `Outage ${index}`, slug: `outage-${index}` });
    setup.close();

    // When each server last delivered an event of its own drafts, and of the other server's (LISTEN).
    const lastOwn: Record<'A' | 'B', number[]> = { A: [], B: [] };
    const lastHeard: Record<'A' | 'B', number[]> = { A: [], B: [] };
    for (let index = 0; index < options.drafts; index += 1) {
      const home = index % 2 === 0 ? 'A' : 'B';
      const [own, other] = home === 'A' ? [serverA, serverB] : [serverB, serverA];
      const client = await connect(own, `outage-${index}`);
      const watcher = await connect(other, `watch-${index}`);
      const { sessionId } = await client.request('draft', { role: 'dev', project: 'shop', task: `outage-${index}` });
      const draft: Draft = { index, sessionId, home, client, watcher, seen: [], watched: [], turns: 0, hung: 0 };
      client.on('channel_message', ({ event }) => {
        draft.seen.push(event);
        lastOwn[home].push(Date.now());
      });
      watcher.on('session_event', (message) => {
        if (message.sessionId !== sessionId) return;
        draft.watched.push(message.event);
        lastHeard[home === 'A' ? 'B' : 'A'].push(Date.now());
      });
      await watcher.subscribe([sessionId]);
      drafts.push(draft);
    }
    log(`${drafts.length} drafts ready`);

    const phases = Object.fromEntries(
      PHASES.map((name) => [
        name,
        { turns: 0, errorTurns: 0, failedSubmits: 0, events: 0, longestTurnMs: 0, startedAt: 0, endedAt: 0 },
      ]),
    ) as Record<PhaseName, PhaseStats>;
    let phase: PhaseName = 'calm';
    let stopping = false;

    const loops = drafts.map(async (draft) => {
      while (!stopping) {
        const began = Date.now();
        const inPhase = phases[phase];
        let accepted: { seq: number } | undefined;
        try {
          const answer = await draft.client.request('submit_prompt', { content: `turn ${draft.turns}` });
          if (answer.mode !== 'draft') throw new Error(`expected the draft path, got ${answer.mode}`);
          accepted = answer;
        } catch (error) {
          inPhase.failedSubmits += 1;
          log(`draft ${draft.index}: submit failed: ${String(error).slice(0, 200)}`);
          await new Promise((resolve) => setTimeout(resolve, 500));
          continue;
        }
        const end = await new Promise<StreamEvent | undefined>((resolve) => {
          const found = () => draft.seen.find((event) => event.seq > accepted!.seq && isTurnEnd(event));
          const timer = setInterval(() => {
            const event = found();
            if (event || Date.now() - began > options.hungAfterMs) {
              clearInterval(timer);
              resolve(event);
            }
          }, 20);
        });
        if (end === undefined) {
          draft.hung += 1;
          log(`draft ${draft.index}: turn from seq ${accepted.seq} did not end in ${options.hungAfterMs} ms`);
          continue;
        }
        draft.turns += 1;
        inPhase.turns += 1;
        if (end.type === 'metadata_update' && end.metadata.stopReason === 'error') inPhase.errorTurns += 1;
        inPhase.longestTurnMs = Math.max(inPhase.longestTurnMs, Date.now() - began);
      }
    });

    const eventsSeen = () => drafts.reduce((sum, draft) => sum + draft.seen.length, 0);
    const firstAfter = (times: number[], after: number) => {
      const at = times.find((time) => time > after);
      return at === undefined ? undefined : at - after;
    };
    const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const reconnect = { A: {}, B: {} } as OutageSoakReport['reconnect'];
    const afterCut = { A: {}, B: {} } as OutageSoakReport['afterCut'];
    const measureBack = (into: OutageSoakReport['reconnect'], since: number) => {
      for (const side of ['A', 'B'] as const)
        into[side] = { appendMs: firstAfter(lastOwn[side], since), listenMs: firstAfter(lastHeard[side], since) };
    };

    let backAt = 0;
    let cutAt = 0;
    for (const name of PHASES) {
      phase = name;
      const stats = phases[name];
      stats.startedAt = Date.now();
      const before = eventsSeen();
      log(`phase ${name}`);
      if (name === 'outage') {
        await wait(options.phaseMs / 6);
        await postgres.stop('immediate');
        log('PostgreSQL stopped (immediate)');
        await wait(options.downMs);
        await postgres.start();
        backAt = Date.now();
        log('PostgreSQL started again');
        await wait(Math.max(0, stats.startedAt + options.phaseMs - Date.now()));
      } else if (name === 'cut') {
        await wait(options.phaseMs / 2);
        const cut = proxy.cutAll();
        cutAt = Date.now();
        log(`proxy cut ${cut} connections`);
        await wait(options.phaseMs / 2);
      } else if (name === 'slow') {
        proxy.setDelay(options.delayMs);
        await wait(options.phaseMs);
        proxy.setDelay(0);
      } else {
        await wait(options.phaseMs);
      }
      stats.endedAt = Date.now();
      stats.events = eventsSeen() - before;
      log(`phase ${name}: ${stats.turns} turns, ${stats.events} events`);
    }
    stopping = true;
    await Promise.all(loops);
    measureBack(reconnect, backAt);
    measureBack(afterCut, cutAt);
    // Let the watchers catch up with the last turns before the views are compared.
    await wait(2_000);

    let lost = 0;
    let doubled = 0;
    let watcherLost = 0;
    let watcherDoubled = 0;
    let tornTurns = 0;
    for (const draft of drafts) {
      const events = await readLog(draft.client, draft.sessionId);
      const bySeq = new Map(events.map((event) => [event.seq, event]));
      if (bySeq.size !== events.length || events.some((event, index) => event.seq !== index)) {
        doubled += events.length - bySeq.size;
        log(`draft ${draft.index}: the log's seqs are not 0, 1, 2…`);
      }
      const compare = (view: StreamEvent[], from: number) => {
        let missing = 0;
        let twice = 0;
        const given = new Set<number>();
        for (const event of view) {
          if (given.has(event.seq)) twice += 1;
          given.add(event.seq);
          const stored = bySeq.get(event.seq);
          if (stored === undefined || !isDeepStrictEqual(stored, event)) {
            if (missing === 0)
              log(
                `draft ${draft.index}: given ${JSON.stringify(event).slice(0, 300)} but the log has ${JSON.stringify(stored)?.slice(0, 300)}`,
              );
            missing += 1;
          }
        }
        for (const event of events) if (event.seq >= from && !given.has(event.seq)) missing += 1;
        return { missing, twice };
      };
      const own = compare(draft.seen, draft.seen[0]?.seq ?? 0);
      lost += own.missing;
      doubled += own.twice;
      const watched = compare(draft.watched, draft.watched[0]?.seq ?? 0);
      watcherLost += watched.missing;
      watcherDoubled += watched.twice;
      // Each turn's answer whole: its parts once each, in order (a turn cut short by an error aside).
      const blocks = applyEvents(emptyConversation(draft.sessionId), events).blocks;
      let answer: string[] | undefined;
      const check = () => {
        if (answer === undefined) return;
        const expected = Array.from({ length: options.parts }, (_, index) => part(index));
        if (JSON.stringify(answer) !== JSON.stringify(expected) && answer.length >= options.parts) tornTurns += 1;
      };
      for (const block of blocks) {
        if (block.type === 'user_message') {
          check();
          answer = [];
        } else if (block.type === 'assistant_text') answer?.push(block.content);
      }
      check();
    }
    const hung = drafts.reduce((sum, draft) => sum + draft.hung, 0);
    const passed =
      lost === 0 && doubled === 0 && watcherLost === 0 && watcherDoubled === 0 && tornTurns === 0 && hung === 0;
    const { log: _log, ...shown } = options;
    return {
      options: shown,
      phases,
      lost,
      doubled,
      watcherLost,
      watcherDoubled,
      tornTurns,
      hung,
      reconnect,
      afterCut,
      proxy: { ...proxy.stats },
      passed,
    };
  } finally {
    for (const draft of drafts) {
      draft.client.close();
      draft.watcher.close();
    }
    for (const server of servers) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
    await proxy?.close();
    await postgres.destroy();
    await rm(root, { recursive: true, force: true });
  }
}

async function readLog(client: ProtocolClient, sessionId: string): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  let afterSeq = -1;
  for (;;) {
    const page = await client.request('get_events', { sessionId, afterSeq });
    events.push(...page.events);
    if (!page.hasMore || page.events.length === 0) return events;
    afterSeq = page.events.at(-1)!.seq;
  }
}

function seconds(ms: number | undefined): string {
  return ms === undefined ? 'never' : `${(ms / 1000).toFixed(2)} s`;
}

export function formatOutageSoak(report: OutageSoakReport): string {
  const { options } = report;
  const rows = PHASES.map((name) => {
    const stats = report.phases[name];
    const spanS = (stats.endedAt - stats.startedAt) / 1000;
    return [
      name,
      String(stats.turns),
      (stats.events / spanS).toFixed(0),
      String(stats.errorTurns),
      String(stats.failedSubmits),
      `${(stats.longestTurnMs / 1000).toFixed(1)} s`,
    ];
  });
  const back = (['A', 'B'] as const).map((side) => [
    side,
    seconds(report.reconnect[side].appendMs),
    seconds(report.reconnect[side].listenMs),
    seconds(report.afterCut[side].appendMs),
    seconds(report.afterCut[side].listenMs),
  ]);
  return [
    `## Outage soak: 2 parley serve on one PostgreSQL, ${options.drafts} drafts streaming, phases of ${options.phaseMs / 1000} s`,
    '',
    `PostgreSQL down ${options.downMs / 1000} s (pg_ctl stop -m immediate); proxy cut once; proxy delay ${options.delayMs} ms per chunk. Proxy: ${report.proxy.accepted} connections accepted, ${report.proxy.cut} cut.`,
    '',
    `**lost ${report.lost} · doubled ${report.doubled}** (clients of the draft's own server) · **watchers on the other server: lost ${report.watcherLost} · doubled ${report.watcherDoubled}** · turns with a part missing or twice: ${report.tornTurns} · turns that never ended: ${report.hung} · ${report.passed ? 'PASS' : 'FAIL'}`,
    '',
    table(['phase', 'turns', 'events/s', 'turns ended by an error', 'submits refused', 'longest turn'], rows),
    '',
    table(
      [
        'server',
        'first append after PostgreSQL is back',
        'first LISTEN delivery after it is back',
        'first append after the cut',
        'first LISTEN delivery after the cut',
      ],
      back,
    ),
    '',
  ].join('\n');
}
