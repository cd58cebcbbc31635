import * as z from 'zod';
import { WorkspaceError } from '../errors.js';
import { diskFiles } from '../file-io.js';
import { workspaceTool, type WorkspaceTool, type WorkspaceToolContext } from '../workspace-tool.js';

const DESCRIPTION = `Reads a text file of the project. Returns its lines numbered from 1 ("<number>\\t<line>"), the first 2,000 unless you give offset (first line, 1-based) and limit (how many lines). The numbers are not part of the file: leave them out of edit_file's old_string. Paths are relative to the project folder.`;

export const ReadFileInputSchema = z.strictObject({
  path: z.string().min(1).describe('The file, relative to the project folder.'),
  offset: z.number().int().positive().optional().describe('First line to read, 1-based (default 1).'),
  limit: z.number().int().positive().optional().describe('How many lines to read (default 2000).'),
});

const MAX_LINE = 2_000;

export function readFileTool(context: WorkspaceToolContext): WorkspaceTool {
  return workspaceTool(
    { name: 'read_file', description: DESCRIPTION, schema: ReadFileInputSchema, permission: 'files-read' },
    async (input) => {
      const target = await context.paths.resolveForRead(input.path);
      const text = await (context.files ?? diskFiles).read(target);
      if (text === undefined)
        throw new WorkspaceError(
          'NOT_FOUND',
          `"${target.relative}" does not exist; list_files or glob show what does.`,
          { data: { path: target.relative } },
        );
      const lines = text.split('\n');
      if (lines.at(-1) === '') lines.pop();
      const start = (input.offset ?? 1) - 1;
      const count = input.limit ?? context.limits.readLines;
      if (start >= lines.length && lines.length > 0) {
        throw new WorkspaceError(
          'INVALID_INPUT',
          `"${target.relative}" has ${lines.length} lines; offset ${input.offset} is past its end.`,
          { data: { path: target.relative, totalLines: lines.length } },
        );
      }
      const shown = lines.slice(start, start + count);
      const body = shown
        .map(
          (line, index) =>
            `${start + index + 1}\t${line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)} [… line cut at ${MAX_LINE} characters]` : line}`,
        )
        .join('\n');
      const end = start + shown.length;
      const more =
        end < lines.length ? `\n[lines ${start + 1}–${end} of ${lines.length}; read on with offset ${end + 1}]` : '';
      return {
        content: lines.length === 0 ? `(${target.relative} is empty)` : body + more,
        data: { path: target.relative, startLine: start + 1, endLine: end, totalLines: lines.length },
      };
    },
  );
}
