/**
 * A code-review workflow: a reviewer lists the issues, the user decides what to fix
 * (all, none, or each one), and a fixer fixes them.
 *
 * Runs offline on scripted back ends:
 *   npx tsx examples/code-review.ts
 *   parley run examples/code-review.ts [--input '{"code":"…"}'] [--record review.jsonl]
 *
 * To use real models, give the agents another back end (any AgentBackend), or pass
 * `create(input, { backends: { reviewer, fixer } })`.
 */
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { createScriptedBackend, defineAgent, defineHarness, type ScriptedCall, type ScriptStep } from 'parley';

export const SAMPLE_CODE = [
  'function total(items) {',
  '  var sum = 0;',
  '  for (var i = 0; i <= items.length; i++) sum += items[i].price;',
  '  return sum;',
  '}',
].join('\n');

const IssueSchema = z.object({
  line: z.number().int().positive(),
  severity: z.enum(['low', 'medium', 'high']),
  message: z.string(),
});
export type Issue = z.infer<typeof IssueSchema>;

const ReviewSchema = z.object({ issues: z.array(IssueSchema) });
const FixSchema = z.object({ code: z.string(), summary: z.string() });

/** The scripted reviewer finds the two classic problems when the code has them. */
function scriptedReview(call: ScriptedCall): ScriptStep[] {
  const code = call.prompt;
  const issues: Issue[] = [];
  if (code.includes('<= items.length'))
    issues.push({
      line: 3,
      severity: 'high',
      message: 'Off-by-one: `i <= items.length` reads past the end of the array; use `<`.',
    });
  if (/\bvar\b/.test(code)) issues.push({ line: 2, severity: 'low', message: 'Uses `var`; prefer `let` or `const`.' });
  return [
    { type: 'thinking', text: 'Reading the loop bounds and the declarations.' },
    {
      type: 'text',
      text: `I found ${issues.length} issue(s).\n\n\`\`\`json\n${JSON.stringify({ issues }, null, 2)}\n\`\`\``,
    },
  ];
}

/** The scripted fixer applies the fixes the prompt asks for to the code in the prompt. */
function scriptedFix(call: ScriptedCall): ScriptStep[] {
  const code = /```js\n([\s\S]*?)```/.exec(call.prompt)?.[1] ?? '';
  let fixed = code;
  const done: string[] = [];
  if (call.prompt.includes('Off-by-one')) {
    fixed = fixed.replace('<= items.length', '< items.length');
    done.push('fixed the loop bound');
  }
  if (call.prompt.includes('`var`')) {
    fixed = fixed.replace(/\bvar sum\b/, 'let sum').replace(/\bvar i\b/, 'let i');
    done.push('replaced var with let');
  }
  return [
    { type: 'text', text: JSON.stringify({ code: fixed.trimEnd(), summary: done.join('; ') || 'nothing to change' }) },
  ];
}

export const reviewer = defineAgent({
  name: 'Reviewer',
  role: 'You review code for bugs and style problems.',
  instructions: 'Answer with JSON: {"issues":[{"line":number,"severity":"low"|"medium"|"high","message":string}]}.',
  backend: createScriptedBackend({ name: 'scripted-reviewer', defaultTurn: scriptedReview }),
  outputSchema: ReviewSchema,
});

export const fixer = defineAgent({
  name: 'Fixer',
  role: 'You fix the listed issues in the code and change nothing else.',
  instructions: 'Answer with JSON: {"code": the whole fixed code, "summary": what you changed}.',
  backend: createScriptedBackend({ name: 'scripted-fixer', defaultTurn: scriptedFix }),
  outputSchema: FixSchema,
});

export interface CodeReviewState {
  code: string;
  issues: Issue[];
  fixed: string[];
}

const codeReview = defineHarness({
  name: 'code-review',
  agents: { reviewer, fixer },
  state: (input: { code?: string } | undefined): CodeReviewState => ({
    code: input?.code ?? SAMPLE_CODE,
    issues: [],
    fixed: [],
  }),
  run: async ({ agents, state, session, phase, emit }) => {
    const review = await phase('review', () => agents.reviewer.run(`Review this code:\n\n${state.code}`));
    state.issues = review.issues;
    emit('review', { issues: state.issues.length });
    if (state.issues.length === 0) return { ...state };

    // Without a user (run()), everything found is fixed.
    let chosen = state.issues;
    if (session) {
      const list = state.issues.map((issue) => `  line ${issue.line} [${issue.severity}] ${issue.message}`).join('\n');
      const answer = await session.waitForUser(`Found ${state.issues.length} issue(s):\n${list}\nFix automatically?`, {
        choices: ['Yes', 'No', 'Review each'],
      });
      if (answer.choice === 'No') chosen = [];
      if (answer.choice === 'Review each') {
        chosen = [];
        for (const issue of state.issues) {
          const each = await session.waitForUser(`Fix line ${issue.line}: ${issue.message}`, {
            choices: ['Fix', 'Skip'],
          });
          if (each.choice === 'Fix') chosen.push(issue);
        }
      }
    }
    if (chosen.length === 0) return { ...state };

    const fix = await phase('fix', () =>
      agents.fixer.run(
        `Fix these issues:\n${chosen.map((issue) => `- line ${issue.line}: ${issue.message}`).join('\n')}\n\nin this code:\n\`\`\`js\n${state.code}\n\`\`\``,
      ),
    );
    state.code = fix.code;
    state.fixed = chosen.map((issue) => issue.message);
    emit('fixed', { summary: fix.summary });
    return { ...state };
  },
});

export default codeReview;

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { runWorkflow } = await import('../src/cli/commands/run.js');
  process.exitCode = await runWorkflow(codeReview, undefined, { stdin: process.stdin, stdout: process.stdout });
}
