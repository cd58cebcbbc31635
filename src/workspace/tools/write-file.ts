import * as z from 'zod';
import { unifiedDiff } from '../file-diff.js';
import { diskFiles } from '../file-io.js';
import { gate } from '../permission-gate.js';
import { WorkspaceError } from '../errors.js';
import { workspaceTool, type WorkspaceTool, type WorkspaceToolContext } from '../workspace-tool.js';

const DESCRIPTION = `Writes a whole text file: creates it (and its folders) or replaces what it holds. Prefer edit_file to change part of an existing file. Returns the change as a unified diff.`;

export const WriteFileInputSchema = z.strictObject({
  path: z.string().min(1).describe('The file, relative to the project folder.'),
  content: z.string().describe('The complete new content.'),
});

export function writeFileTool(context: WorkspaceToolContext): WorkspaceTool {
  return workspaceTool(
    { name: 'write_file', description: DESCRIPTION, schema: WriteFileInputSchema, permission: 'files-write' },
    async (input, signal, toolUseId) => {
      const target = await context.paths.resolveForWrite(input.path);
      const files = context.files ?? diskFiles;
      const before = await files.read(target);
      const diff = unifiedDiff(target.relative, before ?? '', input.content);
      const refusal = await gate(
        context,
        {
          tool: 'write_file',
          kind: 'write',
          title: `${before === undefined ? 'Create' : 'Overwrite'} ${target.relative}`,
          path: target.relative,
          diff,
          scopeKey: 'tool:write_file',
          allowAlwaysScope: 'every write_file call in this session',
        },
        signal,
        toolUseId,
      );
      if (refusal) return refusal;
      if ((await files.read(target)) !== before) {
        throw new WorkspaceError(
          'FILE_CHANGED',
          `"${target.relative}" changed while the write waited for approval; nothing was written. Read it again and redo the write.`,
          { data: { path: target.relative } },
        );
      }
      await files.write(target, input.content);
      const lines =
        input.content === '' ? 0 : input.content.split('\n').length - (input.content.endsWith('\n') ? 1 : 0);
      return {
        content: `${before === undefined ? 'Created' : 'Wrote'} ${target.relative} (${lines} line${lines === 1 ? '' : 's'}):\n${diff}`,
        data: { path: target.relative, diff, created: before === undefined },
      };
    },
  );
}
