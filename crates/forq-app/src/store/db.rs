//! The store's one way to speak SQL, whichever database holds it: values
//! ([`Val`]), rows, and a connection ([`Sql`]) that SQLite and PostgreSQL
//! both implement. The store's queries are written once, in the SQL both
//! read (`?N` parameters, `ON CONFLICT`, `RETURNING`, `IS NOT DISTINCT
//! FROM`); a driver translates only what it must (PostgreSQL's `$N`).

use std::sync::Mutex;
use std::time::Duration;

use rusqlite::types::{ToSqlOutput, Value as SqliteValue, ValueRef};

/// Which database a store is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    Postgres,
}

/// One SQL value: what the store writes and reads back.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl Val {
    pub(crate) fn int(&self) -> Option<i64> {
        match self {
            Val::Int(i) => Some(*i),
            Val::Real(r) => Some(*r as i64),
            _ => None,
        }
    }
    pub(crate) fn real(&self) -> Option<f64> {
        match self {
            Val::Real(r) => Some(*r),
            Val::Int(i) => Some(*i as f64),
            _ => None,
        }
    }
    pub(crate) fn text(&self) -> Option<&str> {
        match self {
            Val::Text(t) => Some(t),
            _ => None,
        }
    }
    pub(crate) fn into_text(self) -> Option<String> {
        match self {
            Val::Text(t) => Some(t),
            _ => None,
        }
    }
    pub(crate) fn into_blob(self) -> Option<Vec<u8>> {
        match self {
            Val::Blob(b) => Some(b),
            Val::Text(t) => Some(t.into_bytes()),
            _ => None,
        }
    }
}

impl From<i64> for Val {
    fn from(v: i64) -> Val {
        Val::Int(v)
    }
}
impl From<u64> for Val {
    fn from(v: u64) -> Val {
        Val::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}
impl From<u32> for Val {
    fn from(v: u32) -> Val {
        Val::Int(i64::from(v))
    }
}
impl From<f64> for Val {
    fn from(v: f64) -> Val {
        Val::Real(v)
    }
}
impl From<bool> for Val {
    fn from(v: bool) -> Val {
        Val::Int(i64::from(v))
    }
}
impl From<&str> for Val {
    fn from(v: &str) -> Val {
        Val::Text(v.to_owned())
    }
}
impl From<String> for Val {
    fn from(v: String) -> Val {
        Val::Text(v)
    }
}
impl From<&String> for Val {
    fn from(v: &String) -> Val {
        Val::Text(v.clone())
    }
}
impl From<&crate::ids::RunId> for Val {
    fn from(v: &crate::ids::RunId) -> Val {
        Val::Text(v.to_string())
    }
}
impl From<Vec<u8>> for Val {
    fn from(v: Vec<u8>) -> Val {
        Val::Blob(v)
    }
}
impl<T: Into<Val>> From<Option<T>> for Val {
    fn from(v: Option<T>) -> Val {
        v.map_or(Val::Null, Into::into)
    }
}

/// Parameters, each turned into a [`Val`].
macro_rules! vals {
    ($($v:expr),* $(,)?) => { &[$($crate::store::db::Val::from($v)),*][..] };
}
pub(crate) use vals;

/// A database error, as the driver said it.
pub(crate) type DbError = Box<dyn std::error::Error + Send + Sync>;

/// One connection: statements with `?N` parameters.
pub(crate) trait Sql: Send {
    /// Runs `sql`; how many rows it changed.
    fn exec(&mut self, sql: &str, params: &[Val]) -> Result<u64, DbError>;
    /// The rows `sql` returns.
    fn rows(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Vec<Val>>, DbError>;
    /// Runs statements without parameters, one after another.
    fn batch(&mut self, sql: &str) -> Result<(), DbError>;
    /// Which database this is.
    fn dialect(&self) -> Dialect;
}

impl dyn Sql + '_ {
    /// The first row `sql` returns, if any.
    pub(crate) fn row(&mut self, sql: &str, params: &[Val]) -> Result<Option<Vec<Val>>, DbError> {
        Ok(self.rows(sql, params)?.into_iter().next())
    }
    /// The first column of the first row (`Null` for no row).
    pub(crate) fn value(&mut self, sql: &str, params: &[Val]) -> Result<Val, DbError> {
        Ok(self
            .row(sql, params)?
            .and_then(|r| r.into_iter().next())
            .unwrap_or(Val::Null))
    }
}

/// A database shared by a store's callers: one connection, one caller at
/// a time (a store's statements are short).
pub(crate) struct Db {
    conn: Mutex<Box<dyn Sql>>,
    /// Which database this is.
    pub(crate) dialect: Dialect,
    /// The database role this connection is (PostgreSQL's `session_user`;
    /// `None` on SQLite): what the store records as a run's holder role.
    pub(crate) role: Option<String>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").finish_non_exhaustive()
    }
}

