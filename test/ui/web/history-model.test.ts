import { describe, expect, it } from 'vitest';
import { applyEvents, emptyConversation, type StreamEvent } from '../../../src/conversation/index.js';
import {
  emptyTrace,
  forkPoints,
  onTrace,
  partingOf,
  pathTo,
  placeForkPoints,
  rewindSummary,
  rewindTargetOf,
  traceEvents,
  type BranchEntry,
} from '../../../src/ui/web/history-model.js';
import { LogBuilder } from './events.js';

function branch(id: string, firstSeq: number, forkSeq: number, tipSeq: number, extra: Partial<BranchEntry> = {}) {
  return { id, firstSeq, forkSeq, tipSeq, active: false, turns: 1, costUsd: 0, ...extra } satisfies BranchEntry;
}

/** Renumbers events as the server's log would hold them (the builder numbers from 0). */
function at(events: StreamEvent[], seqs: number[]): StreamEvent[] {
  return events.map((event, index) => ({ ...event, seq: seqs[index]! }));
}

describe('the branch trace', () => {
  it('keeps the runs of seqs read and, for each user message, the seq of the event before it', () => {
    const log = new LogBuilder().turn('one', 'answer one', 0.01).turn('two', 'answer two', 0.01);
    // The second turn lies on a branch of its own: its seqs start at 20, after seq 3 of the first.
    const seqs = log.events.map((_event, index) => (index < 6 ? index : 14 + index));
    const events = at(log.events, seqs);
    const trace = traceEvents(emptyTrace(), events);
    expect(trace.runs).toEqual([
      { first: 0, last: 5 },
      { first: 20, last: 25 },
    ]);
    const userIds = events.flatMap((event) =>
      event.type === 'block_complete' && event.block.type === 'user_message' ? [event.block.id] : [],
    );
    expect(userIds.map((id) => trace.pointsBefore.get(id))).toEqual([-1, 5]);
    expect(onTrace(trace, 4)).toBe(true);
    expect(onTrace(trace, 12)).toBe(false);
    expect(onTrace(trace, -1)).toBe(true);
  });

  it('skips what it holds already, as applyEvents does, and gives the same trace page by page', () => {
    const events = new LogBuilder().turn('one', 'a b c', 0).turn('two', 'd e', 0).events;
    const whole = traceEvents(emptyTrace(), events);
    const paged = traceEvents(traceEvents(emptyTrace(), events.slice(0, 5)), events.slice(3));
    expect(paged).toEqual(whole);
    expect(traceEvents(whole, events.slice(0, 4))).toBe(whole);
  });
});

