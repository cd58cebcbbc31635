import { ParleyError, type CountTokens, type TokenCounter } from '../conversation/index.js';
import { renderTool, prunedMarker, type ProjectedMessage } from './projection.js';

/**
 * Request building: system prompt = "# Your Role" + "# Context" + "# Checkpoint" +
 * "# Recent Conversation"; user prompt = the new message; all within the token budget. Pure: the
 * sources are gathered by the caller; this module measures them and, when they do not fit, makes
 * them fit: old tool outputs are pruned first, then the largest contents are truncated with a marker
 * saying what was cut, then the oldest messages not yet in the checkpoint are left out with a notice.
 */

export interface ContextSection {
  /** Stable name (`project-structure`, `recent-commits`…): the key in context.json. */
  key: string;
  /** The "## …" heading. */
  title: string;
  text: string;
}

export interface RequestSources {
  /** The rendered "# Your Role" section. */
  role: string;
  context: readonly ContextSection[];
  /** The rendered "# Checkpoint" section. */
  checkpoint: string;
  /** The projected conversation (see projection.ts), without the new user message. */
  conversation: readonly ProjectedMessage[];
  userMessage: string;
  /** A session's token counts kept between requests (unit-tokens.ts); unset: the counter's shared cache. */
  counts?: KeptTokenCounts;
}

/** Token counts kept by key: the key changes whenever its text does (a unit's key, or one derived from it after a NUL). */
export interface KeptTokenCounts {
  countKeyed(key: string, text: string): number;
}

export interface RequestBudget {
  /** Largest request, in tokens. */
  tokenBudget: number;
  /** Fraction of the budget at which compaction starts. */
  compactionThreshold: number;
  /** Real / estimated tokens (a session's calibration); 1 when uncalibrated. */
  calibrationRatio?: number;
}

/** Tokens per section; they add up to `totalTokens`. */
export interface RequestSections {
  role: number;
  context: number;
  checkpoint: number;
  conversation: number;
  userPrompt: number;
}

export interface RequestAdjustments {
  /** Old tool outputs replaced by a marker to fit the budget. */
  prunedToolOutputs: number;
  /** Contents cut in the middle to fit, with their size before and after. */
  truncated: Array<{ what: string; fromTokens: number; toTokens: number }>;
  /** Oldest messages left out (not yet compacted; still in the log). */
  omittedMessages: number;
}

/** A managed request as it would be sent: system prompt, messages and the token count of each section. */
export interface BuiltRequest {
  systemPrompt: string;
  userPrompt: string;
  /** Calibrated tokens of the whole request: never above `budget`. */
  totalTokens: number;
  /** The tokenizer's own count, before calibration (what back ends report back against). */
  estimatedTokens: number;
  sections: RequestSections;
  /** Tokens of each context section, by key. */
  contextSections: Record<string, number>;
  budget: number;
  /** Tokens at which compaction starts (budget × compactionThreshold). */
  threshold: number;
  compactionThreshold: number;
  calibrationRatio: number;
  /** Units in "# Recent Conversation" (the compaction placeholder included). */
  messages: number;
  adjustments: RequestAdjustments;
  /** Whether building this request compacted the session first. */
  compacted?: boolean;
}

/** The request cannot fit even with everything cut: the budget is smaller than the request's skeleton. */
export class RequestBudgetError extends ParleyError {
  constructor(budget: number, needed: number) {
    super(
      'TOKEN_BUDGET_TOO_SMALL',
      `A token budget of ${budget} cannot hold even the role and the headings of a request (${needed} tokens after cutting everything else). Raise tokenBudget.`,
      { fault: 'user', data: { budget, needed } },
    );
  }
}

const SEPARATOR = '\n\n';
const CONTEXT_HEADING = '# Context';
const CONVERSATION_HEADING = '# Recent Conversation';
const NO_CONTEXT = 'No project context is available.';
const NO_MESSAGES = '(no messages since the checkpoint)';
/** Nothing is truncated below this many tokens while other content could still give way. */
const MIN_KEEP_TOKENS = 200;

