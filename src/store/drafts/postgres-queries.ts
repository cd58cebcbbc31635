/**
 * Every statement the PostgreSQL DraftStore runs, qualified by its (already quoted) schema. Each is
 * one statement, so it is its own transaction: the checks a write depends on are in the statement
 * that writes (or are the database's own constraints), never in a read before it.
 */
export function draftQueriesFor(schema: string) {
  const projects = `${schema}.projects`;
  const tasks = `${schema}.project_tasks`;
  const drafts = `${schema}.drafts`;
  const leases = `${schema}.draft_leases`;
  const roles = `${schema}.role_files`;
  /** A task's current draft: its newest row. */
  const currentDraft = `SELECT draft_id, session_id, status, channel_id, body FROM ${drafts}
    WHERE project = $1 AND task_slug = $2 ORDER BY draft_id DESC LIMIT 1`;
  return {
    /** The home project is registered when a store opens for it (a server that finds it there keeps it). */
    registerHome: `INSERT INTO ${projects} (name, path, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING`,
    listProjects: `SELECT name, path, description, created_at FROM ${projects} ORDER BY position`,
    getProject: `SELECT name, path, description, created_at FROM ${projects} WHERE name = $1`,
    insertProject: `INSERT INTO ${projects} (name, path, description, created_at) VALUES ($1, $2, $3, $4)`,

    listTasks: `SELECT body FROM ${tasks} WHERE project = $1 ORDER BY slug COLLATE "C"`,
    getTask: `SELECT body FROM ${tasks} WHERE project = $1 AND slug = $2`,
    insertTask: `INSERT INTO ${tasks} (project, slug, body) VALUES ($1, $2, $3)`,

    currentDraft,
    activeDraftOfChannel: `SELECT body FROM ${drafts} WHERE channel_id = $1 AND status = 'active'`,
    activeDrafts: `SELECT draft_id, body FROM ${drafts} WHERE status = 'active' AND ($1::text IS NULL OR project = $1) ORDER BY draft_id`,
    closedDrafts: `SELECT body FROM ${drafts} WHERE project = $1 AND task_slug = $2 AND status = 'closed' ORDER BY draft_id`,
    /**
     * The claim: a new active row, only for a task that exists (no row back: the task or its project
     * is missing). A channel or task already held fails on one of the partial unique indexes.
     */
    claimDraft: `INSERT INTO ${drafts} (session_id, project, task_slug, channel_id, status, body)
      SELECT $1, project, slug, $4, 'active', $5 FROM ${tasks} WHERE project = $2 AND slug = $3
      RETURNING draft_id`,
    /** Who holds the channel or the task of a refused claim. */
    holders: `SELECT body FROM ${drafts} WHERE status = 'active' AND (channel_id = $1 OR (project = $2 AND task_slug = $3))`,
    /**
     * An update ($6 = 'active') or a release ($6 = 'closed') of the task's current draft, if it is
     * the one named (session and channel) and, for an update, still active. A release drops the
     * draft's lease in the same statement. No row back: not the current draft (the caller reads why).
     */
    saveDraft: `WITH current AS (${currentDraft} FOR UPDATE),
      saved AS (
        UPDATE ${drafts} d SET body = $5, status = $6 FROM current c
        WHERE d.draft_id = c.draft_id AND c.session_id = $3 AND c.channel_id = $4 AND (c.status = 'active' OR $6 = 'closed')
        RETURNING d.draft_id
      ),
      dropped AS (DELETE FROM ${leases} WHERE $6 = 'closed' AND session_id = $3 AND EXISTS (SELECT 1 FROM saved))
      SELECT draft_id FROM saved`,

    /**
     * The lease, granted when free, expired (by the database's clock) or already the caller's, and
     * only for an active draft. Of inserts racing, one wins; the others wait for it and then find a
     * live lease in the conflict's WHERE. `previous_owner` keeps whom the lease was taken from.
     */
    acquireLease: `INSERT INTO ${leases} AS l (session_id, owner, expires_at)
      SELECT $1, $2, now() + $3::int * interval '1 millisecond'
      WHERE EXISTS (SELECT 1 FROM ${drafts} WHERE session_id = $1 AND status = 'active')
      ON CONFLICT (session_id) DO UPDATE
        SET previous_owner = l.owner, owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
        WHERE l.owner = EXCLUDED.owner OR l.expires_at <= now()
      RETURNING owner, previous_owner, expires_at`,
    /** Why a lease was not granted: no active draft, or its live holder. */
    leaseHolder: `SELECT EXISTS (SELECT 1 FROM ${drafts} WHERE session_id = $1 AND status = 'active') AS active,
        l.owner, l.expires_at, l.expires_at > now() AS live
      FROM (SELECT 1) one LEFT JOIN ${leases} l ON l.session_id = $1`,
    renewLease: `UPDATE ${leases} SET expires_at = now() + $3::int * interval '1 millisecond'
      WHERE session_id = $1 AND owner = $2 RETURNING owner, expires_at`,
    releaseLease: `UPDATE ${leases} SET expires_at = least(expires_at, now()) WHERE session_id = $1 AND owner = $2`,

    listRoles: `SELECT role, text FROM ${roles} WHERE project = $1 ORDER BY role COLLATE "C"`,
    getRole: `SELECT text FROM ${roles} WHERE project = $1 AND role = $2`,
    putRole: `INSERT INTO ${roles} (project, role, text) VALUES ($1, $2, $3)
      ON CONFLICT (project, role) DO UPDATE SET text = EXCLUDED.text`,
  };
}

export type DraftQueries = ReturnType<typeof draftQueriesFor>;
