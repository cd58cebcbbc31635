import * as z from 'zod';
import { projectFiles } from '../project-files.js';
import { workspaceTool, type WorkspaceTool, type WorkspaceToolContext } from '../workspace-tool.js';

const DESCRIPTION = `Finds files by glob pattern ("**/*.ts", "src/**/test-*.js"), searched from the project folder or from path. Returns matching file paths relative to the project folder, sorted; .git and what .gitignore excludes are left out.`;

export const GlobInputSchema = z.strictObject({
  pattern: z.string().min(1).describe('A glob pattern: * within a name, ** across folders, {a,b} alternatives.'),
  path: z.string().min(1).optional().describe('Folder to search from, relative to the project folder (default ".").'),
});

export function globTool(context: WorkspaceToolContext): WorkspaceTool {
  return workspaceTool(
    { name: 'glob', description: DESCRIPTION, schema: GlobInputSchema, permission: 'files-read' },
    async (input, signal) => {
      const base = await context.paths.resolveForRead(input.path ?? '.');
      const files = await projectFiles(context.paths, {
        base: base.absolute,
        patterns: [input.pattern],
        ...(signal ? { signal } : {}),
      });
      const shown = files.slice(0, context.limits.entries);
      const more =
        files.length > shown.length
          ? `\n[… ${files.length - shown.length} more files not shown; narrow the pattern]`
          : '';
      return {
        content: files.length === 0 ? `No files match "${input.pattern}".` : shown.join('\n') + more,
        data: { count: files.length },
      };
    },
  );
}