interface Piece {
  text: string;
  tokens: number;
}

/**
 * A conversation unit being fitted. Its tokens are kept summed in its request as they change, so
 * measuring the request is O(1) and fitting a conversation of tens of thousands of units is linear:
 * re-summing them on every check made a long session's request take minutes of the server's only
 * thread (bench/soak-huge-session.ts found it).
 */
class UnitPiece implements Piece {
  #tokens: number;

  constructor(
    private readonly sum: { unitTokens: number },
    readonly unit: ProjectedMessage,
    public text: string,
    tokens: number,
  ) {
    this.#tokens = tokens;
    sum.unitTokens += tokens;
  }

  get tokens(): number {
    return this.#tokens;
  }

  set tokens(tokens: number) {
    this.sum.unitTokens += tokens - this.#tokens;
    this.#tokens = tokens;
  }
}

interface SectionPiece extends Piece {
  key: string;
  title: string;
  titleTokens: number;
}

/** Working copy of a request while it is measured and fitted. */
class WorkingRequest {
  role: Piece;
  context: SectionPiece[];
  checkpoint: Piece;
  units: UnitPiece[];
  user: Piece;
  omitted: { count: number; firstSeq: number; lastSeq: number } | undefined;
  omittedNotice: Piece | undefined;
  /** The units' tokens, summed (kept by UnitPiece). */
  unitTokens = 0;
  /** The oldest units counted as left out while step 3 looks for how many must go (see `hideOldest`). */
  private hidden = { count: 0, tokens: 0 };
  readonly adjustments: RequestAdjustments = { prunedToolOutputs: 0, truncated: [], omittedMessages: 0 };
  /** Where unit counts are kept: the session's own, or the counter's shared cache. */
  readonly counts: KeptTokenCounts;
  private readonly separator: number;
  private readonly contextHeading: number;
  private readonly conversationHeading: number;

  constructor(
    sources: RequestSources,
    readonly counter: TokenCounter,
  ) {
    this.separator = counter.countText(SEPARATOR);
    this.contextHeading = counter.countText(CONTEXT_HEADING);
    this.conversationHeading = counter.countText(CONVERSATION_HEADING);
    this.role = { text: sources.role, tokens: counter.countText(sources.role) };
    this.context = sources.context.map((section) => ({
      key: section.key,
      title: section.title,
      text: section.text,
      tokens: counter.countText(section.text),
      titleTokens: counter.countText(`## ${section.title}`),
    }));
    this.checkpoint = { text: sources.checkpoint, tokens: counter.countText(sources.checkpoint) };
    this.counts = sources.counts ?? counter;
    this.units = sources.conversation.map(
      (unit) => new UnitPiece(this, unit, unit.content, this.counts.countKeyed(unit.key, unit.content)),
    );
    this.user = { text: sources.userMessage, tokens: counter.countText(sources.userMessage) };
  }

  /** Raw tokens per section, separators included in the section they precede. */
  raw(): RequestSections {
    const context =
      this.separator +
      this.contextHeading +
      (this.context.length === 0
        ? this.separator + this.counter.countText(NO_CONTEXT)
        : this.context.reduce((sum, section) => sum + 2 * this.separator + section.titleTokens + section.tokens, 0));
    const shown = this.units.length - this.hidden.count;
    const conversationUnits = this.unitTokens - this.hidden.tokens + this.separator * shown;
    const notice = this.omittedNotice ? this.separator + this.omittedNotice.tokens : 0;
    const conversation =
      this.separator +
      this.conversationHeading +
      (shown === 0 && !this.omittedNotice
        ? this.separator + this.counter.countText(NO_MESSAGES)
        : conversationUnits + notice);
    return {
      role: this.role.tokens,
      context,
      checkpoint: this.separator + this.checkpoint.tokens,
      conversation,
      userPrompt: this.user.tokens,
    };
  }

