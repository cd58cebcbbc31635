/**
 * Turns a native compaction summary (free text) into the five lists of a Parley checkpoint, so an
 * imported session starts with a typed checkpoint. The text itself is never lost: it stays in the
 * compaction block.
 */

/** Same shape as the store's `CheckpointSummary` (this layer may not import the store). */
export interface SummarySections {
  completed: string[];
  inProgress: string[];
  pending: string[];
  decisions: string[];
  blockers: string[];
}

type Bucket = keyof SummarySections;

export function emptySections(): SummarySections {
  return { completed: [], inProgress: [], pending: [], decisions: [], blockers: [] };
}

/** Which list a heading's items belong to. Order matters: "pending" before "task", "current work" before "work". */
function bucketOf(heading: string): Bucket {
  const text = heading.toLowerCase();
  if (/pending|to ?do|next step|remaining|still to|outstanding|plan/.test(text)) return 'pending';
  if (/current work|in progress|currently|ongoing/.test(text)) return 'inProgress';
  if (/error|blocker|problem|issue|fail/.test(text)) return 'blockers';
  if (/decision|concept|approach|constraint|knowledge|intent|request/.test(text)) return 'decisions';
  return 'completed';
}

/** A markdown heading, a bold line, or a short line ending with a colon (`1. Pending Tasks:`). */
const HEADING = /^\s*(?:#{1,6}\s+(.+)|\*\*([^*]+)\*\*:?|(?:\d+\.\s+)?([^\n]{2,88}):)\s*$/;
const BULLET = /^\s*(?:[-*•]|\d+[.)])\s+(.*)$/;

/**
 * Claude Code's compact summary: numbered or markdown headings ("1. Primary Request and Intent:",
 * "Pending Tasks:") followed by bullets or paragraphs. Each bullet or paragraph becomes one item
 * in the list its heading maps to; text before any heading goes to `completed`.
 */
export function sectionsFromSummaryText(text: string): SummarySections {
  const sections = emptySections();
  let bucket: Bucket = 'completed';
  let paragraph: string[] = [];
  const flush = (): void => {
    const item = paragraph.join(' ').trim();
    if (item.length > 0) sections[bucket].push(item);
    paragraph = [];
  };
  for (const rawLine of text.split('\n')) {
    const line = rawLine.trimEnd();
    if (line.trim().length === 0) {
      flush();
      continue;
    }
    const bullet = BULLET.exec(line);
    const heading = line.length <= 96 ? HEADING.exec(line) : null;
    if (heading !== null) {
      flush();
      bucket = bucketOf(heading[1] ?? heading[2] ?? heading[3] ?? line);
      continue;
    }
    if (bullet !== null) {
      flush();
      paragraph.push(bullet[1] ?? '');
      continue;
    }
    paragraph.push(line.trim());
  }
  flush();
  if (Object.values(sections).every((items: string[]) => items.length === 0) && text.trim().length > 0) {
    sections.completed.push(text.trim());
  }
  return sections;
}

const SNAPSHOT = /<state_snapshot>([\s\S]*?)(?:<\/state_snapshot>|$)/;
const ELEMENT = /<([a-z_]+)>([\s\S]*?)<\/\1>/g;
const PLAN_MARK = /^\[(DONE|IN PROGRESS|TODO)\]\s*/i;

/** True when a text carries Gemini CLI's compression snapshot. */
export function hasStateSnapshot(text: string): boolean {
  return text.includes('<state_snapshot>');
}

/**
 * Gemini CLI's `<state_snapshot>`: `<overall_goal>`, `<key_knowledge>`, `<file_system_state>`,
 * `<recent_actions>` and `<current_plan>` whose items are marked `[DONE]`, `[IN PROGRESS]`, `[TODO]`.
 */
export function sectionsFromStateSnapshot(text: string): { sections: SummarySections; goal?: string } {
  const sections = emptySections();
  const body = SNAPSHOT.exec(text)?.[1] ?? text;
  let goal: string | undefined;
  for (const match of body.matchAll(ELEMENT)) {
    const name = match[1] ?? '';
    const items = itemsOf(match[2] ?? '');
    switch (name) {
      case 'overall_goal':
        goal = items.join(' ');
        if (goal) sections.decisions.push(`Goal: ${goal}`);
        break;
      case 'current_plan':
        for (const item of items) {
          const mark = PLAN_MARK.exec(item)?.[1]?.toUpperCase();
          const plain = item.replace(PLAN_MARK, '');
          if (mark === 'DONE') sections.completed.push(plain);
          else if (mark === 'IN PROGRESS') sections.inProgress.push(plain);
          else sections.pending.push(plain);
        }
        break;
      case 'recent_actions':
      case 'file_system_state':
        sections.completed.push(...items);
        break;
      default:
        sections.decisions.push(...items);
    }
  }
  if (Object.values(sections).every((list: string[]) => list.length === 0) && body.trim().length > 0) {
    sections.completed.push(body.trim());
  }
  return goal === undefined ? { sections } : { sections, goal };
}

function itemsOf(text: string): string[] {
  const items: string[] = [];
  let paragraph: string[] = [];
  const flush = (): void => {
    const item = paragraph.join(' ').trim();
    if (item) items.push(item);
    paragraph = [];
  };
  for (const rawLine of text.split('\n')) {
    const line = rawLine.trim();
    if (line.length === 0 || line.startsWith('<!--')) {
      flush();
      continue;
    }
    const bullet = BULLET.exec(line);
    if (bullet !== null) {
      flush();
      paragraph.push(bullet[1] ?? '');
    } else {
      paragraph.push(line);
    }
  }
  flush();
  return items;
}
