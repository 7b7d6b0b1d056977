//! The store's schema and its versions, on both databases.
//!
//! SQLite keeps its version in `PRAGMA user_version` and climbs from
//! whatever an older forq left (schema 0 is a store made before versions
//! existed). PostgreSQL support began at schema 4, so a new PostgreSQL
//! store is made at 4 in one step and keeps its version in `forq_schema`;
//! every version after 4 is one step both databases take, in SQL both
//! read (`migrate_shared`). Each step and its version number commit
//! together: a store is at one version or the next, never between.

use super::db::{vals, Db, DbError, Dialect, Sql, Val};

/// The schema this build writes.
pub const SCHEMA_VERSION: i64 = 8;

/// The runs table of schema 1, and the columns a store made before schema
/// versions existed may lack (added by the first migration).
const RUNS_V1: &str = "
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    issue TEXT NOT NULL,
    repo TEXT NOT NULL,
    action TEXT NOT NULL,
    state TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    pid INTEGER,
    cost_usd REAL NOT NULL DEFAULT 0,
    patch_lines INTEGER,
    branch TEXT,
    abort_requested INTEGER NOT NULL DEFAULT 0,
    started_ms INTEGER,
    context TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL REFERENCES runs(id),
    seq INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS deliveries (
    id TEXT PRIMARY KEY,
    at_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS checkpoints (
    run_id TEXT NOT NULL REFERENCES runs(id),
    phase TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, phase)
);
";

const RUNS_LATE_COLUMNS: &[(&str, &str)] = &[
    ("cost_usd", "REAL NOT NULL DEFAULT 0"),
    ("patch_lines", "INTEGER"),
    ("branch", "TEXT"),
    ("abort_requested", "INTEGER NOT NULL DEFAULT 0"),
    ("started_ms", "INTEGER"),
    ("context", "TEXT NOT NULL DEFAULT '[]'"),
];

/// Schema 2: every event gets an id in the whole store (a table rebuild,
/// since SQLite cannot change a primary key in place).
const EVENTS_V2: &str = "
CREATE TABLE events_v2 (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(id),
    seq INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    UNIQUE (run_id, seq)
);
INSERT INTO events_v2 (run_id, seq, at_ms, kind, data)
    SELECT run_id, seq, at_ms, kind, data FROM events ORDER BY at_ms, run_id, seq;
DROP TABLE events;
ALTER TABLE events_v2 RENAME TO events;
";