  /** Counts `pieces` (the oldest units, holding `tokens`) as left out, without removing them yet. */
  hideOldest(pieces: number, tokens: number): void {
    this.hidden = { count: pieces, tokens };
  }

  /** Removes the units counted as left out (`gone`, which `hideOldest` counted). */
  removeHidden(gone: ReadonlySet<UnitPiece>): void {
    this.units = this.units.filter((piece) => !gone.has(piece));
    this.unitTokens -= this.hidden.tokens;
    this.hidden = { count: 0, tokens: 0 };
  }

  calibrated(ratio: number): { sections: RequestSections; total: number; raw: number } {
    const raw = this.raw();
    const sections: RequestSections = {
      role: Math.ceil(raw.role * ratio),
      context: Math.ceil(raw.context * ratio),
      checkpoint: Math.ceil(raw.checkpoint * ratio),
      conversation: Math.ceil(raw.conversation * ratio),
      userPrompt: Math.ceil(raw.userPrompt * ratio),
    };
    const total = sections.role + sections.context + sections.checkpoint + sections.conversation + sections.userPrompt;
    return { sections, total, raw: raw.role + raw.context + raw.checkpoint + raw.conversation + raw.userPrompt };
  }

  render(): { systemPrompt: string; userPrompt: string } {
    const context =
      this.context.length === 0
        ? `${CONTEXT_HEADING}${SEPARATOR}${NO_CONTEXT}`
        : CONTEXT_HEADING +
          this.context.map((section) => `${SEPARATOR}## ${section.title}${SEPARATOR}${section.text}`).join('');
    const units = this.units.map((unit) => unit.text);
    if (this.omittedNotice) {
      // After the compaction placeholder (when there is one), where the left-out messages were.
      const at = this.units[0]?.unit.kind === 'placeholder' ? 1 : 0;
      units.splice(at, 0, this.omittedNotice.text);
    }
    const conversation =
      units.length === 0
        ? `${CONVERSATION_HEADING}${SEPARATOR}${NO_MESSAGES}`
        : CONVERSATION_HEADING + units.map((text) => SEPARATOR + text).join('');
    return {
      systemPrompt: [this.role.text, context, this.checkpoint.text, conversation].join(SEPARATOR),
      userPrompt: this.user.text,
    };
  }
}

/** Measures a request without changing it: what compaction decisions are based on. */
export function measureRequest(
  sources: RequestSources,
  counter: TokenCounter,
  budget: RequestBudget,
): { totalTokens: number; estimatedTokens: number; sections: RequestSections } {
  const working = new WorkingRequest(sources, counter);
  const measured = working.calibrated(budget.calibrationRatio ?? 1);
  return { totalTokens: measured.total, estimatedTokens: measured.raw, sections: measured.sections };
}

/** Builds the request text within the budget (see the module comment for what gives way, in order). */
export function assembleRequest(sources: RequestSources, counter: TokenCounter, budget: RequestBudget): BuiltRequest {
  const ratio = budget.calibrationRatio ?? 1;
  const working = new WorkingRequest(sources, counter);
  const fits = () => working.calibrated(ratio).total <= budget.tokenBudget;
  if (!fits()) fit(working, budget.tokenBudget, ratio, fits);
  const measured = working.calibrated(ratio);
  const { systemPrompt, userPrompt } = working.render();
  const contextSections: Record<string, number> = {};
  for (const section of working.context)
    contextSections[section.key] = Math.ceil((section.tokens + section.titleTokens) * ratio);
  return {
    systemPrompt,
    userPrompt,
    totalTokens: measured.total,
    estimatedTokens: measured.raw,
    sections: measured.sections,
    contextSections,
    budget: budget.tokenBudget,
    threshold: Math.floor(budget.tokenBudget * budget.compactionThreshold),
    compactionThreshold: budget.compactionThreshold,
    calibrationRatio: ratio,
    messages: working.units.length + (working.omittedNotice ? 1 : 0),
    adjustments: working.adjustments,
  };
}

