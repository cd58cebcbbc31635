import path from 'node:path';
import type { SessionRecord, SessionStore } from '../store/index.js';
import { SessionError } from './errors.js';
import { FileSnapshotError, FileSnapshots, type SnapshotHistory } from './file-snapshots/index.js';
import { activePath } from './history-path.js';
import { notFound } from './session-checks.js';
import type { FileRestorer } from './session-history.js';
import type { SessionManagerOptions } from './session-manager-types.js';

/** The manager's file snapshots, from its options: the project, a folder in the data folder, the history. */
export function openFileSnapshots(
  store: SessionStore,
  options: SessionManagerOptions,
  onRewindFinished: (sessionId: string, seq: number) => Promise<void>,
): FileSnapshots {
  const settings = options.fileSnapshots!;
  const folder = settings.folder ?? (options.dataDir ? path.join(options.dataDir, 'file-snapshots') : undefined);
  if (!options.projectRoot || !folder)
    throw new SessionError(
      'INVALID_INPUT',
      'fileSnapshots needs `projectRoot` (the working tree to snapshot) and a folder for the snapshots: `dataDir`, or `fileSnapshots.folder` when a `store` is given.',
      { fault: 'user' },
    );
  return new FileSnapshots({
    projectRoot: options.projectRoot,
    folder,
    history: settings.history ?? treeHistory(store),
    exclude: [...(options.dataDir ? [options.dataDir] : []), ...(settings.exclude ?? [])],
    ...(settings.maxAbandonedAgeMs !== undefined ? { maxAbandonedAgeMs: settings.maxAbandonedAgeMs } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    onRewindFinished,
  });
}

/** The snapshots' view of the history tree: the seqs that lead to a point, and the active branch. */
function treeHistory(store: SessionStore): SnapshotHistory {
  const recordOf = async (sessionId: string): Promise<SessionRecord> => {
    const record = await store.getSession(sessionId);
    if (!record) throw notFound(sessionId);
    return record;
  };
  return {
    async pathTo(sessionId, seq) {
      const record = await recordOf(sessionId);
      const lastSeq = await store.lastSeq(sessionId);
      if (!Number.isInteger(seq) || seq < -1 || seq > lastSeq)
        throw new FileSnapshotError(
          'SNAPSHOT_NOT_FOUND',
          `Seq ${seq} is not in session ${sessionId} (its log ends at seq ${lastSeq}): pick a point in it. Nothing was changed.`,
          { fault: 'user', data: { sessionId, seq } },
        );
      return (await activePath(store, record, { tip: seq })).ranges;
    },
    async activePath(sessionId) {
      return (await activePath(store, await recordOf(sessionId))).ranges;
    },
  };
}

/** A rewind's file restore, done by the manager's own snapshots. */
export function restorerOf(snapshots: FileSnapshots): FileRestorer {
  return {
    async restoreFiles({ sessionId, seq, overwrite, rewind }) {
      const result = await snapshots.restore(sessionId, seq, { overwrite, rewind: rewind === true });
      return { restored: result.changed };
    },
    settleRewind: () => snapshots.settleRewind(),
  };
}