/// Schema 4 on SQLite: leases and fences (a run's holder, until when,
/// and a number that grows with every taking-up), a per-run event
/// counter, the event ids' counter, workers, and artifacts.
const SQLITE_V4: &str = "
ALTER TABLE runs ADD COLUMN worker TEXT;
ALTER TABLE runs ADD COLUMN host TEXT;
ALTER TABLE runs ADD COLUMN lease_until INTEGER;
ALTER TABLE runs ADD COLUMN fence INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN last_seq INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET last_seq = (SELECT COALESCE(MAX(seq), 0) FROM events WHERE events.run_id = runs.id);
ALTER TABLE events ADD COLUMN fence INTEGER;
CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT INTO meta (name, value) SELECT 'event_id', COALESCE(MAX(id), 0) FROM events;
CREATE TABLE workers (
    id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    labels TEXT NOT NULL DEFAULT '[]',
    jobs INTEGER NOT NULL,
    started_ms INTEGER NOT NULL,
    heartbeat_ms INTEGER NOT NULL,
    driving TEXT NOT NULL DEFAULT '[]',
    stopping INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE artifacts (
    run_id TEXT NOT NULL REFERENCES runs(id),
    name TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (run_id, name)
);
CREATE INDEX runs_by_state ON runs (state, created_ms);
";

/// Schema 4 on PostgreSQL, whole.
const POSTGRES_V4: &str = "
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    issue TEXT NOT NULL,
    repo TEXT NOT NULL,
    action TEXT NOT NULL,
    state TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    created_ms BIGINT NOT NULL,
    updated_ms BIGINT NOT NULL,
    pid BIGINT,
    cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
    patch_lines BIGINT,
    branch TEXT,
    abort_requested BIGINT NOT NULL DEFAULT 0,
    started_ms BIGINT,
    context TEXT NOT NULL DEFAULT '[]',
    failure TEXT,
    worker TEXT,
    host TEXT,
    lease_until BIGINT,
    fence BIGINT NOT NULL DEFAULT 0,
    last_seq BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE events (
    id BIGINT PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    seq BIGINT NOT NULL,
    at_ms BIGINT NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    fence BIGINT,
    UNIQUE (run_id, seq)
);
CREATE TABLE deliveries (id TEXT PRIMARY KEY, at_ms BIGINT NOT NULL);
CREATE TABLE checkpoints (
    run_id TEXT NOT NULL REFERENCES runs(id),
    phase TEXT NOT NULL,
    at_ms BIGINT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, phase)
);
CREATE TABLE meta (name TEXT PRIMARY KEY, value BIGINT NOT NULL);
INSERT INTO meta (name, value) VALUES ('event_id', 0);
CREATE TABLE workers (
    id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid BIGINT NOT NULL,
    labels TEXT NOT NULL DEFAULT '[]',
    jobs BIGINT NOT NULL,
    started_ms BIGINT NOT NULL,
    heartbeat_ms BIGINT NOT NULL,
    driving TEXT NOT NULL DEFAULT '[]',
    stopping BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE artifacts (
    run_id TEXT NOT NULL REFERENCES runs(id),
    name TEXT NOT NULL,
    at_ms BIGINT NOT NULL,
    data BYTEA NOT NULL,
    PRIMARY KEY (run_id, name)
);
CREATE INDEX runs_by_state ON runs (state, created_ms);
";

/// Schema 8 on PostgreSQL, after the column both databases get: least
/// privilege for workers. The role that made the store (the operator's:
/// `forq queue`, `forq serve`, `forq push`) owns the tables and may do
/// anything; a worker connects as a role of its own, a member of
/// `forq_worker`, and may
///
/// - read every table;
/// - take up a run only when no live lease of another role holds it (the
///   lease judged by the server's clock, not the worker's), and then only
///   in its own name (`holder_role` is the session's role);
/// - write a run it holds: its state, figures, lease and holder, never
///   what the run is (its issue, repository, action, context, required
///   labels, id) nor whether it was asked to abort;
/// - add events, checkpoints and artifacts only to a run it holds;
/// - delete nothing but its own entry in the worker list.
///
/// Row-level security keeps the rows, column grants the columns. The role
/// `forq_worker` is made here when the store's owner may make roles (else
/// a notice says so and the grants wait for it); it is shared by every
/// store on the server, the grants are each store's.
const POSTGRES_V8: &str = "
ALTER TABLE runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE events ENABLE ROW LEVEL SECURITY;
ALTER TABLE checkpoints ENABLE ROW LEVEL SECURITY;
ALTER TABLE artifacts ENABLE ROW LEVEL SECURITY;
CREATE POLICY forq_read ON runs FOR SELECT USING (true);
CREATE POLICY forq_hold ON runs FOR UPDATE
    USING (holder_role = session_user OR lease_until IS NULL
           OR lease_until < CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT))
    WITH CHECK (holder_role = session_user);
CREATE POLICY forq_read ON events FOR SELECT USING (true);
CREATE POLICY forq_held ON events FOR INSERT
    WITH CHECK (EXISTS (SELECT 1 FROM runs r WHERE r.id = run_id AND r.holder_role = session_user));
CREATE POLICY forq_read ON checkpoints FOR SELECT USING (true);
CREATE POLICY forq_held ON checkpoints FOR INSERT
    WITH CHECK (EXISTS (SELECT 1 FROM runs r WHERE r.id = run_id AND r.holder_role = session_user));
