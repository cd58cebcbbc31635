import type { NoteLine } from './view-state.js';
/** The slash commands: their table, parsing and Tab completion. Pure; running them is in `controller.ts`. */

export interface CommandSpec {
  name: string;
  /** How it is typed, for help and errors. */
  usage: string[];
  description: string;
  /** What Tab completes for its first argument. */
  completes?: 'roles' | 'task' | 'projects';
}

export const COMMANDS: readonly CommandSpec[] = [
  {
    name: 'draft',
    usage: ['/draft <role>'],
    description: 'Draft an agent by role into the active project and task.',
    completes: 'roles',
  },
  {
    name: 'undraft',
    usage: ['/undraft'],
    description: 'Close the draft and show its summary (turns, cost, duration).',
  },
  {
    name: 'context',
    usage: ['/context'],
    description: 'Context use: tokens, window, % used, sections, distance to compaction, cost, turns.',
  },
  {
    name: 'project',
    usage: ['/project', '/project <name>'],
    description: 'List projects, or make one the active project.',
    completes: 'projects',
  },
  {
    name: 'task',
    usage: ['/task', '/task new <title>', '/task select <slug>'],
    description: "List the active project's tasks, create one, or select one.",
    completes: 'task',
  },
  { name: 'roles', usage: ['/roles'], description: 'List the roles an agent can be drafted as.' },
  { name: 'sessions', usage: ['/sessions'], description: 'List recent sessions.' },
  { name: 'rename', usage: ['/rename <title>'], description: "Rename the draft's session." },
  {
    name: 'tag',
    usage: ['/tag <tags…>', '/tag -<tag>'],
    description: "Tag the draft's session (a leading - removes that tag).",
  },
  {
    name: 'pin',
    usage: ['/pin', '/pin off'],
    description: "Pin the draft's session to the top of the list (or unpin it).",
  },
  { name: 'search', usage: ['/search <words>'], description: 'Search every message of every session.' },
  {
    name: 'rewind',
    usage: ['/rewind'],
    description:
      'Go back to before an earlier message of yours (Esc Esc too): the conversation, the files, or both. Nothing is deleted.',
  },
  {
    name: 'branches',
    usage: ['/branches', '/branches <id>'],
    description: "The conversation's branches (fork point, last message, time, turns, cost); choose one to switch to.",
  },
  {
    name: 'fork',
    usage: ['/fork', '/fork <backend>'],
    description: 'Fork the conversation into a new session (on another back end if named) and go on in the fork.',
  },
  {
    name: 'checkpoints',
    usage: ['/checkpoints'],
    description: "The draft's checkpoint versions; choose one to make current again (none is deleted).",
  },
  {
    name: 'restore-checkpoint',
    usage: ['/restore-checkpoint <version>'],
    description: 'Make that checkpoint version current again (a new version copying it).',
  },
  {
    name: 'compact',
    usage: ['/compact [instructions]'],
    description: "Compact the draft's context now, optionally with focus instructions.",
  },
  { name: 'agents', usage: ['/agents'], description: 'Worker agents of this channel and their status.' },
  {
    name: 'runs',
    usage: ['/runs'],
    description: 'Workflow runs of the project: status, phase, the question each waits on.',
  },
  {
    name: 'answer',
    usage: ['/answer <number or text>', '/answer <runId> <answer>'],
    description: "Answer the question a run waits on (shown above the title bar): the oldest, or that run's.",
  },
  {
    name: 'say',
    usage: ['/say <conversation or role> <message>'],
    description: 'Step into a conversation between agents: both read your note with the next message.',
  },
  {
    name: 'backend',
    usage: ['/backend', '/backend <name>'],
    description: "Show the draft's back end, or continue the draft on another back end from the next message on.",
  },
  {
    name: 'goal',
    usage: ['/goal', '/goal <condition>', '/goal stop'],
    description:
      'Show the goal, set one (the draft goes on after each turn until a judge finds it met; 10 turns at most), or stop it.',
  },
  { name: 'help', usage: ['/help'], description: 'This list.' },
  { name: 'quit', usage: ['/quit'], description: 'Leave Parley (a server started by this terminal stops with it).' },
];

export type ParsedInput =
  | { kind: 'empty' }
  | { kind: 'message'; text: string }
  | { kind: 'command'; name: string; args: string; spec: CommandSpec }
  | { kind: 'unknown'; name: string };