function fit(working: WorkingRequest, tokenBudget: number, ratio: number, fits: () => boolean): void {
  const count = (text: string) => working.counter.countText(text);
  const excess = () => Math.ceil(working.calibrated(ratio).total - tokenBudget);

  // 1. Old tool outputs, oldest first; the newest tool output stays (the model is most likely working on it).
  const lastTool = findLastIndex(working.units, (piece) => piece.unit.tool !== undefined);
  for (let index = 0; index < working.units.length && !fits(); index++) {
    if (index === lastTool) continue;
    const piece = working.units[index]!;
    const tool = piece.unit.tool;
    if (!tool || tool.pruned || tool.state === 'interrupted') continue;
    const marker = prunedMarker(tool.outputChars, piece.unit.lastSeq);
    if (tool.output.length <= marker.length) continue;
    piece.text = renderTool({ ...tool, output: marker });
    // Kept beside the unit's own count: the same outputs are pruned again on the next request.
    piece.tokens = working.counts.countKeyed(`${piece.unit.key}\0pruned`, piece.text);
    working.adjustments.prunedToolOutputs++;
  }

  // 2. The largest contents, cut down to a common cap (never below MIN_KEEP_TOKENS here).
  for (let round = 0; round < 4 && !fits(); round++) {
    const candidates: Array<{ tokens: number; cut: (cap: number) => void }> = [];
    for (const piece of working.units) {
      if (piece.unit.kind === 'placeholder' || piece.tokens <= MIN_KEEP_TOKENS) continue;
      candidates.push({ tokens: piece.tokens, cut: (cap) => truncateUnit(working, piece, cap) });
    }
    for (const section of working.context) {
      if (section.tokens <= MIN_KEEP_TOKENS) continue;
      candidates.push({
        tokens: section.tokens,
        cut: (cap) => truncateSection(working, section, `the "${section.title}" context section`, cap),
      });
    }
    if (working.user.tokens > MIN_KEEP_TOKENS) {
      candidates.push({
        tokens: working.user.tokens,
        cut: (cap) =>
          truncateSection(working, working.user, 'your message (the full text is kept in the session log)', cap),
      });
    }
    if (candidates.length === 0) break;
    const rawExcess = Math.ceil(excess() / ratio) + 1;
    const cap = waterLevel(
      candidates.map((candidate) => candidate.tokens),
      rawExcess,
    );
    for (const candidate of candidates) if (candidate.tokens > cap) candidate.cut(cap);
  }

  // 3. The oldest messages not yet in the checkpoint, with a notice of what was left out: the fewest
  // that make it fit. Leaving one more out never lengthens the request (it takes a separator and its
  // text, the notice grows by a digit at most), so the fewest is found by bisection, each probe O(1)
  // but for counting the notice: a long session has tens of thousands of units.
  if (!fits()) {
    const removable = working.units.filter((piece) => piece.unit.kind !== 'placeholder');
    const tokens = [0];
    const firstSeq = [Number.POSITIVE_INFINITY];
    const lastSeq = [Number.NEGATIVE_INFINITY];
    for (const piece of removable) {
      tokens.push(tokens.at(-1)! + piece.tokens);
      firstSeq.push(Math.min(firstSeq.at(-1)!, piece.unit.firstSeq));
      lastSeq.push(Math.max(lastSeq.at(-1)!, piece.unit.lastSeq));
    }
    const leaveOut = (many: number): boolean => {
      working.hideOldest(many, tokens[many]!);
      if (many === 0) {
        working.omitted = undefined;
        working.omittedNotice = undefined;
      } else {
        const omitted = { count: many, firstSeq: firstSeq[many]!, lastSeq: lastSeq[many]! };
        const text = `[${many} older message${many === 1 ? '' : 's'} (seq ${omitted.firstSeq}–${omitted.lastSeq}) left out to fit the token budget; they are not in the checkpoint yet and are kept in the session log.]`;
        working.omitted = omitted;
        working.omittedNotice = { text, tokens: count(text) };
      }
      return fits();
    };
    // Leaving all out either fits or is the best step 3 can do (step 4 goes on from there).
    let fewest = removable.length;
    if (leaveOut(fewest)) {
      let tooFew = 0;
      while (fewest - tooFew > 1) {
        const middle = Math.floor((tooFew + fewest) / 2);
        if (leaveOut(middle)) fewest = middle;
        else tooFew = middle;
      }
    }
    leaveOut(fewest);
    working.removeHidden(new Set(removable.slice(0, fewest)));
    working.adjustments.omittedMessages = fewest;
  }

  // 4. Past all of that only a budget smaller than the request's skeleton remains: cut what is left.
  if (!fits()) {
    for (const section of working.context) {
      section.text = `[left out: "${section.title}" did not fit the token budget]`;
      section.tokens = count(section.text);
    }
  }
  for (const [piece, what] of [
    [working.checkpoint, 'the checkpoint'],
    [working.user, 'your message (the full text is kept in the session log)'],
    [working.role, 'the role description'],
  ] as const) {
    if (fits()) break;
    const cap = Math.max(0, piece.tokens - (Math.ceil(excess() / ratio) + 1));
    truncateSection(working, piece, what, cap);
  }
  if (!fits()) throw new RequestBudgetError(tokenBudget, working.calibrated(ratio).total);
}

