/**
 * `npm run soak -- --hostile [--idle 1000 --hogs 5 --megabytes 40]` (soak.ts): one `parley serve`
 * process (file store, scripted back end) under hostile clients, its memory read from
 * /proc/<pid>/status (VmRSS, VmHWM) so the clients' own memory does not count:
 *
 * 1. `--idle` WebSocket connections opened and left idle: RSS before and after, per connection;
 * 2. `--hogs` clients that subscribe to every session and never read, while one reading client's
 *    draft streams a turn of `--megabytes` MB: the server's peak RSS against the limit it keeps per
 *    connection (16 MiB unsent, then 1013), whether every hog was disconnected, and whether the
 *    reading client got every event once, in order (lost / doubled must be 0).
 */
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import WebSocket from 'ws';
import type { StreamEvent } from '../src/conversation/index.js';
import { connectToServer, startServeProcess } from '../test/server/serve-process.js';
import { table } from './stats.js';

export interface HostileOptions {
  idle: number;
  hogs: number;
  megabytes: number;
  log: (line: string) => void;
}

export const hostileDefaults = { idle: 1_000, hogs: 5, megabytes: 40 };

/** The serve process's resident memory now and at its peak, in MB. */
async function memoryOf(pid: number): Promise<{ rssMb: number; peakMb: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) / 1024;
  return { rssMb: field('VmRSS'), peakMb: field('VmHWM') };
}

function open(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    socket.once('open', () => resolve(socket));
    socket.once('error', reject);
  });
}

export async function runHostile(options: HostileOptions): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'parley-hostile-'));
  const sockets: WebSocket[] = [];
  const project = join(root, 'shop');
  await mkdir(project);
  // One text block per 100 KB of short words: the turn is `megabytes` MB of events.
  const chunk = 'a streamed word '.repeat(6_400);
  const blocks = Math.round((options.megabytes * 1024 * 1024) / chunk.length / 2);
  await writeFile(
    join(root, 'script.json'),
    JSON.stringify({ defaultTurn: Array.from({ length: blocks }, () => ({ type: 'text', text: chunk })) }),
  );
  const serve = await startServeProcess(project, { PARLEY_SCRIPTED_SCRIPT: join(root, 'script.json') });
  const pid = serve.child.pid!;
  try {
    const url = (channel: string) => {
      const address = new URL(serve.info.wsUrl);
      address.searchParams.set('token', serve.info.token);
      address.searchParams.set('channel', channel);
      return address.toString();
    };
    const base = await memoryOf(pid);
    options.log(`serve pid ${pid}: ${base.rssMb.toFixed(0)} MB RSS at start`);

    // 1. Idle connections.
    for (let index = 0; index < options.idle; index += 1) sockets.push(await open(url(`idle-${index}`)));
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const idle = await memoryOf(pid);
    options.log(`${options.idle} idle connections: ${idle.rssMb.toFixed(0)} MB RSS`);
    // The server still answers promptly with all of them open.
    const reader = await connectToServer(serve.info, 'reader');
    const pingStarted = performance.now();
    await reader.request('list_projects');
    const answerMs = performance.now() - pingStarted;

    // 2. Hogs: subscribed to everything, never reading.
    const hogs: WebSocket[] = [];
    const closedWith: number[] = [];
    for (let index = 0; index < options.hogs; index += 1) {
      const hog = await open(url(`hog-${index}`));
      await new Promise<void>((resolve) => {
        hog.once('message', () => resolve());
        hog.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscribe', params: {} }));
      });
      (hog as unknown as { _socket: Socket })._socket.pause();
      hog.on('close', (code) => closedWith.push(code));
      hogs.push(hog);
    }
    await reader.request('create_task', { project: 'shop', title: 'Hostile', slug: 'hostile' });
    const { sessionId } = await reader.request('draft', { role: 'dev', project: 'shop', task: 'hostile' });
    const seen: StreamEvent[] = [];
    reader.on('channel_message', ({ event }) => seen.push(event));
    let peak = 0;
    const sampler = setInterval(() => {
      void memoryOf(pid).then((memory) => (peak = Math.max(peak, memory.rssMb)));
    }, 100);
    const started = performance.now();
    const accepted = await reader.request('submit_prompt', { content: 'Everything, please' });
    if (accepted.mode !== 'draft') throw new Error('expected the draft path');
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (
          seen.some(
            (event) =>
              event.type === 'metadata_update' && event.metadata.turnComplete === true && event.seq > accepted.seq,
          )
        ) {
          clearInterval(check);
          resolve();
        }
      }, 50);
    });
    const turnS = (performance.now() - started) / 1000;
    clearInterval(sampler);
    // Let the hogs read now: what the server still had for them arrives, then its close frame.
    for (const hog of hogs) (hog as unknown as { _socket: Socket })._socket.resume();
    await new Promise((resolve) => setTimeout(resolve, 7_000));
    const log = (await reader.request('get_events', { sessionId, afterSeq: accepted.seq - 1 })).events;
    const fromPrompt = seen.filter((event) => event.seq >= accepted.seq);
    const seqs = new Set(fromPrompt.map((event) => event.seq));
    const lost = log.filter((event) => !seqs.has(event.seq)).length;
    const doubled = fromPrompt.length - seqs.size;
    const after = await memoryOf(pid);
    reader.close();
    const rows = [
      ['at start', base.rssMb.toFixed(0), '', ''],
      [
        `${options.idle} idle connections`,
        idle.rssMb.toFixed(0),
        `${(((idle.rssMb - base.rssMb) * 1024) / options.idle).toFixed(1)} KB per connection`,
        `list_projects answered in ${answerMs.toFixed(1)} ms`,
      ],
      [
        `${options.hogs} never-reading subscribers, one ${options.megabytes} MB turn (${turnS.toFixed(1)} s)`,
        `${peak.toFixed(0)} peak`,
        `unsent data kept per hog at most 16 MiB + one frame (${options.hogs * 16} MiB for all); the rest is the turn itself in the live conversation and GC lag`,
        `hogs closed with 1013: ${closedWith.filter((code) => code === 1013).length} of ${options.hogs}`,
      ],
      ['after', after.rssMb.toFixed(0), '', `reader: lost ${lost}, doubled ${doubled} of ${log.length} events`],
    ];
    return [
      `## Hostile load on one parley serve (file store, scripted back end)`,
      '',
      table(['step', 'server RSS MB', 'measure', 'outcome'], rows),
      '',
    ].join('\n');
  } finally {
    for (const socket of sockets) socket.terminate();
    serve.child.kill('SIGTERM');
    await serve.exited;
    await rm(root, { recursive: true, force: true });
  }
}