/** A line typed at the prompt: a message, a known command with its argument text, or an unknown command. */
export function parseInput(line: string): ParsedInput {
  const text = line.trim();
  if (text === '') return { kind: 'empty' };
  // `//…` sends a message that starts with a slash.
  if (text.startsWith('//')) return { kind: 'message', text: text.slice(1) };
  if (!text.startsWith('/')) return { kind: 'message', text };
  const match = /^\/(\S*)\s*([\s\S]*)$/.exec(text)!;
  const name = match[1]!.toLowerCase();
  const spec = COMMANDS.find((command) => command.name === name);
  if (!spec) return { kind: 'unknown', name };
  return { kind: 'command', name, args: match[2]!.trim(), spec };
}

/** The closest command name, for "did you mean" (edit distance at most 2), or undefined. */
export function suggestCommand(name: string): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const command of COMMANDS) {
    const distance = editDistance(name, command.name);
    if (distance <= 2 && (!best || distance < best.distance)) best = { name: command.name, distance };
  }
  if (best) return best.name;
  return COMMANDS.find((command) => name.length > 0 && command.name.startsWith(name))?.name;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length]!;
}

export interface CompletionSources {
  roles: readonly string[];
  tasks: readonly string[];
  projects: readonly string[];
}

export interface Completion {
  /** The input after completion (unchanged when nothing fits). */
  value: string;
  /** What could follow, when more than one thing fits. */
  candidates: string[];
}

/**
 * Tab completion: command names after `/`, then role names after `/draft `, project names after
 * `/project `, `new`/`select` and task slugs after `/task `. A single match completes whole (with a
 * space after a command); several complete to their common prefix and are listed.
 */
export function complete(input: string, sources: CompletionSources): Completion {
  if (!input.startsWith('/')) return { value: input, candidates: [] };
  const space = input.indexOf(' ');
  if (space === -1) {
    const prefix = input.slice(1).toLowerCase();
    const names = COMMANDS.map((command) => command.name).filter((name) => name.startsWith(prefix));
    return fill(input, '/', prefix, names, ' ');
  }
  const name = input.slice(1, space).toLowerCase();
  const rest = input.slice(space + 1);
  const spec = COMMANDS.find((command) => command.name === name);
  if (!spec?.completes) return { value: input, candidates: [] };
  const head = input.slice(0, space + 1);
  if (spec.completes === 'task') {
    const select = /^select\s+(\S*)$/.exec(rest);
    if (select)
      return fill(
        input,
        `${head}select `,
        select[1]!,
        sources.tasks.filter((slug) => slug.startsWith(select[1]!)),
        '',
      );
    if (/\s/.test(rest)) return { value: input, candidates: [] };
    return fill(
      input,
      head,
      rest,
      ['new', 'select'].filter((word) => word.startsWith(rest)),
      ' ',
    );
  }
  if (/\s/.test(rest)) return { value: input, candidates: [] };
  const pool = spec.completes === 'roles' ? sources.roles : sources.projects;
  return fill(
    input,
    head,
    rest,
    pool.filter((entry) => entry.startsWith(rest)),
    '',
  );
}

function fill(input: string, head: string, typed: string, matches: readonly string[], after: string): Completion {
  const unique = [...new Set(matches)].sort();
  if (unique.length === 0) return { value: input, candidates: [] };
  if (unique.length === 1) return { value: `${head}${unique[0]}${after}`, candidates: [] };
  const prefix = commonPrefix(unique);
  return { value: prefix.length > typed.length ? `${head}${prefix}` : input, candidates: unique };
}

function commonPrefix(values: readonly string[]): string {
  let prefix = values[0] ?? '';
  for (const value of values) while (!value.startsWith(prefix)) prefix = prefix.slice(0, -1);
  return prefix;
}

/** `/help`: every command with its usage. */
export function helpLines(): string[] {
  const width = Math.max(...COMMANDS.flatMap((command) => command.usage.map((usage) => usage.length)));
  const lines: string[] = [];
  for (const command of COMMANDS) {
    command.usage.forEach((usage, index) =>
      lines.push(`  ${usage.padEnd(width)}  ${index === 0 ? command.description : ''}`.trimEnd()),
    );
  }
  return lines;
}

/** `/help`: the commands, what typing does, and the keys. */
export function helpNote(): NoteLine[] {
  return [
    { text: 'Commands', bold: true },
    ...helpLines().map((text) => ({ text })),
    {
      text: "Type anything else to talk to the drafted agent; with none drafted, the first message drafts the project's default role (into a new task named after it unless one is selected). Start with // to send a message that begins with /.",
      tone: 'dim',
    },
    {
      text: 'Keys: Enter sends · Tab completes · ↑/↓ earlier lines · Esc interrupts the turn · Esc Esc on an empty line rewinds · Ctrl+O shows thinking and worker threads in full · Ctrl+C quits',
      tone: 'dim',
    },
  ];
}