/** The cap that, applied to every size above it, removes at least `excess` tokens (markers included). */
export function waterLevel(sizes: readonly number[], excess: number, markerTokens = 60): number {
  const sorted = [...sizes].sort((a, b) => b - a);
  let sum = 0;
  for (let k = 1; k <= sorted.length; k++) {
    sum += sorted[k - 1]!;
    const cap = Math.floor((sum - k * markerTokens - excess) / k);
    const next = sorted[k] ?? 0;
    if (cap >= next && cap >= MIN_KEEP_TOKENS) return cap;
    if (cap < MIN_KEEP_TOKENS && next <= MIN_KEEP_TOKENS) return MIN_KEEP_TOKENS;
  }
  return MIN_KEEP_TOKENS;
}

function truncateSection(working: WorkingRequest, piece: Piece, what: string, cap: number): void {
  const before = piece.tokens;
  const cut = truncateText(piece.text, cap, (text) => working.counter.countText(text), what);
  if (cut.tokens >= before) return;
  piece.text = cut.text;
  piece.tokens = cut.tokens;
  working.adjustments.truncated.push({ what, fromTokens: before, toTokens: cut.tokens });
}

function truncateUnit(working: WorkingRequest, piece: UnitPiece, cap: number): void {
  const count = (text: string) => working.counter.countText(text);
  const unit = piece.unit;
  const before = piece.tokens;
  const where = `seq ${unit.lastSeq === unit.firstSeq ? unit.firstSeq : `${unit.firstSeq}–${unit.lastSeq}`}; the full text is kept in the session log`;
  const tool = unit.tool;
  let text: string;
  if (tool && tool.state !== 'orphan') {
    const current = piece.text === unit.content ? tool : { ...tool, output: outputOf(piece.text, tool) };
    const inputTokens = count(current.input);
    const outputTokens = count(current.output);
    const rest = Math.max(0, before - inputTokens - outputTokens);
    if (outputTokens >= inputTokens) {
      const output = truncateText(
        current.output,
        Math.max(0, cap - rest - inputTokens),
        count,
        `this tool output (call ${tool.toolUseId}, ${where})`,
      );
      text = renderTool({ ...current, output: output.text });
    } else {
      const input = truncateText(
        current.input,
        Math.max(0, cap - rest - outputTokens),
        count,
        `this tool input (call ${tool.toolUseId}, ${where})`,
      );
      text = renderTool({ ...current, input: input.text });
    }
  } else if (unit.kind === 'message') {
    const prefix = unit.role === 'user' ? '**User**: ' : '**Assistant**: ';
    const body = piece.text.startsWith(prefix) ? piece.text.slice(prefix.length) : piece.text;
    const message = truncateText(body, Math.max(0, cap - count(prefix)), count, `this ${unit.role} message (${where})`);
    text = prefix + message.text;
  } else {
    text = truncateText(piece.text, cap, count, `this ${unit.kind} (${where})`).text;
  }
  const tokens = count(text);
  if (tokens >= before) return;
  piece.text = text;
  piece.tokens = tokens;
  working.adjustments.truncated.push({
    what: `${unit.kind} at seq ${unit.firstSeq}`,
    fromTokens: before,
    toTokens: tokens,
  });
}

