import { oneLine } from './format.js';
import { noArguments, type CommandContext } from './command-context.js';
import { rolesReport } from './reports.js';

// The catalog a draft is made from: /project, /task and /roles.

/** `/project`: list the projects, or make one the active project. */
export async function projectCommand(context: CommandContext, args: string): Promise<void> {
  const { projects } = await context.client.request('list_projects');
  context.dispatch({ type: 'catalog', projects: projects.map((project) => project.name) });
  if (args === '') {
    const active = context.state().project;
    const width = Math.max(...projects.map((project) => project.name.length), 4);
    context.note([
      { text: 'Projects', bold: true },
      ...projects.map((project) => ({
        text: `${project.name === active ? '›' : ' '} ${project.name.padEnd(width)}  ${project.path}${project.current ? '  (this folder)' : ''}`,
        ...(project.name === active ? { tone: 'accent' as const } : {}),
      })),
      { text: 'Choose one with /project <name>.', tone: 'dim' },
    ]);
    return;
  }
  if (/\s/.test(args)) {
    context.error(
      `/project takes one name: /project <name>. Projects: ${projects.map((project) => project.name).join(', ')}.`,
    );
    return;
  }
  const found = projects.find((project) => project.name === args);
  if (!found) {
    context.error(`No project "${args}". Projects: ${projects.map((project) => project.name).join(', ')}.`);
    return;
  }
  const changed = context.state().project !== found.name;
  context.dispatch({ type: 'select', project: found.name, ...(changed ? { task: null } : {}) });
  context.note([
    {
      text: `Active project: ${found.name} (${found.path}).${changed ? ' Choose a task with /task select <slug> or create one with /task new <title>.' : ''}`,
      tone: 'success',
    },
  ]);
  await context.refreshCatalog();
}

/** `/task`: list the active project's tasks, create one (`new`), or select one (`select`). */
export async function taskCommand(context: CommandContext, args: string): Promise<void> {
  const project = context.state().project;
  if (project === undefined) {
    context.error('No active project. Choose one with /project <name> (/project lists them).');
    return;
  }
  const [verb = '', ...rest] = args.split(/\s+/);
  const value = args.slice(verb.length).trim();
  if (verb === '') return listTasks(context, project);
  if (verb === 'new') {
    if (value === '') {
      context.error('/task new needs a title: /task new <title>.');
      return;
    }
    const { task } = await context.client.request('create_task', { project, title: value });
    context.dispatch({ type: 'select', task: task.slug });
    context.dispatch({
      type: 'catalog',
      tasks: [...context.state().tasks.filter((slug) => slug !== task.slug), task.slug],
    });
    context.note([
      {
        text: `Created task ${task.slug} ("${task.title}") in project ${project}; it is the active task. /draft <role> to start on it.`,
        tone: 'success',
      },
    ]);
    return;
  }
  if (verb === 'select') {
    if (value === '' || rest.length !== 1) {
      context.error('/task select takes one task slug: /task select <slug> (/task lists them).');
      return;
    }
    const { tasks } = await context.client.request('list_tasks', { project });
    context.dispatch({ type: 'catalog', tasks: tasks.map((task) => task.slug) });
    const found = tasks.find((task) => task.slug === value);
    if (!found) {
      context.error(
        `No task "${value}" in project ${project}.${tasks.length > 0 ? ` Tasks: ${tasks.map((task) => task.slug).join(', ')}.` : ' Create one with /task new <title>.'}`,
      );
      return;
    }
    context.dispatch({ type: 'select', task: found.slug });
    context.note([{ text: `Active task: ${found.slug} ("${found.title}", ${found.state}).`, tone: 'success' }]);
    return;
  }
  context.error(`Unknown /task action "${verb}". Expected /task, /task new <title> or /task select <slug>.`);
}

async function listTasks(context: CommandContext, project: string): Promise<void> {
  const { tasks } = await context.client.request('list_tasks', { project });
  context.dispatch({ type: 'catalog', tasks: tasks.map((task) => task.slug) });
  if (tasks.length === 0) {
    context.note([{ text: `No tasks in project ${project} yet. Create one with /task new <title>.` }]);
    return;
  }
  const active = context.state().task;
  const width = Math.max(...tasks.map((task) => task.slug.length));
  context.note([
    { text: `Tasks of ${project}`, bold: true },
    ...tasks.map((task) => ({
      text: `${task.slug === active ? '›' : ' '} ${task.slug.padEnd(width)}  ${oneLine(task.title, 50)}  [${task.state}]${task.activeDraft ? `  drafted: ${task.activeDraft.role}` : ''}`,
      ...(task.slug === active ? { tone: 'accent' as const } : {}),
    })),
    { text: 'Choose one with /task select <slug>.', tone: 'dim' },
  ]);
}

/** `/roles`: the roles an agent can be drafted as. */
export async function rolesCommand(context: CommandContext, args: string): Promise<void> {
  if (!noArguments(context, 'roles', args)) return;
  const project = context.state().project;
  const { roles, errors } = await context.client.request('list_roles', project !== undefined ? { project } : {});
  context.dispatch({ type: 'catalog', roles: roles.map((role) => role.name) });
  context.note(rolesReport(roles, errors));
}
