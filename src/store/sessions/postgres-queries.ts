/**
 * Every statement the PostgreSQL store runs, qualified by its (already quoted) schema. Each one is a
 * single statement, so outside an explicit transaction it is its own transaction: one round trip.
 */
export function queriesFor(schema: string) {
  const table = (name: string) => `${schema}.${name}`;
  const sessions = table('sessions');
  const logs = table('session_logs');
  const events = table('events');
  const groups = table('append_groups');
  const checkpoints = table('checkpoints');
  return {
    /**
     * Group ids older than `$1` ms: a retry that could still need one ended long before (see
     * pruneAppendGroups). Only groups already indexed for search: the others are how the search
     * index finds what is left to index (migration 8).
     */
    pruneAppendGroups: `DELETE FROM ${groups} WHERE indexed AND committed_at < now() - make_interval(secs => $1::double precision / 1000)`,
    /** Creates a session and its log; `$10` is the log's last seq before its first event (a fork's fork point, else -1). */
    insertSession: `WITH created AS (
        INSERT INTO ${sessions} (session_id, record, status, backend_type, agent_type, scope_kind, feature_id, task_id, task_state)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
        ON CONFLICT (session_id) DO NOTHING
        RETURNING session_id
      )
      INSERT INTO ${logs} (session_id, last_seq) SELECT session_id, $10 FROM created RETURNING session_id`,
    selectSession: `SELECT record FROM ${sessions} WHERE session_id = $1`,
    selectSessionForUpdate: `SELECT record FROM ${sessions} WHERE session_id = $1 FOR NO KEY UPDATE`,
    /** Replaces a record, and tells the schema's channel (`$10`) that `$11` (the writer's origin) changed it, at COMMIT. */
    updateSession: `WITH updated AS (
        UPDATE ${sessions}
        SET record = $2, status = $3, backend_type = $4, agent_type = $5, scope_kind = $6, feature_id = $7, task_id = $8, task_state = $9
        WHERE session_id = $1
        RETURNING session_id
      )
      SELECT pg_notify($10, $11 || ' ' || session_id) FROM updated`,
    /** A page of sessions after `$1` in id order; the filter clauses are appended from `$3` on. */
    listSessions: (filters: readonly string[]) =>
      // Key and order share the column's collation, so the pages meet exactly (and the primary key serves both).
      `SELECT session_id, record FROM ${sessions}
       WHERE session_id > $1 ${filters.map((clause) => `AND ${clause}`).join(' ')}
       ORDER BY session_id LIMIT $2`,
    /**
     * A page in listing order after the position `$1, $2, $3` (pinned, last activity, id; none for the
     * first page: `$4` false), `$5` rows; the filter clauses are appended from `$6` on. Served by
     * sessions_by_activity, read in order and stopped at the limit.
     */
    listSessionPage: (filters: readonly string[]) =>
      `SELECT session_id, record FROM ${sessions}
       WHERE (NOT $4 OR (pinned, last_activity, session_id COLLATE "C") < ($1::boolean, $2::bigint, $3::text COLLATE "C"))
       ${filters.map((clause) => `AND ${clause}`).join(' ')}
       ORDER BY pinned DESC, last_activity DESC, session_id COLLATE "C" DESC LIMIT $5`,
    /** The newest messages holding every word of `$1` (words already read as the search reads them), at most `$2`. */
    searchMessages: `SELECT session_id, seq::float8 AS seq, block_id, conversation_id, role, at::float8 AS at, content
      FROM ${table('session_messages')}
      WHERE words @@ plainto_tsquery('simple', ${schema}.search_words($1))
      ORDER BY message_id DESC LIMIT $2`,
    /**
     * Indexes the messages appended since their session's search position, for at most `$1`
     * sessions after id `$2` (null: from the first), of the groups not yet indexed, or of every
     * session when `$3` (a sweep); returns how many it added and the last id it took when more may
     * be pending (null when none is): run it again from there (migration 8).
     */
    indexPendingMessages: `SELECT added::float8 AS added, last_id FROM ${schema}.index_pending_messages($1, $2, $3)`,
    lastSeq: `SELECT last_seq::float8 FROM ${logs} WHERE session_id = $1`,

    /**
     * Group commit: the appends of many sessions in one statement. The sessions' `session_logs` rows
     * are locked in id order (no deadlock between two processes), each `last_seq` is bumped by the
     * events it gets, the events are inserted numbered from the old `last_seq`, and the group's id
     * is recorded with where each session's events start. Returns one row, `placed`: each session
     * found and its first new seq, `<id> <seq>` pairs joined by spaces (ids hold no space), or null
     * when none was found; one string for the client to split, not a row per session to parse. A
     * session not in it does not exist and got nothing. A group id already present (an
     * earlier attempt did commit) fails the whole statement with a unique violation on
     * `append_groups_pkey`, so nothing is stored twice.
     *
     * $1 session ids, $2 events per session, $3 group id; $4–$5 per event: session id, offset among
     * the session's events in this group; $6 the events' JSON bodies joined by newlines (JSON text
     * holds none of its own: one string to send, not an array literal whose every element the
     * client escapes); $7 the schema's NOTIFY channel and $8 the writer's origin: each session's
     * first new seq is announced there, delivered at COMMIT.
     */
    appendGroup: `WITH wanted AS (
        SELECT * FROM unnest($1::text[], $2::int[]) AS w(session_id, n)
      ), locked AS (
        SELECT s.session_id, s.last_seq FROM ${logs} s
        WHERE s.session_id = ANY($1::text[])
        ORDER BY s.session_id
        FOR NO KEY UPDATE
      ), bumped AS (
        -- The scalar subquery runs once, before the update scans: the rows are locked in id order first.
        UPDATE ${logs} s SET last_seq = s.last_seq + w.n
        FROM wanted w
        WHERE s.session_id = w.session_id AND (SELECT count(*) FROM locked) > 0
        RETURNING s.session_id, s.last_seq - w.n AS base
      ), new_group AS (
        INSERT INTO ${groups} (group_id, session_ids, first_seqs)
        SELECT $3::uuid, coalesce(array_agg(session_id), '{}'), coalesce(array_agg(base + 1), '{}') FROM bumped
      ), new_events AS (
        INSERT INTO ${events} (session_id, seq, body)
        SELECT e.session_id, bumped.base + 1 + e.event_offset, e.body
        FROM unnest($4::text[], $5::int[], string_to_array($6::text, E'\n')) AS e(session_id, event_offset, body)
        JOIN bumped USING (session_id)
      ), announced AS MATERIALIZED (
        SELECT session_id, base + 1 AS first_seq, pg_notify($7, $8 || ' ' || session_id || ' ' || (base + 1)) FROM bumped
      )
      SELECT string_agg(session_id || ' ' || first_seq, ' ') AS placed FROM announced`,
    /** Where an earlier attempt of this group put each session's events (after a commit whose answer was lost). */
    committedGroup: `SELECT unnest(session_ids) AS session_id, unnest(first_seqs)::float8 AS first_seq FROM ${groups} WHERE group_id = $1`,
    readEvents: `SELECT seq::float8 AS seq, body FROM ${events}
      WHERE session_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4`,

    newestCheckpointVersion: `SELECT coalesce((SELECT max(version) FROM ${checkpoints} c WHERE c.session_id = s.session_id), 0) AS newest
      FROM ${sessions} s WHERE s.session_id = $1`,
    insertCheckpoint: `INSERT INTO ${checkpoints} (session_id, version, body) VALUES ($1, $2, $3)
      ON CONFLICT (session_id, version) DO NOTHING RETURNING version`,
    newestCheckpoint: `SELECT c.body FROM ${sessions} s
      LEFT JOIN LATERAL (SELECT body FROM ${checkpoints} WHERE session_id = s.session_id ORDER BY version DESC LIMIT 1) c ON true
      WHERE s.session_id = $1`,
    checkpointVersion: `SELECT c.body FROM ${sessions} s
      LEFT JOIN ${checkpoints} c ON c.session_id = s.session_id AND c.version = $2
      WHERE s.session_id = $1`,
    allCheckpoints: `SELECT c.body FROM ${sessions} s
      LEFT JOIN ${checkpoints} c ON c.session_id = s.session_id
      WHERE s.session_id = $1 ORDER BY c.version`,

    /** Upsert and read of a per-session document table (context, agent description). */
    putDocument: (name: 'context_documents' | 'agent_descriptions') =>
      `INSERT INTO ${table(name)} (session_id, body) VALUES ($1, $2)
       ON CONFLICT (session_id) DO UPDATE SET body = EXCLUDED.body`,
    getDocument: (name: 'context_documents' | 'agent_descriptions') =>
      `SELECT d.body FROM ${sessions} s LEFT JOIN ${table(name)} d ON d.session_id = s.session_id WHERE s.session_id = $1`,

    putTranscript: `INSERT INTO ${table('transcripts')} (session_id, name, content) VALUES ($1, $2, $3)
      ON CONFLICT (session_id, name) DO UPDATE SET content = EXCLUDED.content`,
    getTranscript: `SELECT t.content FROM ${sessions} s
      LEFT JOIN ${table('transcripts')} t ON t.session_id = s.session_id AND t.name = $2
      WHERE s.session_id = $1`,
    listTranscripts: `SELECT t.name FROM ${sessions} s
      LEFT JOIN ${table('transcripts')} t ON t.session_id = s.session_id
      WHERE s.session_id = $1 ORDER BY t.name COLLATE "C"`,

    putFeature: `INSERT INTO ${table('features')} (feature_id, body) VALUES ($1, $2)
      ON CONFLICT (feature_id) DO UPDATE SET body = EXCLUDED.body`,
    getFeature: `SELECT body FROM ${table('features')} WHERE feature_id = $1`,
    listFeatures: `SELECT body FROM ${table('features')} ORDER BY feature_id COLLATE "C"`,
    putFeatureTask: `INSERT INTO ${table('tasks')} (feature_id, task_id, body) VALUES ($1, $2, $3)
      ON CONFLICT (feature_id, task_id) DO UPDATE SET body = EXCLUDED.body`,
    getFeatureTask: `SELECT body FROM ${table('tasks')} WHERE feature_id = $1 AND task_id = $2`,
    listFeatureTasks: `SELECT body FROM ${table('tasks')} WHERE $1::text IS NULL OR feature_id = $1
      ORDER BY feature_id COLLATE "C", task_id COLLATE "C"`,
  };
}

export type Queries = ReturnType<typeof queriesFor>;
