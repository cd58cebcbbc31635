import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Command } from 'commander';
import { ValidationError } from '../../conversation/index.js';
import {
  createFileRunStore,
  createPostgresRunStore,
  DEFAULT_POSTGRES_SCHEMA,
  migrateRuns,
  migrateStore,
  type MigrationReport,
  type RunMigrationReport,
  type RunStore,
  type SessionMigration,
  type SessionStore,
} from '../../store/index.js';
import { migrateDraftLayer, type DraftLayerMigration } from '../draft-layer-migration.js';
import {
  describeLocation,
  openSourceStore,
  openTargetStore,
  parseStoreLocation,
  sameLocation,
  type StoreLocation,
} from '../store-location.js';

interface MigrateFlags {
  from?: string;
  to?: string;
  fromSchema: string;
  toSchema: string;
  batchSize: string;
  json?: boolean;
}

/** `parley migrate --from X --to Y`: copies a data folder into PostgreSQL, PostgreSQL into a folder, or any store into another. */
export function register(program: Command): void {
  program
    .command('migrate')
    .description(
      'Copy sessions (logs, checkpoints, transcripts), features, tasks, the draft layer (projects, tasks, drafts, role files) and durable runs (records and journals) from one store to another, and verify the copy',
    )
    .option('--from <store>', 'the store to copy from: a Parley data folder or a postgres:// URL')
    .option('--to <store>', 'the store to copy into: a data folder (made when missing) or a postgres:// URL')
    .option('--from-schema <name>', 'PostgreSQL schema of --from', DEFAULT_POSTGRES_SCHEMA)
    .option('--to-schema <name>', 'PostgreSQL schema of --to', DEFAULT_POSTGRES_SCHEMA)
    .option('--batch-size <n>', 'events per durable append', '500')
    .option('--json', 'print the report as JSON')
    .action(async (flags: MigrateFlags) => {
      if (flags.from === undefined || flags.to === undefined) {
        throw new ValidationError(
          `${flags.from === undefined ? '--from' : '--to'} is missing: run parley migrate --from <data folder | postgres://…> --to <data folder | postgres://…>.`,
        );
      }
      const batchSize = Number(flags.batchSize);
      if (!Number.isInteger(batchSize) || batchSize < 1)
        throw new ValidationError(
          `--batch-size ${JSON.stringify(flags.batchSize)} is not a whole number of at least 1.`,
        );
      const from = parseStoreLocation(flags.from, '--from', flags.fromSchema);
      const to = parseStoreLocation(flags.to, '--to', flags.toSchema);
      if (sameLocation(from, to))
        throw new ValidationError(
          `--from and --to are the same store (${describeLocation(from)}): give two different ones.`,
        );

      const warn = (message: string) => process.stderr.write(`parley store: ${message}\n`);
      const source = await openSourceStore(from, warn);
      let target: SessionStore;
      try {
        target = await openTargetStore(to, warn);
      } catch (error) {
        await source.close();
        throw error;
      }
      const progress = process.stderr.isTTY && !flags.json;
      let report: MigrationReport;
      let draftLayer: DraftLayerMigration;
      let runs: RunMigrationReport;
      try {
        report = await migrateStore(source, target, {
          batchSize,
          ...(progress
            ? {
                onSession: (_session: SessionMigration, index: number, total: number) =>
                  process.stderr.write(`\r\x1b[Kcopied ${index + 1} of ${total} sessions`),
              }
            : {}),
        });
        if (progress) process.stderr.write('\r\x1b[K');
        // While both session stores are open: a data folder's store.lock keeps this process its only writer.
        draftLayer = await migrateDraftLayer(from, to);
        runs = await copyRuns(from, to);
      } finally {
        await Promise.allSettled([source.close(), target.close()]);
      }
      if (flags.json) {
        process.stdout.write(
          `${JSON.stringify({ from: describeLocation(from), to: describeLocation(to), ...report, draftLayer, runs }, null, 2)}\n`,
        );
      } else {
        process.stdout.write(describe(describeLocation(from), describeLocation(to), report, draftLayer, runs));
      }
      if (!report.ok || !draftLayer.report.ok || !runs.ok) {
        process.stderr.write(
          'parley migrate: the copy is incomplete or does not match the source (see the table above); nothing in the target was overwritten.\n',
        );
        process.exitCode = 1;
      }
    });
}