CREATE POLICY forq_held_again ON checkpoints FOR UPDATE
    USING (EXISTS (SELECT 1 FROM runs r WHERE r.id = run_id AND r.holder_role = session_user));
CREATE POLICY forq_read ON artifacts FOR SELECT USING (true);
CREATE POLICY forq_held ON artifacts FOR INSERT
    WITH CHECK (EXISTS (SELECT 1 FROM runs r WHERE r.id = run_id AND r.holder_role = session_user));
CREATE POLICY forq_held_again ON artifacts FOR UPDATE
    USING (EXISTS (SELECT 1 FROM runs r WHERE r.id = run_id AND r.holder_role = session_user));
DO $$
BEGIN
    BEGIN
        CREATE ROLE forq_worker NOLOGIN;
    EXCEPTION
        WHEN duplicate_object OR unique_violation THEN NULL;
        WHEN insufficient_privilege THEN
            RAISE NOTICE 'forq: this role may not make roles; a superuser makes forq_worker and grants it (docs/deploy.md)';
    END;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'forq_worker') THEN
        GRANT SELECT ON runs, events, checkpoints, artifacts, workers, meta, github_repos,
            github_said, forq_schema TO forq_worker;
        GRANT UPDATE (state, reason, updated_ms, pid, cost_usd, patch_lines, branch, started_ms,
            failure, worker, host, lease_until, fence, last_seq, boot, holder_role)
            ON runs TO forq_worker;
        GRANT INSERT ON events TO forq_worker;
        GRANT INSERT, UPDATE ON checkpoints, artifacts TO forq_worker;
        GRANT UPDATE (value) ON meta TO forq_worker;
        GRANT INSERT, UPDATE, DELETE ON workers TO forq_worker;
        GRANT INSERT ON github_said TO forq_worker;
    END IF;
END
$$;
";

/// Why a store's schema could not be brought to this build's.
#[derive(Debug)]
pub(crate) enum SchemaError {
    /// Written by a newer forq.
    TooNew(i64),
    /// The database failed.
    Db(DbError),
}

impl From<DbError> for SchemaError {
    fn from(e: DbError) -> SchemaError {
        SchemaError::Db(e)
    }
}

/// Brings `db` to [`SCHEMA_VERSION`].
pub(crate) fn upgrade(db: &Db) -> Result<(), SchemaError> {
    match db.dialect {
        Dialect::Sqlite => upgrade_sqlite(db),
        Dialect::Postgres => upgrade_postgres(db),
    }
}

fn sqlite_version(c: &mut dyn Sql) -> Result<i64, DbError> {
    Ok(c.value("PRAGMA user_version", &[])?.int().unwrap_or(0))
}

