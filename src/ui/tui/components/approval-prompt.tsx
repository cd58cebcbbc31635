import { Box, Text, useInput } from 'ink';
import { fileEditOf, type DiffLine } from '../../../conversation/index.js';
import type { PendingApprovalsState, PermissionDecision, PermissionRequest } from '../../../protocol/index.js';

export interface ApprovalPromptProps {
  approvals: PendingApprovalsState;
  onAnswer: (requestId: string, decision: PermissionDecision) => void;
  /** Ctrl+C: the input line is not listening while a request is shown. */
  onExit: () => void;
  width: number;
  /** Rows the diff may take; longer diffs are cut with a count of what is hidden. */
  maxDiffRows: number;
}

const DIFF_COLOR = { '+': 'green', '-': 'red', ' ': undefined } as const;

/**
 * The oldest waiting approval request: what the tool would do (the diff, coloured, or the command
 * and its folder) and the three answers on single keys: y allow once, a allow always (with what
 * it remembers), n or Esc deny.
 */
export function ApprovalPrompt({ approvals, onAnswer, onExit, width, maxDiffRows }: ApprovalPromptProps) {
  const request = approvals.requests[0];
  useInput(
    (input, key) => {
      if (key.ctrl && input === 'c') return onExit();
      if (!request || approvals.answering === request.requestId) return;
      const answer = input.toLowerCase();
      if (answer === 'y') onAnswer(request.requestId, 'allow_once');
      else if (answer === 'a')
        onAnswer(request.requestId, request.allowAlwaysScope !== undefined ? 'allow_always' : 'allow_once');
      else if (answer === 'n' || key.escape) onAnswer(request.requestId, 'deny');
    },
    { isActive: request !== undefined },
  );
  if (!request) return null;
  const waiting = approvals.requests.length;
  return (
    <Box flexDirection="column" borderStyle="round" borderColor="yellow" paddingX={1} width={Math.max(20, width - 1)}>
      <Text>
        <Text color="yellow" bold>
          Approve?
        </Text>{' '}
        <Text bold>{request.title}</Text>
        {waiting > 1 ? <Text color="gray"> (1 of {waiting} waiting)</Text> : null}
      </Text>
      {request.kind === 'command' ? (
        <CommandLines request={request} />
      ) : (
        <DiffLines request={request} maxRows={maxDiffRows} />
      )}
      <Box marginTop={1}>
        <Text>
          <Text color="green" bold>
            [y]
          </Text>{' '}
          allow once{'   '}
          {request.allowAlwaysScope !== undefined ? (
            <>
              <Text color="cyan" bold>
                [a]
              </Text>{' '}
              allow always: {request.allowAlwaysScope}
              {'   '}
            </>
          ) : null}
          <Text color="red" bold>
            [n]
          </Text>{' '}
          deny
        </Text>
      </Box>
      {approvals.answering === request.requestId ? <Text color="gray">Answering…</Text> : null}
      {approvals.error !== undefined ? <Text color="red">{approvals.error}</Text> : null}
    </Box>
  );
}

function CommandLines({ request }: { request: PermissionRequest }) {
  return (
    <Box flexDirection="column" marginTop={1}>
      <Text>
        <Text color="gray">$ </Text>
        {request.command ?? ''}
      </Text>
      <Text color="gray">in {request.cwd ?? '.'}</Text>
    </Box>
  );
}

function DiffLines({ request, maxRows }: { request: PermissionRequest; maxRows: number }) {
  const edit = fileEditOf(
    { name: request.tool, input: { path: request.path } },
    { output: { path: request.path ?? '', diff: request.diff ?? '' }, isError: false },
  );
  const rows: Array<{ key: string; header?: string; line?: DiffLine }> = [];
  edit?.hunks.forEach((hunk, index) => {
    rows.push({
      key: `h${index}`,
      header: `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`,
    });
    hunk.lines.forEach((line, at) => rows.push({ key: `h${index}l${at}`, line }));
  });
  if (!edit || rows.length === 0) return <Text color="gray">{request.path ?? ''}: no changes shown.</Text>;
  const shown = rows.length > maxRows ? rows.slice(0, Math.max(1, maxRows - 1)) : rows;
  return (
    <Box flexDirection="column" marginTop={1}>
      <Text color="gray">
        {edit.path} <Text color="green">+{edit.added}</Text> <Text color="red">-{edit.removed}</Text>
      </Text>
      {shown.map((row) =>
        row.header !== undefined ? (
          <Text key={row.key} color="cyan">
            {row.header}
          </Text>
        ) : (
          <Text key={row.key} color={DIFF_COLOR[row.line!.kind]}>
            {row.line!.kind}
            {row.line!.text}
          </Text>
        ),
      )}
      {shown.length < rows.length ? <Text color="gray">… {rows.length - shown.length} more lines</Text> : null}
    </Box>
  );
}