impl Db {
    pub(crate) fn new(conn: Box<dyn Sql>) -> Db {
        Db {
            dialect: conn.dialect(),
            conn: Mutex::new(conn),
            role: None,
        }
    }

    /// `f` on the connection, outside a transaction.
    pub(crate) fn with<T>(
        &self,
        f: impl FnOnce(&mut dyn Sql) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut **conn)
    }

    /// `f` in one transaction that takes the write lock at its start
    /// (SQLite's `IMMEDIATE`; on PostgreSQL, row locks as `f` takes them),
    /// committed when `f` returns `Ok`, rolled back otherwise.
    pub(crate) fn write<T>(
        &self,
        f: impl FnOnce(&mut dyn Sql) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        self.with(|c| {
            let begin = match c.dialect() {
                Dialect::Sqlite => "BEGIN IMMEDIATE",
                Dialect::Postgres => "BEGIN",
            };
            c.batch(begin)?;
            match f(c) {
                Ok(out) => {
                    if let Err(e) = c.batch("COMMIT") {
                        let _ = c.batch("ROLLBACK");
                        return Err(e);
                    }
                    Ok(out)
                }
                Err(e) => {
                    let _ = c.batch("ROLLBACK");
                    Err(e)
                }
            }
        })
    }
}

/// SQLite, through rusqlite.
pub(crate) struct Sqlite(pub(crate) rusqlite::Connection);

impl Sqlite {
    /// Opens (creating) the database file `path`, never through a link,
    /// in WAL mode so readers go on while a run writes.
    pub(crate) fn open(path: &std::path::Path) -> Result<Sqlite, rusqlite::Error> {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        // Never through a link: a run store opened through a name someone
        // else could plant would be theirs to read and change.
        let flags = rusqlite::OpenFlags::default() | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn = rusqlite::Connection::open_with_flags(path, flags)?;
        conn.busy_timeout(Duration::from_secs(10))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        Ok(Sqlite(conn))
    }
}

impl rusqlite::ToSql for Val {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Val::Null => ToSqlOutput::Owned(SqliteValue::Null),
            Val::Int(i) => ToSqlOutput::Owned(SqliteValue::Integer(*i)),
            Val::Real(r) => ToSqlOutput::Owned(SqliteValue::Real(*r)),
            Val::Text(t) => ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes())),
            Val::Blob(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
        })
    }
}

fn from_sqlite(v: ValueRef<'_>) -> Val {
    match v {
        ValueRef::Null => Val::Null,
        ValueRef::Integer(i) => Val::Int(i),
        ValueRef::Real(r) => Val::Real(r),
        ValueRef::Text(t) => Val::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Val::Blob(b.to_vec()),
    }
}

impl Sql for Sqlite {
    fn exec(&mut self, sql: &str, params: &[Val]) -> Result<u64, DbError> {
        let mut q = self.0.prepare_cached(sql)?;
        Ok(q.execute(rusqlite::params_from_iter(params))? as u64)
    }

    fn rows(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Vec<Val>>, DbError> {
        let mut q = self.0.prepare_cached(sql)?;
        let columns = q.column_count();
        let rows = q
            .query_map(rusqlite::params_from_iter(params), |r| {
                (0..columns)
                    .map(|i| r.get_ref(i).map(from_sqlite))
                    .collect::<Result<Vec<_>, _>>()
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        Ok(self.0.execute_batch(sql)?)
    }

    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }
}
