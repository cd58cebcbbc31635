import type { Command } from 'commander';
import { ValidationError } from '../../conversation/index.js';
import { DEFAULT_POSTGRES_SCHEMA, migrateStore, type MigrationReport, type SessionMigration, type SessionStore } from '../../store/index.js';
import { migrateDraftLayer, type DraftLayerMigration } from '../draft-layer-migration.js';
import { describeLocation, openSourceStore, openTargetStore, parseStoreLocation, sameLocation } from '../store-location.js';

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
    .description('Copy sessions (logs, checkpoints, transcripts), features, tasks and the draft layer (projects, tasks, drafts, role files) from one store to another, and verify the copy')
    .option('--from <store>', 'the store to copy from: a Parley data folder or a postgres:// URL')
    .option('--to <store>', 'the store to copy into: a data folder (made when missing) or a postgres:// URL')
    .option('--from-schema <name>', 'PostgreSQL schema of --from', DEFAULT_POSTGRES_SCHEMA)
    .option('--to-schema <name>', 'PostgreSQL schema of --to', DEFAULT_POSTGRES_SCHEMA)
    .option('--batch-size <n>', 'events per durable append', '500')
    .option('--json', 'print the report as JSON')
    .action(async (flags: MigrateFlags) => {
      if (flags.from === undefined || flags.to === undefined) {
        throw new ValidationError(`${flags.from === undefined ? '--from' : '--to'} is missing: run parley migrate --from <data folder | postgres://…> --to <data folder | postgres://…>.`);
      }
      const batchSize = Number(flags.batchSize);
      if (!Number.isInteger(batchSize) || batchSize < 1) throw new ValidationError(`--batch-size ${JSON.stringify(flags.batchSize)} is not a whole number of at least 1.`);
      const from = parseStoreLocation(flags.from, '--from', flags.fromSchema);
      const to = parseStoreLocation(flags.to, '--to', flags.toSchema);
      if (sameLocation(from, to)) throw new ValidationError(`--from and --to are the same store (${describeLocation(from)}): give two different ones.`);

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
      try {
        report = await migrateStore(source, target, {
          batchSize,
          ...(progress ? { onSession: (_session: SessionMigration, index: number, total: number) => process.stderr.write(`\r\x1b[Kcopied ${index + 1} of ${total} sessions`) } : {}),
        });
        if (progress) process.stderr.write('\r\x1b[K');
        // While both session stores are open: a data folder's store.lock keeps this process its only writer.
        draftLayer = await migrateDraftLayer(from, to);
      } finally {
        await Promise.allSettled([source.close(), target.close()]);
      }
      if (flags.json) {
        process.stdout.write(`${JSON.stringify({ from: describeLocation(from), to: describeLocation(to), ...report, draftLayer }, null, 2)}\n`);
      } else {
        process.stdout.write(describe(describeLocation(from), describeLocation(to), report, draftLayer));
      }
      if (!report.ok || !draftLayer.report.ok) {
        process.stderr.write('parley migrate: the copy is incomplete or does not match the source (see the table above); nothing in the target was overwritten.\n');
        process.exitCode = 1;
      }
    });
}

const SHORT_HASH = 12;

function describe(from: string, to: string, report: MigrationReport, draftLayer: DraftLayerMigration): string {
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
    for (const difference of session.verification?.differences ?? []) problems.push(`  ${session.sessionId}: ${difference}`);
  }
  for (const record of report.records) {
    if (record.reason !== undefined) problems.push(`  ${record.kind} ${record.id}: ${record.status}: ${record.reason}`);
    else if (!record.verified) problems.push(`  ${record.kind} ${record.id}: the target's copy does not match the source's`);
  }

  const count = (kind: string, status: string) => report.records.filter((record) => record.kind === kind && record.status === status).length;
  for (const kind of ['feature', 'task']) {
    const total = report.records.filter((record) => record.kind === kind).length;
    lines.push(`${total} ${kind}${total === 1 ? '' : 's'}: ${count(kind, 'copied')} copied, ${count(kind, 'updated')} updated, ${count(kind, 'unchanged')} unchanged, ${count(kind, 'conflict')} conflicts`);
  }
  if (report.targetOnlySessions.length > 0) {
    lines.push(`The target also holds ${report.targetOnlySessions.length} session(s) the source does not; they were left alone.`);
  }
  if (problems.length > 0) lines.push('', 'Not copied or not matching:', ...problems);
  lines.push('', ...describeDraftLayer(draftLayer), '');

  const events = report.sessions.reduce((sum, session) => sum + session.written.events, 0);
  const verified = report.sessions.filter((session) => session.verification?.differences.length === 0).length;
  if (report.nothingCopied && draftLayer.report.nothingCopied) lines.push(`Nothing new to copy: the target already holds all of it. ${verified} of ${report.sessions.length} sessions verified.`);
  else lines.push(`Copied ${events} events of ${report.sessions.filter((session) => session.status === 'copied' || session.status === 'continued').length} sessions; ${verified} of ${report.sessions.length} sessions verified.`);
  return `${lines.join('\n')}\n`;
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
  const count = (kind: string, status: string) => report.records.filter((record) => record.kind === kind && record.status === status).length;
  for (const kind of ['project', 'task', 'draft', 'role'] as const) {
    const total = report.records.filter((record) => record.kind === kind).length;
    const noun = kind === 'role' ? 'role file' : kind === 'task' ? 'project task' : kind;
    lines.push(
      `${total} ${noun}${total === 1 ? '' : 's'}: ${count(kind, 'copied')} copied, ${count(kind, 'unchanged')} unchanged, ${count(kind, 'conflict')} conflicts` +
        (count(kind, 'failed') > 0 ? `, ${count(kind, 'failed')} not readable` : ''),
    );
  }
  const problems: string[] = [];
  for (const record of report.records) if (record.reason !== undefined) problems.push(`  ${record.kind} ${record.id}: ${record.status}: ${record.reason}`);
  for (const project of report.projects) for (const difference of project.differences) problems.push(`  project ${project.project}: ${difference}`);
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
