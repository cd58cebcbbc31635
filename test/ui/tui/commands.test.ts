import { describe, expect, it } from 'vitest';
import { COMMANDS, complete, helpLines, parseInput, suggestCommand } from '../../../src/ui/tui/index.js';

const sources = {
  roles: ['dev', 'product-analyst', 'qa'],
  tasks: ['demo', 'docs-pass', 'release'],
  projects: ['parley', 'website'],
};

describe('parseInput', () => {
  it('tells messages from commands, keeps the argument text, and knows unknown commands', () => {
    expect(parseInput('   ')).toEqual({ kind: 'empty' });
    expect(parseInput(' hello there ')).toEqual({ kind: 'message', text: 'hello there' });
    expect(parseInput('//etc/hosts is a file')).toEqual({ kind: 'message', text: '/etc/hosts is a file' });
    expect(parseInput('/Draft  dev')).toMatchObject({ kind: 'command', name: 'draft', args: 'dev' });
    expect(parseInput('/task new Fix the login page')).toMatchObject({
      kind: 'command',
      name: 'task',
      args: 'new Fix the login page',
    });
    expect(parseInput('/compact keep\nthe numbers')).toMatchObject({
      kind: 'command',
      name: 'compact',
      args: 'keep\nthe numbers',
    });
    expect(parseInput('/nope x')).toEqual({ kind: 'unknown', name: 'nope' });
    expect(parseInput('/')).toEqual({ kind: 'unknown', name: '' });
  });
});

describe('suggestCommand', () => {
  it('suggests the nearest command for a typo or a prefix, and nothing for noise', () => {
    expect(suggestCommand('drat')).toBe('draft');
    expect(suggestCommand('undarft')).toBe('undraft');
    expect(suggestCommand('contxt')).toBe('context');
    expect(suggestCommand('sess')).toBe('sessions');
    expect(suggestCommand('zzzzzz')).toBeUndefined();
  });
});

describe('complete', () => {
  it('completes a command name whole (with a space) when one fits, to the common prefix when several do', () => {
    expect(complete('/dr', sources)).toEqual({ value: '/draft ', candidates: [] });
    expect(complete('/co', sources)).toEqual({ value: '/co', candidates: ['compact', 'context'] });
    expect(complete('/con', sources)).toEqual({ value: '/context ', candidates: [] });
    expect(complete('/', sources).candidates).toEqual(COMMANDS.map((command) => command.name).sort());
    expect(complete('/xyz', sources)).toEqual({ value: '/xyz', candidates: [] });
  });

  it('completes role names after /draft, project names after /project, and task actions and slugs after /task', () => {
    expect(complete('/draft p', sources)).toEqual({ value: '/draft product-analyst', candidates: [] });
    expect(complete('/draft ', sources)).toEqual({ value: '/draft ', candidates: ['dev', 'product-analyst', 'qa'] });
    expect(complete('/project w', sources)).toEqual({ value: '/project website', candidates: [] });
    expect(complete('/task s', sources)).toEqual({ value: '/task select ', candidates: [] });
    expect(complete('/task ', sources)).toEqual({ value: '/task ', candidates: ['new', 'select'] });
    expect(complete('/task select d', sources)).toEqual({ value: '/task select d', candidates: ['demo', 'docs-pass'] });
    expect(complete('/task select r', sources)).toEqual({ value: '/task select release', candidates: [] });
    expect(complete('/task new Fi', sources)).toEqual({ value: '/task new Fi', candidates: [] });
  });

  it('leaves messages and argument-less commands alone', () => {
    expect(complete('hello wor', sources)).toEqual({ value: 'hello wor', candidates: [] });
    expect(complete('/help me', sources)).toEqual({ value: '/help me', candidates: [] });
    expect(complete('/draft dev extra', sources)).toEqual({ value: '/draft dev extra', candidates: [] });
  });
});

describe('helpLines', () => {
  it('lists every usage of every command', () => {
    const text = helpLines().join('\n');
    for (const command of COMMANDS) for (const usage of command.usage) expect(text).toContain(usage);
  });
});