/** The output part of an already re-rendered tool unit (after pruning). */
function outputOf(rendered: string, tool: { toolUseId: string }): string {
  const marker = `**Tool result** (call ${tool.toolUseId}`;
  const at = rendered.indexOf(marker);
  if (at === -1) return rendered;
  const colon = rendered.indexOf('): ', at);
  return colon === -1 ? rendered.slice(at) : rendered.slice(colon + 3);
}

export interface TruncatedText {
  text: string;
  tokens: number;
}

/**
 * Cuts the middle out of a text so that it counts at most `maxTokens` (marker included when possible),
 * keeping the head and the tail (a tool's error is usually at the end), with a marker saying what was cut.
 */
export function truncateText(text: string, maxTokens: number, count: CountTokens, what: string): TruncatedText {
  const total = count(text);
  if (total <= maxTokens) return { text, tokens: total };
  const charsPerToken = text.length / Math.max(1, total);
  let keepTokens = Math.max(0, maxTokens - 60);
  let best: TruncatedText | undefined;
  for (let attempt = 0; attempt < 8; attempt++) {
    const keepChars = Math.max(0, Math.floor(keepTokens * charsPerToken));
    const head = safeSlice(text, 0, Math.floor(keepChars * 0.7));
    const tail =
      keepChars - head.length > 0 ? safeSlice(text, text.length - (keepChars - head.length), text.length) : '';
    const cutChars = text.length - head.length - tail.length;
    const cutTokens = Math.max(1, total - keepTokens);
    const marker = `[… truncated to fit the token budget: cut about ${cutTokens.toLocaleString('en-US')} of ${total.toLocaleString('en-US')} tokens (${cutChars.toLocaleString('en-US')} characters) from the middle of ${what} …]`;
    const result = `${head}${head ? '\n' : ''}${marker}${tail ? '\n' : ''}${tail}`;
    const tokens = count(result);
    best = { text: result, tokens };
    if (tokens <= maxTokens || keepTokens === 0) return best;
    keepTokens = Math.max(0, keepTokens - (tokens - maxTokens) - Math.ceil(keepTokens * 0.05) - 1);
  }
  return best!;
}

/** A slice that never splits a surrogate pair. */
function safeSlice(text: string, start: number, end: number): string {
  let from = Math.max(0, start);
  let to = Math.min(text.length, end);
  if (from > 0 && from < text.length && isLowSurrogate(text.charCodeAt(from))) from++;
  if (to > 0 && to < text.length && isHighSurrogate(text.charCodeAt(to - 1))) to--;
  return from >= to ? '' : text.slice(from, to);
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

function findLastIndex<T>(items: readonly T[], predicate: (item: T) => boolean): number {
  for (let index = items.length - 1; index >= 0; index--) if (predicate(items[index]!)) return index;
  return -1;
}

/**
 * The conversation without the new user message when the caller already added it to the log
 * (addMessage, then buildRequest with the same text): it is the user prompt, not history.
 */
export function withoutPendingUserMessage(
  messages: readonly ProjectedMessage[],
  userMessage: string,
): ProjectedMessage[] {
  const last = messages[messages.length - 1];
  if (last && last.kind === 'message' && last.role === 'user' && last.content === `**User**: ${userMessage}`)
    return messages.slice(0, -1);
  return [...messages];
}
