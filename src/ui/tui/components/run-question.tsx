import { Box, Text } from 'ink';
import { oneLine } from '../format.js';
import { timeLeft, type RunQuestionsState } from '../run-questions.js';

/**
 * The oldest question a run of the project waits on, above the title bar: the run, the question,
 * its choices numbered, the default and a countdown to its deadline, and how to answer. Others
 * waiting are counted (`/runs` lists them).
 */
export function RunQuestion({ questions, now, width }: { questions: RunQuestionsState; now: number; width: number }) {
  const question = questions.questions[0];
  if (!questions.enabled || !question) return null;
  const { prompt } = question;
  const notes = [
    prompt.defaultChoice !== undefined ? `default: ${prompt.defaultChoice}` : undefined,
    prompt.deadline !== undefined ? timeLeft(prompt.deadline, now) : undefined,
    questions.questions.length > 1 ? `${questions.questions.length - 1} more waiting (/runs)` : undefined,
  ].filter((note): note is string => note !== undefined && note !== '');
  return (
    <Box flexDirection="column" marginTop={1}>
      <Text color="magenta" wrap="truncate-end">
        <Text bold>? </Text>
        <Text bold>{oneLine(prompt.prompt, Math.max(20, width - 40))}</Text>
        <Text color="gray">{`  (run ${question.runId} · ${question.harness})`}</Text>
      </Text>
      {prompt.choices ? (
        <Text wrap="truncate-end">{`  ${prompt.choices.map((choice, index) => `${index + 1}) ${choice}`).join('   ')}`}</Text>
      ) : null}
      <Text color="gray" wrap="truncate-end">
        {`  ${notes.length > 0 ? `${notes.join(' · ')} · ` : ''}answer with /answer <${prompt.choices ? 'number or text' : 'text'}>`}
      </Text>
    </Box>
  );
}
