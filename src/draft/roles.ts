import type * as Yaml from 'yaml';
import path from 'node:path';
import { IdSchema, readRoleFolder, type RoleText, type RoleTextError } from '../store/index.js';
import { RoleFrontMatterSchema, type RoleFileError, type RoleInfo } from './types.js';

/**
 * Roles are Markdown files with YAML front matter in a project's roles folder
 * (`<dataDir>/roles/<name>.md`, by default `.parley/roles/`; the DraftStore keeps their text,
 * this module parses it). The front matter says who the agent
 * is and what it may do (`name`, `description`, `backend`, `model`, `permissions`, `allowedTools`,
 * `permissionMode`, `maxTurns`, `network`); the body is its instructions. A project's file overrides the
 * built-in role of the same name. A malformed file never breaks the others: it is reported with
 * its file and field, and only drafting that role fails.
 */

export const BUILTIN_ROLES: readonly RoleInfo[] = [
  {
    name: 'product-analyst',
    description:
      'Talks the product through with you, writes specs and tasks, and delegates work to developer and QA workers.',
    permissions: ['agent-draft', 'agent-converse', 'projects-list', 'projects-create', 'files-read'],
    source: 'builtin',
    instructions: [
      'You are the product analyst on this project. You talk with the user: ask what they want, restate it, and agree on the scope before anything is built.',
      'You may draft worker agents with `draft_agent` (roles such as `dev` and `qa`), wait for them with `await_agent`, stop them with `kill_agent` and see them with `list_agents`.',
      'Give each worker a self-contained task: what to do, where, and what to report back. Ask for an output schema when you need structured results.',
      'Report what the workers found in your own words; do not paste their raw output.',
    ].join('\n\n'),
  },
  {
    name: 'dev',
    description: 'Implements a task: reads the code, changes it with tests, and reports what changed.',
    permissions: ['files-read', 'files-write', 'shell'],
    source: 'builtin',
    instructions: [
      'You are a software developer on this project. Implement the task you are given with small, tested changes that follow the code around them.',
      'When you finish, report what you changed, which files, how you tested it, and anything left open.',
    ].join('\n\n'),
  },
  {
    name: 'qa',
    description: 'Reviews and tests changes; reports defects with steps to reproduce.',
    permissions: ['files-read', 'files-write', 'shell'],
    source: 'builtin',
    instructions: [
      'You are the QA reviewer on this project. Check the change you are given against its task: run it, read it, try the edge cases.',
      'Report each defect with steps to reproduce, what you expected and what happened; say plainly when you found none.',
    ].join('\n\n'),
  },
];

export interface LoadedRoles {
  roles: RoleInfo[];
  errors: RoleFileError[];
}

/** Built-in roles overlaid with the role files of a folder. Never throws for a bad file. */
export async function loadRoles(rolesDir: string): Promise<LoadedRoles> {
  return parseRoles(await readRoleFolder(rolesDir));
}

/**
 * Built-in roles overlaid with a project's role files as its DraftStore lists them (their text,
 * unparsed). Never throws for a bad file: it is listed in `errors` with its location and field.
 */
export async function parseRoles(listing: { files: RoleText[]; errors: RoleTextError[] }): Promise<LoadedRoles> {
  const byName = new Map<string, RoleInfo>(BUILTIN_ROLES.map((role) => [role.name, role]));
  const errors: RoleFileError[] = listing.errors.map((error) => ({ file: error.location, message: error.message }));
  const fromFiles = new Map<string, string>();
  for (const { location: file, text } of listing.files) {
    const parsed = await parseRoleFile(text, file);
    if ('message' in parsed) {
      errors.push(parsed);
      continue;
    }
    const earlier = fromFiles.get(parsed.name);
    if (earlier) {
      errors.push({
        file,
        field: 'name',
        message: `Role "${parsed.name}" is already defined in ${earlier}; give one of them another name.`,
      });
      continue;
    }
    fromFiles.set(parsed.name, file);
    byName.set(parsed.name, parsed);
  }
  return { roles: [...byName.values()].sort((a, b) => a.name.localeCompare(b.name)), errors };
}

/** `yaml`, loaded with the first role file, not on every server start. */
let yamlModule: Promise<typeof Yaml> | undefined;

/** Parses one role file: the role, or an error naming the file and the offending field. */
export async function parseRoleFile(text: string, file: string): Promise<RoleInfo | RoleFileError> {
  const { parse: parseYaml } = await (yamlModule ??= import('yaml'));
  const fallbackName = path.basename(file, '.md');
  const { frontMatter, body, error } = splitFrontMatter(text);
  if (error) return { file, message: error };
  let raw: unknown = {};
  if (frontMatter !== undefined) {
    try {
      raw = parseYaml(frontMatter) ?? {};
    } catch (cause) {
      return { file, message: `The front matter is not valid YAML: ${(cause as Error).message.split('\n')[0]}` };
    }
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return { file, message: 'The front matter must be a mapping of fields (name, description, permissions, …).' };
  }
  const parsed = RoleFrontMatterSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
    const field = keys.length > 0 ? keys.join(', ') : issue.path.map(String).join('.') || undefined;
    const message =
      keys.length > 0
        ? `Unknown field ${keys.map((key) => `"${key}"`).join(', ')}; the known fields are ${Object.keys(RoleFrontMatterSchema.shape).join(', ')}.`
        : `Field "${field ?? '(root)'}": ${issue.message}${describeValue(raw, issue.path)}.`;
    return { file, ...(field ? { field } : {}), message };
  }
  const front = parsed.data;
  const name = front.name ?? fallbackName;
  if (!IdSchema.safeParse(name).success) {
    return {
      file,
      field: 'name',
      message: `The role name "${name}" (from the file name) must be letters, digits, ".", "_" or "-"; set \`name:\` in the front matter.`,
    };
  }
  const instructions = body.trim();
  return {
    name,
    description: front.description ?? (instructions.split('\n', 1)[0] ?? '').slice(0, 200),
    permissions: [...new Set(front.permissions)],
    instructions,
    source: file,
    ...(front.backend ? { backend: front.backend } : {}),
    ...(front.model ? { model: front.model } : {}),
    ...(front.allowedTools ? { allowedTools: front.allowedTools } : {}),
    ...(front.permissionMode ? { permissionMode: front.permissionMode } : {}),
    ...(front.maxTurns ? { maxTurns: front.maxTurns } : {}),
    ...(front.network !== undefined ? { network: front.network } : {}),
    ...(front.maxConversationTurns ? { maxConversationTurns: front.maxConversationTurns } : {}),
    ...(front.maxOpenConversations ? { maxOpenConversations: front.maxOpenConversations } : {}),
  };
}

function splitFrontMatter(text: string): { frontMatter?: string; body: string; error?: string } {
  const normalized = text.replace(/^\uFEFF/, '').replace(/\r\n/g, '\n');
  if (!normalized.startsWith('---\n') && normalized.trim() !== '---') return { body: normalized };
  const end = normalized.indexOf('\n---', 3);
  if (end === -1)
    return {
      body: '',
      error: 'The front matter starting with "---" on line 1 is never closed; end it with a line "---".',
    };
  const afterFence = normalized.indexOf('\n', end + 4);
  return { frontMatter: normalized.slice(4, end + 1), body: afterFence === -1 ? '' : normalized.slice(afterFence + 1) };
}

function describeValue(raw: unknown, issuePath: ReadonlyArray<PropertyKey>): string {
  let value: unknown = raw;
  for (const key of issuePath) {
    if (typeof value !== 'object' || value === null) return '';
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value === undefined ? '' : ` (got ${JSON.stringify(value)})`;
}
