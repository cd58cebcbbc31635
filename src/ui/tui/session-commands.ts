import type { GoalStatus } from '../../protocol/index.js';
import { noArguments, type CommandContext } from './command-context.js';
import { oneLine } from './format.js';
import { sessionsReport } from './reports.js';

// Sessions and what they are filed under: /sessions, /rename, /tag, /pin, /search, and the draft's /goal.

/** `/sessions`: the recent sessions. */
export async function sessionsCommand(context: CommandContext, args: string): Promise<void> {
  if (!noArguments(context, 'sessions', args)) return;
  const { sessions } = await context.client.request('list_sessions', { limit: 15 });
  if (sessions.length === 0) {
    context.note([{ text: 'No sessions yet.' }]);
    return;
  }
  context.note(sessionsReport(sessions, context.state().draft?.sessionId, context.clock()));
}

/** `/rename`, `/tag`, `/pin`: what the draft's session is called and filed under. */
export async function fileSessionCommand(
  context: CommandContext,
  name: 'rename' | 'tag' | 'pin',
  args: string,
): Promise<void> {
  const draft = context.state().draft;
  if (!draft) {
    context.error(`No agent is drafted: /${name} changes the drafted session. Draft one with /draft <role>.`);
    return;
  }
  const words = args.split(/\s+/).filter(Boolean);
  if (name !== 'pin' && words.length === 0) {
    context.error(name === 'rename' ? 'Give the new title: /rename <title>.' : 'Give one or more tags: /tag <tags…>.');
    return;
  }
  const change =
    name === 'rename'
      ? { title: args.trim() }
      : name === 'pin'
        ? { pinned: words[0] !== 'off' }
        : {
            addTags: words.filter((word) => !word.startsWith('-')),
            removeTags: words.filter((word) => word.startsWith('-')).map((word) => word.slice(1)),
          };
  const { session } = await context.client.request('update_session', { sessionId: draft.sessionId, ...change });
  const tags = session.tags?.length ? `  #${session.tags.join(' #')}` : '';
  context.note([{ text: `${session.title ?? session.sessionId}${session.pinned ? '  [pinned]' : ''}${tags}` }]);
}

/** `/search`: every message of every session. */
export async function searchCommand(context: CommandContext, args: string): Promise<void> {
  if (args.trim() === '') {
    context.error('Give the words to look for: /search <words>.');
    return;
  }
  const { hits, terms } = await context.client.request('search_sessions', { query: args.slice(0, 1_000), limit: 10 });
  if (hits.length === 0) {
    context.note([{ text: terms.length === 0 ? 'No words to search for.' : 'No message holds those words.' }]);
    return;
  }
  context.note(hits.map((hit) => ({ text: `${hit.title ?? hit.sessionId} (seq ${hit.seq}): ${hit.snippet}` })));
}

/** `/goal`: show the draft's goal, set one (a model judge, the default budget), or stop it. */
export async function goalCommand(context: CommandContext, args: string): Promise<void> {
  if (!context.state().draft) {
    context.error('/goal needs a draft: /draft <role> first.');
    return;
  }
  let goal: GoalStatus | undefined;
  if (args === '') goal = (await context.client.request('get_goal', {})).goal;
  else if (args === 'stop') goal = (await context.client.request('stop_goal', {})).goal;
  else goal = (await context.client.request('set_goal', { condition: args, budget: { turns: 10 } })).goal;
  if (!goal) {
    context.note([{ text: 'No goal. Set one with /goal <condition>.' }]);
    return;
  }
  const sessionId = context.state().draft?.sessionId;
  if (sessionId) context.dispatch({ type: 'goal_status', sessionId, goal });
  const last = goal.judgements.at(-1);
  context.note([
    { text: `Goal: ${goal.condition}` },
    {
      text: goal.ended
        ? `Ended (${goal.ended.reason}): ${goal.ended.message}`
        : `Running: ${goal.used.turns} of ${goal.budget.turns} turns used.${last ? ` Still missing: ${oneLine(last.missing, 120)}` : ''}`,
    },
  ]);
}