fn upgrade_sqlite(db: &Db) -> Result<(), SchemaError> {
    let found = db.with(sqlite_version)?;
    if found > SCHEMA_VERSION {
        return Err(SchemaError::TooNew(found));
    }
    for from in found..SCHEMA_VERSION {
        db.write(|c| {
            // Read again inside the lock: another process may have
            // taken this step since.
            if sqlite_version(c)? == from {
                migrate_sqlite(c, from)?;
                c.batch(&format!("PRAGMA user_version = {}", from + 1))?;
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// Brings a SQLite store from schema `from` to `from + 1`.
fn migrate_sqlite(c: &mut dyn Sql, from: i64) -> Result<(), DbError> {
    match from {
        0 => {
            c.batch(RUNS_V1)?;
            let have: Vec<String> = c
                .rows("SELECT name FROM pragma_table_info('runs')", &[])?
                .into_iter()
                .filter_map(|r| r.into_iter().next().and_then(Val::into_text))
                .collect();
            for (column, decl) in RUNS_LATE_COLUMNS {
                if !have.iter().any(|h| h == column) {
                    c.batch(&format!("ALTER TABLE runs ADD COLUMN {column} {decl}"))?;
                }
            }
            Ok(())
        }
        1 => c.batch(EVENTS_V2),
        // Schema 3: why a run stopped short, as a class.
        2 => c.batch("ALTER TABLE runs ADD COLUMN failure TEXT"),
        3 => c.batch(SQLITE_V4),
        from => migrate_shared(c, from),
    }
}

/// The steps after schema 4, the same SQL on both databases.
fn migrate_shared(c: &mut dyn Sql, from: i64) -> Result<(), DbError> {
    match from {
        // Schema 5: the labels a worker must offer to take a run up.
        4 => c.batch("ALTER TABLE runs ADD COLUMN requires TEXT NOT NULL DEFAULT '[]'"),
        // Schema 6: the repositories a GitHub App's installations hold, and
        // what forq said on GitHub once (a triage's answer, a fix's link).
        5 => c.batch(
            "CREATE TABLE github_repos (repo TEXT PRIMARY KEY, installation BIGINT NOT NULL, at_ms BIGINT NOT NULL);
             CREATE TABLE github_said (key TEXT PRIMARY KEY, url TEXT NOT NULL, at_ms BIGINT NOT NULL);",
        ),
        // Schema 7: the boot of the machine a run's holder runs on, so that
        // two machines with one host name never judge each other's
        // processes by a local pid.
        6 => c.batch("ALTER TABLE runs ADD COLUMN boot TEXT"),
        // Schema 8: the database role that holds a run (PostgreSQL, where
        // each worker may have its own; always empty on SQLite), and on
        // PostgreSQL what a worker's role may write.
        7 => {
            c.batch("ALTER TABLE runs ADD COLUMN holder_role TEXT")?;
            match c.dialect() {
                Dialect::Postgres => c.batch(POSTGRES_V8),
                Dialect::Sqlite => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

fn upgrade_postgres(db: &Db) -> Result<(), SchemaError> {
    // A store at this build's schema is only read: a worker's role, which
    // may create nothing, opens it.
    let current = db.with(|c| {
        if c.value("SELECT to_regclass('forq_schema') IS NOT NULL", &[])?
            .int()
            != Some(1)
        {
            return Ok(0);
        }
        Ok(c.value("SELECT MAX(version) FROM forq_schema", &[])?
            .int()
            .unwrap_or(0))
    })?;
    if current == SCHEMA_VERSION {
        return Ok(());
    }
    let version = |c: &mut dyn Sql| -> Result<i64, DbError> {
        c.batch("CREATE TABLE IF NOT EXISTS forq_schema (version BIGINT NOT NULL)")?;
        Ok(c.value("SELECT MAX(version) FROM forq_schema", &[])?
            .int()
            .unwrap_or(0))
    };
    // Every process that opens the store may try this at once: the first
    // takes the lock, the others find the work done.
    let found = db.write(|c| {
        c.batch("SELECT pg_advisory_xact_lock(7235915)")?;
        let found = version(c)?;
        if found == 0 {
            c.batch(POSTGRES_V4)?;
            c.exec("INSERT INTO forq_schema (version) VALUES (?1)", vals![4i64])?;
            return Ok(4);
        }
        Ok(found)
    })?;
    if found > SCHEMA_VERSION {
        return Err(SchemaError::TooNew(found));
    }
    for from in found..SCHEMA_VERSION {
        db.write(|c| {
            c.batch("SELECT pg_advisory_xact_lock(7235915)")?;
            let now = c
                .value("SELECT MAX(version) FROM forq_schema", &[])?
                .int()
                .unwrap_or(0);
            if now == from {
                migrate_shared(c, from)?;
                c.exec("UPDATE forq_schema SET version = ?1", vals![from + 1])?;
            }
            Ok(())
        })?;
    }
    Ok(())
}