describe('where the branches fork', () => {
  // Root run 0–9; a branch from 5 (seqs 10–15); a branch from 12, inside it (seqs 16–20).
  const session = {
    segments: [
      { firstSeq: 10, parentSeq: 5 },
      { firstSeq: 16, parentSeq: 12 },
    ],
  };

  it('walks a tip back through the segments, as the server does', () => {
    expect(pathTo(session, 20)).toEqual([
      { first: 0, last: 5 },
      { first: 10, last: 12 },
      { first: 16, last: 20 },
    ]);
    expect(pathTo(session, 9)).toEqual([{ first: 0, last: 9 }]);
    expect(partingOf(pathTo(session, 20), pathTo(session, 15))).toEqual({ seq: 12, nextA: 16, nextB: 13 });
    expect(partingOf(pathTo(session, 20), pathTo(session, 9))).toEqual({ seq: 5, nextA: 10, nextB: 6 });
  });

  it('gives each point of the active branch where another goes on, with the ways in order and the one shown', () => {
    const points = forkPoints(session, [
      branch('b0', 0, -1, 9),
      branch('b10', 10, 5, 15),
      branch('b16', 16, 12, 20, { active: true }),
    ]);
    expect(
      points.map((point) => [point.seq, point.options.map((option) => option.branch.id), point.activeIndex]),
    ).toEqual([
      [5, ['b0', 'b16'], 1],
      [12, ['b10', 'b16'], 1],
    ]);
  });

  it('shows a subtree as one way, switching to its newest leaf', () => {
    const points = forkPoints(session, [
      branch('b0', 0, -1, 9, { active: true }),
      branch('b10', 10, 5, 15, { at: 5_000 }),
      branch('b16', 16, 12, 20, { at: 9_000 }),
    ]);
    expect(points).toHaveLength(1);
    expect(points[0]!.seq).toBe(5);
    expect(points[0]!.options.map((option) => [option.branch.id, option.next])).toEqual([
      ['b0', 6],
      ['b16', 10],
    ]);
    expect(points[0]!.activeIndex).toBe(0);
  });

  it('puts an active branch rewound to the point last, with nothing after it', () => {
    const rewound = { segments: [{ firstSeq: 10, parentSeq: 5 }], head: 12 };
    const points = forkPoints(rewound, [
      branch('b0', 0, -1, 9),
      branch('b10', 10, 5, 15),
      branch('b10:12', 10, 5, 12, { active: true }),
    ]);
    expect(points.map((point) => [point.seq, point.options.map((option) => [option.branch.id, option.next])])).toEqual([
      [
        5,
        [
          ['b0', 6],
          ['b10:12', 10],
        ],
      ],
      [
        12,
        [
          ['b10', 13],
          ['b10:12', undefined],
        ],
      ],
    ]);
    expect(points[1]!.activeIndex).toBe(1);
  });

  it('reads a fork rewound into its source: the part before the fork point is one run', () => {
    const fork = { forkedFrom: { sessionId: 'source', seq: 4 }, segments: [{ firstSeq: 8, parentSeq: 2 }] };
    expect(pathTo(fork, 7)).toEqual([
      { first: 0, last: 4 },
      { first: 5, last: 7 },
    ]);
    const points = forkPoints(fork, [branch('b5', 5, 4, 7), branch('b8', 8, 2, 10, { active: true })]);
    expect(points.map((point) => [point.seq, point.options.map((option) => option.next)])).toEqual([[2, [3, 8]]]);
  });

  it('has no switcher with one branch', () => {
    expect(forkPoints({}, [branch('b0', 0, -1, 9, { active: true })])).toEqual([]);
  });

  it('places each switcher before the first block past its point, or at the end', () => {
    const blocks = [
      { id: 'a', seq: 0 },
      { id: 'b', seq: 4 },
      { id: 'c', seq: 10 },
    ];
    const points = forkPoints({ segments: [{ firstSeq: 10, parentSeq: 5 }], head: 12 }, [
      branch('b0', 0, -1, 9),
      branch('b10', 10, 5, 15),
      branch('b10:12', 10, 5, 12, { active: true }),
    ]);
    const placed = placeForkPoints(points, blocks);
    expect([...placed.before.entries()].map(([id, list]) => [id, list.map((point) => point.seq)])).toEqual([
      ['c', [5]],
    ]);
    expect(placed.end.map((point) => point.seq)).toEqual([12]);
  });
});

describe('what a rewind says it will do', () => {
  const log = new LogBuilder().turn('Fix the parser', 'Done.', 0).turn('Now the tests', 'Added.', 0);
  log.complete({
    type: 'system',
    id: 'compaction-1',
    subtype: 'compaction',
    content: 'Compacted',
    createdAt: 1,
    data: { version: 2 },
  });
  log.turn('And the docs', 'Written.', 0);
  const conversation = applyEvents(emptyConversation('session-1'), log.events);
  const trace = traceEvents(emptyTrace(), log.events);
  const users = conversation.blocks.filter((block) => block.type === 'user_message');

  it('a user message goes back to just before it, saying which turn and that nothing is deleted', () => {
    const target = rewindTargetOf(conversation.blocks, users[1]!.id, trace)!;
    expect(target).toMatchObject({ kind: 'message', turn: 2, turns: 3, text: 'Now the tests' });
    expect(target.to).toBe(users[1]!.seq! - 1);
    // The files go back to the tree the message's turn started from: its snapshot is taken at the message's seq.
    expect(target).toMatchObject({ filesTo: users[1]!.seq });
    const both = rewindSummary(target, 'both');
    expect(both.title).toBe('Rewind to before message 2 of 3: “Now the tests”');
    expect(both.conversation).toContain('2 turns');
    expect(both.files).toContain('not overwritten');
    expect(both.kept).toContain('Nothing is deleted');
    expect(rewindSummary(target, 'conversation').files).toBe("The project's files stay as they are.");
    expect(rewindSummary(target, 'files').conversation).toBe('The conversation stays as it is.');
  });

  it('a compaction keeps through its checkpoint, by its block id', () => {
    const target = rewindTargetOf(conversation.blocks, 'compaction-1', trace)!;
    expect(target).toMatchObject({ kind: 'checkpoint', to: 'compaction-1', version: 2, turnsBefore: 2, turnsAfter: 1 });
    const summary = rewindSummary(target, 'conversation');
    expect(summary.title).toBe('Rewind to checkpoint v2 (after 2 turns)');
    expect(summary.conversation).toContain('starts from checkpoint v2');
  });

  it('other blocks have no rewind target', () => {
    const answer = conversation.blocks.find((block) => block.type === 'assistant_text')!;
    expect(rewindTargetOf(conversation.blocks, answer.id, trace)).toBeUndefined();
  });
});
