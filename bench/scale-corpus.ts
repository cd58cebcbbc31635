/**
 * The scale bench's corpus: sessions of four messages (two requests, two answers) whose words are
 * a few common ones and a Zipf-like draw from 20,000 made-up project words, deterministic by index.
 * Written straight into a store's own format in bulk, byte for byte what the store writes through
 * its API (`checkFileCorpus` and the PostgreSQL writer in scale.bench.ts check that in each run).
 *
 * `npx tsx bench/scale-corpus.ts <dataDir> [count]` writes a data folder for profiling by hand.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FORMAT_VERSION, SessionRecordSchema, type SessionRecord } from '../src/store/index.js';

export const START = 1_760_000_000_000;

/** A deterministic stream of numbers in [0, 1). */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = Math.imul(state ^ (state >>> 15), 1 | state);
    value = (value + Math.imul(value ^ (value >>> 7), 61 | value)) ^ value;
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export const COMMON =
  'the a to of and in is for on it with that this please fix add test check file function error build run'.split(' ');
const SYLLABLES = [
  'ka',
  'lo',
  'mi',
  'ten',
  'ru',
  'sa',
  'vor',
  'den',
  'qui',
  'pla',
  'zo',
  'nex',
  'tri',
  'bel',
  'mon',
  'fa',
];
/** 20,000 made-up words: the words of a team's projects, each rarer than the common ones. */
const VOCABULARY = Array.from({ length: 20_000 }, (_, index) => {
  let word = '';
  for (let rest = index + 17; rest > 0; rest = Math.floor(rest / SYLLABLES.length))
    word += SYLLABLES[rest % SYLLABLES.length];
  return word;
});

function sentence(next: () => number, words: number): string {
  const parts: string[] = [];
  for (let index = 0; index < words; index++) {
    const pick = next();
    // Zipf-like: common words often, project words by a skewed index.
    parts.push(
      pick < 0.45
        ? COMMON[Math.floor(next() * COMMON.length)]!
        : VOCABULARY[Math.floor(next() ** 2.5 * VOCABULARY.length)]!,
    );
  }
  return parts.join(' ');
}

export function sessionId(index: number): string {
  return `scale-${String(index).padStart(6, '0')}`;
}

export function recordOf(index: number): SessionRecord {
  const at = START + index * 1_000;
  return {
    formatVersion: FORMAT_VERSION,
    sessionId: sessionId(index),
    type: 'scripted',
    agentProfileReference: 'roles/dev.md',
    status: 'active',
    agentType: 'dev',
    scope: { kind: 'draft', role: 'dev', project: 'scale', taskSlug: `task-${index % 500}` },
    title: `Task ${index}`,
    createdAt: at,
    updatedAt: at + 3_000,
    lastActivity: at + 3_000,
    settings: {},
    stats: { totalMessages: 4, totalTokens: 0, totalCompactions: 0 },
  };
}

/** The four events of a session: request, answer, request, answer (whole blocks, as a finished turn logs them). */
export function eventsOf(index: number): Array<Record<string, unknown>> {
  const next = random(index + 1);
  return [0, 1, 2, 3].map((seq) => {
    const at = START + index * 1_000 + seq * 1_000;
    const user = seq % 2 === 0;
    const content = sentence(next, user ? 14 : 24);
    return {
      type: 'block_complete',
      conversationId: 'main',
      at,
      block: { type: user ? 'user_message' : 'assistant_text', id: `b${seq}`, createdAt: at, content },
      sessionId: sessionId(index),
      seq,
    };
  });
}

/** Writes the sessions as the file store keeps them: a folder each with session.json and log.jsonl. */
export function writeFileSessions(dataDir: string, sessions: number): void {
  mkdirSync(join(dataDir, 'sessions'), { recursive: true });
  for (let index = 0; index < sessions; index++) {
    const folder = join(dataDir, 'sessions', sessionId(index));
    mkdirSync(folder);
    writeFileSync(
      join(folder, 'session.json'),
      `${JSON.stringify(SessionRecordSchema.parse(recordOf(index)), null, 2)}\n`,
    );
    const header = JSON.stringify({ formatVersion: FORMAT_VERSION, kind: 'parley-log', sessionId: sessionId(index) });
    writeFileSync(
      join(folder, 'log.jsonl'),
      `${[header, ...eventsOf(index).map((event) => JSON.stringify(event))].join('\n')}\n`,
    );
  }
}

/** Queries as people type them: a common word with a project word, a project word alone, two project words, and words no message holds. */
export function queries(sessions: number): string[] {
  const next = random(99);
  const list: string[] = [];
  for (let index = 0; index < 30; index++) {
    const block = eventsOf(Math.floor(next() * sessions))[Math.floor(next() * 4)]!['block'] as { content: string };
    const words = block.content.split(' ');
    const project = words.filter((word) => !COMMON.includes(word));
    if (index % 3 === 0) list.push(project[0] ?? words[0]!);
    else if (index % 3 === 1) list.push(`${COMMON[index % COMMON.length]} ${project[0] ?? words[1]!}`);
    else list.push(project.slice(0, 2).join(' ') || words[0]!);
  }
  list.push('zzzz nothing', 'Привет мир', 'deploy OR 1=1; --');
  return list;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [dataDir, count] = process.argv.slice(2);
  if (dataDir === undefined) throw new Error('usage: npx tsx bench/scale-corpus.ts <dataDir> [count]');
  writeFileSessions(dataDir, Number(count ?? 100_000));
}
