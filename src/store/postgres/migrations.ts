/**
 * Parley's PostgreSQL schema as an ordered list of migrations. Each is
 * applied once, in order, inside the setup transaction, and recorded in `migrations` with its
 * number: migration N is `MIGRATIONS[N - 1]`. Never edit one that has shipped; append a new one.
 *
 * The statements are unqualified: setup runs them with `search_path` set to Parley's schema.
 * Records are kept as their whole JSON text (a new optional field needs no migration); the columns
 * beside them are what queries filter and order by.
 */
export interface Migration {
  description: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    description: 'sessions, their event logs, checkpoints, documents, transcripts, features and tasks',
    sql: `
      CREATE TABLE sessions (
        session_id text PRIMARY KEY,
        record text NOT NULL,
        status text NOT NULL,
        backend_type text NOT NULL,
        agent_type text NOT NULL,
        scope_kind text NOT NULL,
        feature_id text,
        task_id text,
        task_state text
      );
      CREATE INDEX sessions_by_feature ON sessions (feature_id) WHERE feature_id IS NOT NULL;

      -- The newest seq of each session's log, -1 when empty: bumped in the statement that inserts
      -- the events, under this row's lock, so seqs stay consecutive across processes. A narrow row of
      -- its own, so an append rewrites a few bytes, not the session record, and does not wait on an
      -- update of the record.
      CREATE TABLE session_logs (
        session_id text PRIMARY KEY REFERENCES sessions,
        last_seq bigint NOT NULL DEFAULT -1
      );

      -- No foreign key on events and append_groups: the one statement that inserts them also locks
      -- and updates the sessions' session_logs rows, so a row without its session cannot be written,
      -- and the append path skips a trigger per row.
      CREATE TABLE events (
        session_id text NOT NULL,
        seq bigint NOT NULL CHECK (seq >= 0),
        -- The event's JSON without sessionId and seq, which are the columns beside it.
        body text NOT NULL,
        PRIMARY KEY (session_id, seq)
      );

      -- One row per committed group of appends, keyed by an id the client made before sending it:
      -- a retry after a lost connection finds its earlier commit here (with where each session's
      -- events landed) instead of storing the events twice.
      CREATE TABLE append_groups (
        group_id uuid PRIMARY KEY,
        session_ids text[] NOT NULL,
        -- Per session: the seq its first event in this group got.
        first_seqs bigint[] NOT NULL,
        committed_at timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE checkpoints (
        session_id text NOT NULL REFERENCES sessions,
        version integer NOT NULL CHECK (version > 0),
        body text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (session_id, version)
      );

      CREATE TABLE context_documents (
        session_id text PRIMARY KEY REFERENCES sessions,
        body text NOT NULL
      );

      CREATE TABLE agent_descriptions (
        session_id text PRIMARY KEY REFERENCES sessions,
        body text NOT NULL
      );

      -- Raw native transcripts, byte for byte (bytea: a transcript may hold any character, NUL too).
      CREATE TABLE transcripts (
        session_id text NOT NULL REFERENCES sessions,
        name text NOT NULL,
        content bytea NOT NULL,
        PRIMARY KEY (session_id, name)
      );

      CREATE TABLE features (
        feature_id text PRIMARY KEY,
        body text NOT NULL
      );

      CREATE TABLE tasks (
        feature_id text NOT NULL,
        task_id text NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (feature_id, task_id)
      );
    `,
  },
  {
    description:
      'the draft layer: projects, their tasks, drafts (one active per channel and per task), draft leases, role files',
    sql: `
      -- Projects of the draft layer (today's project.json and projects.json). position is the creation
      -- order listProjects keeps. path NULL: created without one, so each server places it under its
      -- own home data folder (<home dataDir>/projects/<name>), as the file store does.
      CREATE TABLE projects (
        name text PRIMARY KEY,
        position bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
        path text,
        description text,
        -- ISO 8601 text, exactly as given, so a record reads back equal.
        created_at text NOT NULL
      );

      -- task.json; named apart from the session store's features' tasks.
      CREATE TABLE project_tasks (
        project text NOT NULL REFERENCES projects,
        slug text NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (project, slug)
      );

      -- Every draft of every task, active and closed (draft.json and drafts/<id>.json). A task's current
      -- draft is its newest row. The two partial unique indexes are the claim: at most one active draft
      -- per channel, across every project, and one per task, whoever is racing.
      CREATE TABLE drafts (
        draft_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        session_id text NOT NULL,
        project text NOT NULL,
        task_slug text NOT NULL,
        channel_id text NOT NULL,
        status text NOT NULL CHECK (status IN ('active', 'closed')),
        body text NOT NULL,
        FOREIGN KEY (project, task_slug) REFERENCES project_tasks
      );
      CREATE UNIQUE INDEX drafts_one_active_per_channel ON drafts (channel_id) WHERE status = 'active';
      CREATE UNIQUE INDEX drafts_one_active_per_task ON drafts (project, task_slug) WHERE status = 'active';
      CREATE INDEX drafts_by_task ON drafts (project, task_slug, draft_id);
      CREATE INDEX drafts_by_session ON drafts (session_id);

      -- Which server runs an active draft, until when (by the database's clock). A released lease keeps
      -- its owner with expires_at = now(); previous_owner is who held it before the last grant.
      CREATE TABLE draft_leases (
        session_id text PRIMARY KEY,
        owner text NOT NULL,
        previous_owner text,
        expires_at timestamptz NOT NULL
      );

      -- Role files (<role>.md) as text, per project.
      CREATE TABLE role_files (
        project text NOT NULL REFERENCES projects,
        role text NOT NULL,
        text text NOT NULL,
        PRIMARY KEY (project, role)
      );
    `,
  },
  {
    description: 'durable harness runs: their records and append-only journals',
    sql: `
      -- A run's record as its JSON text; the columns beside it are what listRuns filters and orders by.
      CREATE TABLE runs (
        run_id text PRIMARY KEY,
        project text,
        status text NOT NULL,
        created_at text NOT NULL,
        record text NOT NULL
      );
      CREATE INDEX runs_by_status ON runs (status);

      -- The newest seq of each run's journal, -1 when empty: bumped in the statement that inserts the
      -- entries, under this row's lock, so seqs stay consecutive across processes (as session_logs).
      CREATE TABLE run_journals (
        run_id text PRIMARY KEY REFERENCES runs,
        last_seq bigint NOT NULL DEFAULT -1
      );

      -- append_id: made by the client before sending, so a retry after a lost connection finds its
      -- earlier commit instead of journaling the entries twice.
      CREATE TABLE run_journal_entries (
        run_id text NOT NULL,
        seq bigint NOT NULL CHECK (seq >= 0),
        kind text NOT NULL,
        at text NOT NULL,
        data text NOT NULL,
        append_id uuid NOT NULL,
        PRIMARY KEY (run_id, seq)
      );
      CREATE INDEX run_journal_entries_by_append ON run_journal_entries (run_id, append_id);
    `,
  },
  {
    description: 'sessions listed by last activity through an index; full-text search over every message',
    sql: `
      -- The listing order (pinned first, then the most recently active) and the tag filter, read
      -- from the record itself, so every statement that writes a record keeps them true.
      ALTER TABLE sessions
        ADD COLUMN pinned boolean GENERATED ALWAYS AS (coalesce((record::jsonb ->> 'pinned')::boolean, false)) STORED,
        ADD COLUMN last_activity bigint GENERATED ALWAYS AS (
          coalesce((record::jsonb ->> 'lastActivity')::bigint, (record::jsonb ->> 'updatedAt')::bigint, 0)) STORED,
        ADD COLUMN tags jsonb GENERATED ALWAYS AS (coalesce(record::jsonb -> 'tags', '[]'::jsonb)) STORED;
      CREATE INDEX sessions_by_activity ON sessions (pinned DESC, last_activity DESC, session_id COLLATE "C" DESC);

      -- Words as the search reads them: NFKC, lower case in every script, ASCII punctuation a space
      -- (so an address or a path is its words, as on the file store). The database's own lower()
      -- lowers only ASCII under the C locale, so ICU's root collation is used where it exists.
      DO $$
      BEGIN
        IF EXISTS (SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu') AND getdatabaseencoding() = 'UTF8' THEN
          CREATE FUNCTION search_words(value text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
            AS $words$ SELECT regexp_replace(lower(normalize(value, NFKC) COLLATE "und-x-icu"), '[!-/:-@[-\`{-~]+', ' ', 'g') $words$;
        ELSE
          CREATE FUNCTION search_words(value text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
            AS $words$ SELECT regexp_replace(lower(value), '[!-/:-@[-\`{-~]+', ' ', 'g') $words$;
        END IF;
      END $$;

      -- Every user and assistant message, as the event that completed it; message_id is append order.
      -- 'simple' splits and keeps words in any script (no stemming, no stop words). The text is
      -- cut at 200,000 characters for the vector only: a tsvector is at most 1 MB.
      CREATE TABLE session_messages (
        message_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        session_id text NOT NULL,
        seq bigint NOT NULL,
        block_id text NOT NULL,
        conversation_id text NOT NULL,
        role text NOT NULL,
        at bigint NOT NULL,
        content text NOT NULL,
        words tsvector GENERATED ALWAYS AS (to_tsvector('simple', search_words(left(content, 200000)))) STORED,
        UNIQUE (session_id, seq)
      );
      CREATE INDEX session_messages_words ON session_messages USING gin (words);

      -- Kept as events are appended, in the appending statement's transaction: one run per
      -- statement over the rows it inserted. Indexing can never fail an append: a statement whose
      -- messages cannot be indexed is indexed row by row, and a row that still fails is left out
      -- with a warning in the server's log (the log stays the truth).
      -- It runs under the appending connection's search_path: it keeps the schema it was made in.
      CREATE FUNCTION index_messages() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
      DECLARE
        row record;
      BEGIN
        BEGIN
          INSERT INTO session_messages (session_id, seq, block_id, conversation_id, role, at, content)
          SELECT m.session_id, m.seq, m.body #>> '{block,id}', m.body ->> 'conversationId',
                 CASE m.body #>> '{block,type}' WHEN 'user_message' THEN 'user' ELSE 'assistant' END,
                 coalesce((m.body ->> 'at')::bigint, 0), m.body #>> '{block,content}'
          FROM (SELECT i.session_id, i.seq, replace(i.body, '\\u0000', '')::jsonb AS body
                FROM inserted i WHERE strpos(i.body, '"block_complete"') > 0) m
          WHERE m.body ->> 'type' = 'block_complete'
            AND m.body #>> '{block,type}' IN ('user_message', 'assistant_text')
            AND coalesce(m.body #>> '{block,content}', '') <> ''
          ON CONFLICT (session_id, seq) DO NOTHING;
        EXCEPTION WHEN others THEN
          FOR row IN SELECT i.session_id, i.seq, i.body FROM inserted i WHERE strpos(i.body, '"block_complete"') > 0 LOOP
            BEGIN
              INSERT INTO session_messages (session_id, seq, block_id, conversation_id, role, at, content)
              SELECT row.session_id, row.seq, b #>> '{block,id}', b ->> 'conversationId',
                     CASE b #>> '{block,type}' WHEN 'user_message' THEN 'user' ELSE 'assistant' END,
                     coalesce((b ->> 'at')::bigint, 0), b #>> '{block,content}'
              FROM (SELECT replace(row.body, '\\u0000', '')::jsonb AS b) parsed
              WHERE b #>> '{block,type}' IN ('user_message', 'assistant_text') AND coalesce(b #>> '{block,content}', '') <> ''
              ON CONFLICT (session_id, seq) DO NOTHING;
            EXCEPTION WHEN others THEN
              RAISE WARNING 'parley: message % of session % left out of the search index: %', row.seq, row.session_id, SQLERRM;
            END;
          END LOOP;
        END;
        RETURN NULL;
      END $$;
      CREATE TRIGGER events_index_messages AFTER INSERT ON events
        REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION index_messages();

      -- The messages already stored.
      INSERT INTO session_messages (session_id, seq, block_id, conversation_id, role, at, content)
      SELECT m.session_id, m.seq, m.body #>> '{block,id}', m.body ->> 'conversationId',
             CASE m.body #>> '{block,type}' WHEN 'user_message' THEN 'user' ELSE 'assistant' END,
             coalesce((m.body ->> 'at')::bigint, 0), m.body #>> '{block,content}'
      FROM (SELECT e.session_id, e.seq, replace(e.body, '\\u0000', '')::jsonb AS body
            FROM events e WHERE strpos(e.body, '"block_complete"') > 0 ORDER BY e.session_id, e.seq) m
      WHERE m.body ->> 'type' = 'block_complete'
        AND m.body #>> '{block,type}' IN ('user_message', 'assistant_text')
        AND coalesce(m.body #>> '{block,content}', '') <> '';
    `,
  },
  {
    description: 'schedules and their firings',
    sql: `
      -- A schedule's record as its JSON text. revision is bumped by every write, and a write names
      -- the revision it read: of two servers claiming one firing, the second finds it moved on.
      CREATE TABLE schedules (
        schedule_id text PRIMARY KEY,
        revision bigint NOT NULL,
        created_at text NOT NULL,
        record text NOT NULL
      );

      -- One row per firing, keyed by its due time: inserted by the statement that advances the
      -- schedule, so a firing and the claim on it commit together, and never twice.
      CREATE TABLE schedule_firings (
        schedule_id text NOT NULL REFERENCES schedules ON DELETE CASCADE,
        fire_at text NOT NULL,
        record text NOT NULL,
        PRIMARY KEY (schedule_id, fire_at)
      );
    `,
  },
  {
    description: 'messages indexed for search after their append commits, not inside it',
    sql: `
      -- The trigger of migration 4 indexed every message inside its append's transaction: with 50
      -- sessions appending at once that made each append several times slower than the bare insert.
      -- Messages are now indexed just after their append commits, by index_pending_messages(), which
      -- every server runs shortly after its commits and before each search (so a search still finds
      -- every acknowledged message). DROP TRIGGER holds appends off the events table until this
      -- commits, so every event already stored was indexed by the trigger.
      DROP TRIGGER events_index_messages ON events;
      DROP FUNCTION index_messages();

      -- How far each session's log is indexed: every message at or below indexed_seq is in
      -- session_messages (or was left out with a warning). A session without a row: none is.
      CREATE TABLE search_positions (
        session_id text PRIMARY KEY,
        indexed_seq bigint NOT NULL
      );
      INSERT INTO search_positions (session_id, indexed_seq) SELECT session_id, last_seq FROM session_logs;

      -- Indexes the messages of every session whose log is ahead of its search position; returns how
      -- many it added. Any number of servers may run it at once: each session is indexed under a
      -- transaction-scoped advisory lock, taken in session-id order (so two runs never deadlock), and
      -- its range is read after the lock (so a run that waited does not index again what the other
      -- did); the unique (session_id, seq) and ON CONFLICT DO NOTHING keep a row from ever doubling.
      -- The check of what is pending is its first statement: nothing pending costs one scan and no lock.
      -- Indexing never fails for a bad row: a batch that cannot be indexed is indexed row by row,
      -- and a row that still fails is left out with a warning in the server's log.
      CREATE FUNCTION index_pending_messages() RETURNS bigint LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
      DECLARE
        pending text[];
        id text;
        ids text[];
        afters bigint[];
        throughs bigint[];
        added bigint := 0;
        one bigint;
        row record;
      BEGIN
        pending := ARRAY(
          SELECT l.session_id FROM session_logs l LEFT JOIN search_positions p USING (session_id)
          WHERE l.last_seq > coalesce(p.indexed_seq, -1)
          ORDER BY l.session_id COLLATE "C");
        IF cardinality(pending) = 0 THEN
          RETURN 0;
        END IF;
        FOREACH id IN ARRAY pending LOOP
          PERFORM pg_advisory_xact_lock(hashtextextended('parley search ' || current_schema() || ' ' || id, 0));
        END LOOP;
        -- A statement of its own, so its snapshot sees what a run that held a lock before us committed.
        SELECT array_agg(l.session_id), array_agg(coalesce(p.indexed_seq, -1)), array_agg(l.last_seq)
          INTO ids, afters, throughs
        FROM unnest(pending) AS w(session_id)
        JOIN session_logs l USING (session_id)
        LEFT JOIN search_positions p USING (session_id)
        WHERE l.last_seq > coalesce(p.indexed_seq, -1);
        IF ids IS NULL THEN
          RETURN 0;
        END IF;
        BEGIN
          -- In the order they were appended, as near as the events tell: message_id orders the hits.
          INSERT INTO session_messages (session_id, seq, block_id, conversation_id, role, at, content)
          SELECT m.session_id, m.seq, m.body #>> '{block,id}', m.body ->> 'conversationId',
                 CASE m.body #>> '{block,type}' WHEN 'user_message' THEN 'user' ELSE 'assistant' END,
                 coalesce((m.body ->> 'at')::bigint, 0), m.body #>> '{block,content}'
          FROM (SELECT e.session_id, e.seq, replace(e.body, '\\u0000', '')::jsonb AS body
                FROM unnest(ids, afters, throughs) AS r(session_id, after_seq, through_seq)
                JOIN events e ON e.session_id = r.session_id AND e.seq > r.after_seq AND e.seq <= r.through_seq
                WHERE strpos(e.body, '"block_complete"') > 0) m
          WHERE m.body ->> 'type' = 'block_complete'
            AND m.body #>> '{block,type}' IN ('user_message', 'assistant_text')
            AND coalesce(m.body #>> '{block,content}', '') <> ''
          ORDER BY coalesce((m.body ->> 'at')::bigint, 0), m.session_id, m.seq
          ON CONFLICT (session_id, seq) DO NOTHING;
          GET DIAGNOSTICS added = ROW_COUNT;
        EXCEPTION WHEN others THEN
          added := 0;
          FOR row IN
            SELECT e.session_id, e.seq, e.body
            FROM unnest(ids, afters, throughs) AS r(session_id, after_seq, through_seq)
            JOIN events e ON e.session_id = r.session_id AND e.seq > r.after_seq AND e.seq <= r.through_seq
            WHERE strpos(e.body, '"block_complete"') > 0
            ORDER BY e.session_id, e.seq
          LOOP
            BEGIN
              INSERT INTO session_messages (session_id, seq, block_id, conversation_id, role, at, content)
              SELECT row.session_id, row.seq, b #>> '{block,id}', b ->> 'conversationId',
                     CASE b #>> '{block,type}' WHEN 'user_message' THEN 'user' ELSE 'assistant' END,
                     coalesce((b ->> 'at')::bigint, 0), b #>> '{block,content}'
              FROM (SELECT replace(row.body, '\\u0000', '')::jsonb AS b) parsed
              WHERE b ->> 'type' = 'block_complete'
                AND b #>> '{block,type}' IN ('user_message', 'assistant_text')
                AND coalesce(b #>> '{block,content}', '') <> ''
              ON CONFLICT (session_id, seq) DO NOTHING;
              GET DIAGNOSTICS one = ROW_COUNT;
              added := added + one;
            EXCEPTION WHEN others THEN
              RAISE WARNING 'parley: message % of session % left out of the search index: %', row.seq, row.session_id, SQLERRM;
            END;
          END LOOP;
        END;
        INSERT INTO search_positions (session_id, indexed_seq)
        SELECT * FROM unnest(ids, throughs)
        ON CONFLICT (session_id) DO UPDATE SET indexed_seq = greatest(search_positions.indexed_seq, EXCLUDED.indexed_seq);
        RETURN added;
      END $$;
    `,
  },
  {
    description: 'search words read at about half the CPU, the same words for every text',
    sql: `
      -- Indexing a message of 1 KB took about 176 µs of the server's CPU (its append about 20 µs),
      -- and search_words() was 79 µs of it, most of that NFKC normalization, which decomposes every
      -- character even when nothing changes. Text already in NFKC (all ASCII, most other text) is
      -- now kept as it is after the quick check, and ASCII is lowered byte by byte, as ICU lowers
      -- it: 144 µs. Any other text takes the path it took before, so every value's words are the
      -- same as before, and the vectors already stored still match the queries.
      DO $$
      BEGIN
        IF EXISTS (SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu') AND getdatabaseencoding() = 'UTF8' THEN
          CREATE OR REPLACE FUNCTION search_words(value text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
            AS $words$ SELECT regexp_replace(
              CASE WHEN octet_length(value) = length(value) THEN lower(value COLLATE "C") COLLATE "default"
                   ELSE lower((CASE WHEN value IS NFKC NORMALIZED THEN value ELSE normalize(value, NFKC) END) COLLATE "und-x-icu") COLLATE "default"
              END, '[!-/:-@[-\`{-~]+', ' ', 'g') $words$;
        END IF;
      END $$;
    `,
  },
  {
    description: 'search indexing in batches of sessions, and led by the groups not yet indexed',
    sql: `
      -- A run indexed every pending session in one transaction, holding an advisory lock for each:
      -- with more than a few thousand pending (a bulk load, a server that wrote while no indexer
      -- ran, a restored dump), it ran out of the server's lock table ("out of shared memory", see
      -- max_locks_per_transaction) and failed every time, and every search with it. A run now
      -- takes at most max_sessions pending sessions, the first after after_id in id order (locked
      -- in that order, so two runs never deadlock), and returns the last id it took when more may
      -- follow: the caller runs it again from there, each run a transaction of its own, until
      -- last_id is null.
      --
      -- And finding what is pending scanned every session's log and search position, 40 ms at
      -- 100,000 sessions, before every search and after every burst of appends. Every append
      -- commits a row in append_groups, so a run now starts from the groups not yet indexed (a
      -- partial index holds just those): their sessions are all that can be pending, unless rows
      -- were written into the tables by something other than a store. A sweep (sweep = true, as a
      -- store runs once when it opens) still checks every session. A group is marked indexed once
      -- every session in it is indexed past the group's first seq (marking is idempotent); only
      -- groups marked are ever pruned.
      ALTER TABLE append_groups ADD COLUMN indexed boolean NOT NULL DEFAULT false;
      CREATE INDEX append_groups_to_index ON append_groups (committed_at) WHERE NOT indexed;
      -- Marks the groups whose every session is indexed past the group's first seq there.
      CREATE FUNCTION mark_indexed_groups() RETURNS void LANGUAGE sql SET search_path FROM CURRENT AS $$
        UPDATE append_groups g SET indexed = true
        WHERE NOT g.indexed AND NOT EXISTS (
          SELECT 1 FROM unnest(g.session_ids, g.first_seqs) AS x(session_id, first_seq)
          LEFT JOIN search_positions p USING (session_id)
          WHERE coalesce(p.indexed_seq, -1) < x.first_seq)
      $$;
      DROP FUNCTION index_pending_messages();
      CREATE FUNCTION index_pending_messages(max_sessions integer, after_id text, sweep boolean, OUT added bigint, OUT last_id text)
        LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
      DECLARE
        pending text[];
        id text;
        ids text[];
        afters bigint[];
        throughs bigint[];
        one bigint;
        row record;
      BEGIN
        added := 0;
        IF sweep THEN
          pending := ARRAY(
            SELECT l.session_id FROM session_logs l LEFT JOIN search_positions p USING (session_id)
            WHERE l.last_seq > coalesce(p.indexed_seq, -1) AND (after_id IS NULL OR l.session_id > after_id)
            ORDER BY l.session_id LIMIT max_sessions);
        ELSE
          pending := ARRAY(
            SELECT l.session_id
            FROM (SELECT DISTINCT unnest(session_ids) AS session_id FROM append_groups WHERE NOT indexed) g
            JOIN session_logs l USING (session_id)
            LEFT JOIN search_positions p USING (session_id)
            WHERE l.last_seq > coalesce(p.indexed_seq, -1) AND (after_id IS NULL OR l.session_id > after_id)
            ORDER BY l.session_id LIMIT max_sessions);
        END IF;
        IF cardinality(pending) = 0 THEN
          PERFORM mark_indexed_groups();
          RETURN;
        END IF;
        -- A full batch: more may be pending after it (the caller's next run starts there).
        IF cardinality(pending) = max_sessions THEN
          last_id := pending[max_sessions];
        END IF;
        FOREACH id IN ARRAY pending LOOP
          PERFORM pg_advisory_xact_lock(hashtextextended('parley search ' || current_schema() || ' ' || id, 0));
        END LOOP;
        -- A statement of its own, so its snapshot sees what a run that held a lock before us committed.
        SELECT array_agg(l.session_id), array_agg(coalesce(p.indexed_seq, -1)), array_agg(l.last_seq)
          INTO ids, afters, throughs
        FROM unnest(pending) AS w(session_id)
        JOIN session_logs l USING (session_id)
        LEFT JOIN search_positions p USING (session_id)
        WHERE l.last_seq > coalesce(p.indexed_seq, -1);
        IF ids IS NULL THEN
          PERFORM mark_indexed_groups();
          RETURN;
        END IF;
        BEGIN
          -- In the order they were appended, as near as the events tell: message_id orders the hits.
          INSERT INTO session_messages (session_id, seq, block_id, conversation_id, role, at, content)
          SELECT m.session_id, m.seq, m.body #>> '{block,id}', m.body ->> 'conversationId',
                 CASE m.body #>> '{block,type}' WHEN 'user_message' THEN 'user' ELSE 'assistant' END,
                 coalesce((m.body ->> 'at')::bigint, 0), m.body #>> '{block,content}'
          FROM (SELECT e.session_id, e.seq, replace(e.body, '\\u0000', '')::jsonb AS body
                FROM unnest(ids, afters, throughs) AS r(session_id, after_seq, through_seq)
                JOIN events e ON e.session_id = r.session_id AND e.seq > r.after_seq AND e.seq <= r.through_seq
                WHERE strpos(e.body, '"block_complete"') > 0) m
          WHERE m.body ->> 'type' = 'block_complete'
            AND m.body #>> '{block,type}' IN ('user_message', 'assistant_text')
            AND coalesce(m.body #>> '{block,content}', '') <> ''
          ORDER BY coalesce((m.body ->> 'at')::bigint, 0), m.session_id, m.seq
          ON CONFLICT (session_id, seq) DO NOTHING;
          GET DIAGNOSTICS added = ROW_COUNT;
        EXCEPTION WHEN others THEN
          added := 0;
          FOR row IN
            SELECT e.session_id, e.seq, e.body
            FROM unnest(ids, afters, throughs) AS r(session_id, after_seq, through_seq)
            JOIN events e ON e.session_id = r.session_id AND e.seq > r.after_seq AND e.seq <= r.through_seq
            WHERE strpos(e.body, '"block_complete"') > 0
            ORDER BY e.session_id, e.seq
          LOOP
            BEGIN
              INSERT INTO session_messages (session_id, seq, block_id, conversation_id, role, at, content)
              SELECT row.session_id, row.seq, b #>> '{block,id}', b ->> 'conversationId',
                     CASE b #>> '{block,type}' WHEN 'user_message' THEN 'user' ELSE 'assistant' END,
                     coalesce((b ->> 'at')::bigint, 0), b #>> '{block,content}'
              FROM (SELECT replace(row.body, '\\u0000', '')::jsonb AS b) parsed
              WHERE b ->> 'type' = 'block_complete'
                AND b #>> '{block,type}' IN ('user_message', 'assistant_text')
                AND coalesce(b #>> '{block,content}', '') <> ''
              ON CONFLICT (session_id, seq) DO NOTHING;
              GET DIAGNOSTICS one = ROW_COUNT;
              added := added + one;
            EXCEPTION WHEN others THEN
              RAISE WARNING 'parley: message % of session % left out of the search index: %', row.seq, row.session_id, SQLERRM;
            END;
          END LOOP;
        END;
        INSERT INTO search_positions (session_id, indexed_seq)
        SELECT * FROM unnest(ids, throughs)
        ON CONFLICT (session_id) DO UPDATE SET indexed_seq = greatest(search_positions.indexed_seq, EXCLUDED.indexed_seq);
        PERFORM mark_indexed_groups();
      END $$;
    `,
  },
];

/** The schema version this Parley writes and reads. */
export const SCHEMA_VERSION = MIGRATIONS.length;