/**
 * Durable runs, copied while the session stores are open (a data folder's store.lock keeps this
 * process its only writer). A source folder with no runs/ has none to copy and is not written to.
 */
async function copyRuns(from: StoreLocation, to: StoreLocation): Promise<RunMigrationReport> {
  if (from.kind === 'folder' && !(await isDirectory(join(from.dataDir, 'runs')))) return { runs: [], ok: true };
  const source = await openRunStore(from, true);
  try {
    const target = await openRunStore(to, false);
    try {
      return await migrateRuns(source, target);
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}

function openRunStore(location: StoreLocation, existingOnly: boolean): Promise<RunStore> {
  return location.kind === 'postgres'
    ? createPostgresRunStore({ connectionString: location.connectionString, schema: location.schema, existingOnly })
    : createFileRunStore({
        dataDir: location.dataDir,
        onWarning: (warning) => process.stderr.write(`parley store: ${warning.message}\n`),
      });
}

async function isDirectory(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isDirectory() ?? false;
}

const SHORT_HASH = 12;

function describe(
  from: string,
  to: string,
  report: MigrationReport,
  draftLayer: DraftLayerMigration,
  runs: RunMigrationReport,
): string {
  const lines = [`From ${from}`, `to   ${to}`, ''];
  const header = ['session', 'status', 'events', 'copied', 'checkpoints', 'transcripts', 'events sha-256', 'verified'];
  const rows = report.sessions.map((session) => {
    const digest = session.verification?.source;
    return [
      session.sessionId,
      session.status,
      String(digest?.events ?? '-'),
      String(session.written.events),
      String(digest?.checkpoints ?? '-'),
      String(digest?.transcripts ?? '-'),
      digest === undefined ? '-' : digest.eventsSha256.slice(0, SHORT_HASH),
      session.verification === undefined ? 'no' : session.verification.differences.length === 0 ? 'ok' : 'MISMATCH',
    ];
  });
  if (rows.length === 0) lines.push('The source holds no sessions.');
  else lines.push(...table([header, ...rows]));

  const problems: string[] = [];
  for (const session of report.sessions) {
    if (session.reason !== undefined) problems.push(`  ${session.sessionId}: ${session.status}: ${session.reason}`);
    for (const difference of session.verification?.differences ?? [])
      problems.push(`  ${session.sessionId}: ${difference}`);
  }
  for (const record of report.records) {
    if (record.reason !== undefined) problems.push(`  ${record.kind} ${record.id}: ${record.status}: ${record.reason}`);
    else if (!record.verified)
      problems.push(`  ${record.kind} ${record.id}: the target's copy does not match the source's`);
  }

  const count = (kind: string, status: string) =>
    report.records.filter((record) => record.kind === kind && record.status === status).length;
  for (const kind of ['feature', 'task']) {
    const total = report.records.filter((record) => record.kind === kind).length;
    lines.push(
      `${total} ${kind}${total === 1 ? '' : 's'}: ${count(kind, 'copied')} copied, ${count(kind, 'updated')} updated, ${count(kind, 'unchanged')} unchanged, ${count(kind, 'conflict')} conflicts`,
    );
  }
  if (report.targetOnlySessions.length > 0) {
    lines.push(
      `The target also holds ${report.targetOnlySessions.length} session(s) the source does not; they were left alone.`,
    );
  }
  if (problems.length > 0) lines.push('', 'Not copied or not matching:', ...problems);
  lines.push('', ...describeDraftLayer(draftLayer), '', ...describeRuns(runs), '');

  const events = report.sessions.reduce((sum, session) => sum + session.written.events, 0);
  const verified = report.sessions.filter((session) => session.verification?.differences.length === 0).length;
  const runsCopied = runs.runs.some((run) => run.written > 0 || run.status === 'copied');
  if (report.nothingCopied && draftLayer.report.nothingCopied && !runsCopied)
    lines.push(
      `Nothing new to copy: the target already holds all of it. ${verified} of ${report.sessions.length} sessions verified.`,
    );
  else
    lines.push(
      `Copied ${events} events of ${report.sessions.filter((session) => session.status === 'copied' || session.status === 'continued').length} sessions; ${verified} of ${report.sessions.length} sessions verified.`,
    );
  return `${lines.join('\n')}\n`;
}

/** The durable runs' part of the summary: counts per outcome, and each run not copied or not matching. */
function describeRuns({ runs }: RunMigrationReport): string[] {
  const count = (status: string) => runs.filter((run) => run.status === status).length;
  const entries = runs.reduce((sum, run) => sum + run.written, 0);
  const lines = [
    `${runs.length} durable run${runs.length === 1 ? '' : 's'}: ${count('copied')} copied, ${count('continued')} continued, ${count('unchanged')} unchanged, ${count('conflict')} conflicts` +
      (count('failed') > 0 ? `, ${count('failed')} failed` : '') +
      ` (${entries} journal entries written)`,
  ];
  const problems = runs
    .filter((run) => run.reason !== undefined || !run.verified)
    .map(
      (run) => `  run ${run.runId}: ${run.status}: ${run.reason ?? "the target's copy does not match the source's"}`,
    );
  if (problems.length > 0) lines.push('', 'Runs not copied or not matching:', ...problems);
  return lines;
}

/** The draft layer's part of the summary: one line per project, counts per kind, and what was not copied or does not match. */
function describeDraftLayer({ home, report }: DraftLayerMigration): string[] {
  const lines: string[] = [];
  const header = ['project', 'home', 'tasks', 'drafts', 'active', 'roles', 'sha-256', 'verified'];
  const rows = report.projects.map((project) => [
    project.project,
    project.home ? 'yes' : '',
    String(project.source.tasks),
    String(project.source.drafts),
    String(project.source.activeDrafts),
    String(project.source.roles),
    project.source.sha256.slice(0, SHORT_HASH),
    project.differences.length === 0 ? 'ok' : 'MISMATCH',
  ]);
  if (rows.length === 0) lines.push(`The source holds no projects (drafts, tasks, role files); home project: ${home}.`);
  else lines.push(...table([header, ...rows], new Set([2, 3, 4, 5])));
  const count = (kind: string, status: string) =>
    report.records.filter((record) => record.kind === kind && record.status === status).length;
  for (const kind of ['project', 'task', 'draft', 'role'] as const) {
    const total = report.records.filter((record) => record.kind === kind).length;
    const noun = kind === 'role' ? 'role file' : kind === 'task' ? 'project task' : kind;
    lines.push(
      `${total} ${noun}${total === 1 ? '' : 's'}: ${count(kind, 'copied')} copied, ${count(kind, 'unchanged')} unchanged, ${count(kind, 'conflict')} conflicts` +
        (count(kind, 'failed') > 0 ? `, ${count(kind, 'failed')} not readable` : ''),
    );
  }
  const problems: string[] = [];
  for (const record of report.records)
    if (record.reason !== undefined) problems.push(`  ${record.kind} ${record.id}: ${record.status}: ${record.reason}`);
  for (const project of report.projects)
    for (const difference of project.differences) problems.push(`  project ${project.project}: ${difference}`);
  if (problems.length > 0) lines.push('', 'Draft layer not copied or not matching:', ...problems);
  return lines;
}

function table(rows: string[][], numeric = new Set([2, 3, 4, 5])): string[] {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) =>
    row
      .map((cell, column) => (numeric.has(column) ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!)))
      .join('  ')
      .trimEnd(),
  );
}
