import type { Summarizer } from '../../src/sessions/index.js';

/** Deterministic English-like text: `count` words from a fixed vocabulary, seeded. */
export function prose(count: number, seed = 1): string {
  const words =
    'the agent reads the task then edits args.ts to parse a verbose flag and runs npm test which passes so it commits the change and reports back to the user with a short summary of decisions and open questions'.split(
      ' ',
    );
  const out: string[] = [];
  let state = seed >>> 0;
  for (let index = 0; index < count; index++) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    out.push(words[state % words.length]!);
  }
  return out.join(' ');
}

export interface FakeSummarizer {
  summarize: Summarizer;
  /** Every prompt received, in order. */
  prompts: string[];
  systemPrompts: string[];
}

/** Answers every compaction with a small valid checkpoint naming the range it folded. */
export function foldingSummarizer(): FakeSummarizer {
  const prompts: string[] = [];
  const systemPrompts: string[] = [];
  return {
    prompts,
    systemPrompts,
    summarize: async ({ systemPrompt, prompt }) => {
      prompts.push(prompt);
      systemPrompts.push(systemPrompt);
      const range = /# Conversation To Fold In \(seq (\d+)–(\d+)/.exec(prompt);
      return JSON.stringify({
        completed: [`Folded seq ${range?.[1]}–${range?.[2]}`],
        inProgress: ['Working through the turns'],
        pending: ['Keep going'],
        decisions: [],
        blockers: [],
      });
    },
  };
}

/** A summarizer driven by a list of answers (strings, or errors to throw), then `fallback`. */
export function scriptedSummarizer(answers: Array<string | Error>, fallback?: string): FakeSummarizer {
  const prompts: string[] = [];
  const systemPrompts: string[] = [];
  return {
    prompts,
    systemPrompts,
    summarize: async ({ systemPrompt, prompt }) => {
      prompts.push(prompt);
      systemPrompts.push(systemPrompt);
      const next = answers.shift() ?? fallback;
      if (next === undefined) throw new Error('no scripted answer left');
      if (next instanceof Error) throw next;
      return next;
    },
  };
}

export const VALID_CHECKPOINT = JSON.stringify({
  completed: ['Parsed --verbose in src/cli/args.ts'],
  inProgress: ['Wiring verbose logging'],
  pending: ['Document the flag in README.md'],
  decisions: ['A boolean flag, no levels (user asked for simplicity)'],
  blockers: [],
});

export function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((ok) => (resolve = ok));
  return { promise, resolve };
}
