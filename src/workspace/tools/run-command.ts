import { promises as fs } from 'node:fs';
import * as z from 'zod';
import { WorkspaceError } from '../errors.js';
import { commandPrefix, gate } from '../permission-gate.js';
import { runProcess } from '../run-process.js';
import { workspaceTool, type WorkspaceTool, type WorkspaceToolContext } from '../workspace-tool.js';

const DESCRIPTION = `Runs a shell command (/bin/sh -c) in the project folder, or in cwd (a folder inside it), and returns its exit code and its output (stdout and stderr together; long output has its middle cut and marked). It is stopped, with every process it started, after timeout_ms (default 2 minutes, at most 10). Commands may be sandboxed: the project folder writable, the rest read-only, no network unless the role allows it.`;

export const RunCommandInputSchema = z.strictObject({
  command: z.string().min(1).describe('The shell command.'),
  cwd: z.string().min(1).optional().describe('Working folder, relative to the project folder (default ".").'),
  timeout_ms: z
    .number()
    .int()
    .positive()
    .optional()
    .describe('Milliseconds before the command is stopped (default 120000, at most 600000).'),
});

export function runCommandTool(
  context: WorkspaceToolContext,
  options: { onSpawn?: (pid: number) => void } = {},
): WorkspaceTool {
  return workspaceTool(
    { name: 'run_command', description: DESCRIPTION, schema: RunCommandInputSchema, permission: 'shell' },
    async (input, signal, toolUseId) => {
      const folder = await context.paths.resolveForRead(input.cwd ?? '.');
      const stats = await fs.stat(folder.absolute).catch(() => undefined);
      if (!stats?.isDirectory())
        throw new WorkspaceError('INVALID_INPUT', `cwd "${folder.relative}" is not a folder of the project.`, {
          data: { cwd: folder.relative },
        });
      if (input.timeout_ms !== undefined && input.timeout_ms > context.limits.maxCommandTimeoutMs) {
        throw new WorkspaceError(
          'INVALID_INPUT',
          `timeout_ms ${input.timeout_ms} is over the limit of ${context.limits.maxCommandTimeoutMs}; split the work or ask the user to run it.`,
          { data: { timeout_ms: input.timeout_ms } },
        );
      }
      const prefix = commandPrefix(input.command);
      const refusal = await gate(
        context,
        {
          tool: 'run_command',
          kind: 'command',
          title: `Run \`${input.command.length > 120 ? `${input.command.slice(0, 117)}...` : input.command}\`${folder.relative === '.' ? '' : ` in ${folder.relative}`}`,
          command: input.command,
          cwd: folder.relative,
          ...(prefix !== undefined
            ? { scopeKey: `command:${prefix}`, allowAlwaysScope: `commands starting with "${prefix}"` }
            : {}),
        },
        signal,
        toolUseId,
      );
      if (refusal) return refusal;
      const timeoutMs = input.timeout_ms ?? context.limits.commandTimeoutMs;
      const result = await runProcess({
        command: input.command,
        cwd: folder.absolute,
        timeoutMs,
        maxOutputChars: context.limits.outputChars,
        ...(signal ? { signal } : {}),
        ...(context.sandbox ? { sandbox: context.sandbox } : {}),
        ...(options.onSpawn ? { onSpawn: options.onSpawn } : {}),
      });
      const ending = result.timedOut
        ? `[timed out after ${timeoutMs} ms: the command and every process it started were stopped]`
        : result.cancelled
          ? '[cancelled: the command and every process it started were stopped]'
          : result.exitCode === null
            ? `[ended by signal ${result.signal ?? 'unknown'}]`
            : `[exit code ${result.exitCode}]`;
      const output = result.output === '' ? '(no output)' : result.output.replace(/\n$/, '');
      return {
        content: `$ ${input.command}\n${output}\n${ending}`,
        isError: result.exitCode !== 0,
        data: {
          exitCode: result.exitCode,
          ...(result.signal ? { signal: result.signal } : {}),
          timedOut: result.timedOut,
          cancelled: result.cancelled,
          durationMs: result.durationMs,
          ...(result.cutChars > 0 ? { cutChars: result.cutChars } : {}),
          cwd: folder.relative,
          sandbox: context.sandbox?.info.kind ?? 'none',
        },
      };
    },
  );
}
