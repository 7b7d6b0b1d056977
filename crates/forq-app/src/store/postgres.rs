//! The store on PostgreSQL: the synchronous client on a thread of its own
//! (it runs a runtime of its own, which may not start inside the async
//! code that calls the store), statements sent to it one at a time.
//!
//! A lost connection is made again before the next statement, except
//! inside a transaction: there every statement fails until the caller
//! rolls back, so no statement of a transaction runs outside it.

use std::error::Error;
use std::str::FromStr;
use std::sync::mpsc;
use std::time::Duration;

use bytes::BytesMut;
use postgres::types::{FromSql, IsNull, ToSql, Type};

use super::db::{DbError, Dialect, Sql, Val};

enum Request {
    Exec(String, Vec<Val>, mpsc::Sender<Result<u64, DbError>>),
    Rows(
        String,
        Vec<Val>,
        mpsc::Sender<Result<Vec<Vec<Val>>, DbError>>,
    ),
    Batch(String, mpsc::Sender<Result<(), DbError>>),
}

/// A connection to a PostgreSQL server, driven by a thread of its own.
pub(crate) struct Postgres {
    tx: mpsc::Sender<Request>,
}

impl Postgres {
    /// Connects to `url` (`postgres://user:password@host:port/db`); the
    /// first connection is made here, so a wrong URL is said at once.
    pub(crate) fn connect(url: &str) -> Result<Postgres, DbError> {
        let mut config = postgres::Config::from_str(url)?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if config.get_application_name().is_none() {
            config.application_name("forq");
        }
        let (tx, rx) = mpsc::channel::<Request>();
        let (ready_tx, ready_rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("forq-store-postgres".to_owned())
            .spawn(move || {
                let mut driver = Driver {
                    config,
                    client: None,
                    in_tx: false,
                };
                let _ = ready_tx.send(driver.client().map(drop));
                for request in rx {
                    driver.serve(request);
                }
            })?;
        ready_rx
            .recv()
            .map_err(|_| "the PostgreSQL connection thread ended")??;
        Ok(Postgres { tx })
    }

    fn ask<T>(
        &self,
        make: impl FnOnce(mpsc::Sender<Result<T, DbError>>) -> Request,
    ) -> Result<T, DbError> {
        let (reply, answer) = mpsc::channel();
        self.tx
            .send(make(reply))
            .map_err(|_| "the PostgreSQL connection thread ended")?;
        answer
            .recv()
            .map_err(|_| "the PostgreSQL connection thread ended")?
    }
}

impl Sql for Postgres {
    fn exec(&mut self, sql: &str, params: &[Val]) -> Result<u64, DbError> {
        self.ask(|r| Request::Exec(dollars(sql), params.to_vec(), r))
    }
    fn rows(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Vec<Val>>, DbError> {
        self.ask(|r| Request::Rows(dollars(sql), params.to_vec(), r))
    }
    fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        self.ask(|r| Request::Batch(sql.to_owned(), r))
    }
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }
}

struct Driver {
    config: postgres::Config,
    client: Option<postgres::Client>,
    in_tx: bool,
}

impl Driver {
    fn client(&mut self) -> Result<&mut postgres::Client, DbError> {
        if self
            .client
            .as_ref()
            .is_some_and(postgres::Client::is_closed)
        {
            self.client = None;
            if self.in_tx {
                return Err("the connection to PostgreSQL was lost inside a transaction".into());
            }
        }
        if self.client.is_none() {
            self.client = Some(self.config.connect(postgres::NoTls)?);
        }
        Ok(self.client.as_mut().expect("connected above"))
    }

    /// `run` on the connection; outside a transaction, once more on a new
    /// connection when the old one turned out closed (the server
    /// restarted, a failover, an idle connection cut): a statement on its
    /// own is as good as new there.
    fn again<T>(
        &mut self,
        run: impl Fn(&mut postgres::Client) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        let first = self.client().and_then(&run);
        match first {
            Err(_)
                if !self.in_tx
                    && self
                        .client
                        .as_ref()
                        .is_some_and(postgres::Client::is_closed) =>
            {
                self.client = None;
                self.client().and_then(run)
            }
            out => out,
        }
    }

    fn serve(&mut self, request: Request) {
        match request {
            Request::Exec(sql, params, reply) => {
                let out = self.again(|c| {
                    let p: Vec<&(dyn ToSql + Sync)> =
                        params.iter().map(|v| v as &(dyn ToSql + Sync)).collect();
                    Ok(c.execute(sql.as_str(), &p)?)
                });
                let _ = reply.send(out);
            }
            Request::Rows(sql, params, reply) => {
                let out = self.again(|c| {
                    let p: Vec<&(dyn ToSql + Sync)> =
                        params.iter().map(|v| v as &(dyn ToSql + Sync)).collect();
                    let rows = c.query(sql.as_str(), &p)?;
                    rows.iter()
                        .map(|row| {
                            (0..row.len())
                                .map(|i| row.try_get::<_, Val>(i).map_err(DbError::from))
                                .collect()
                        })
                        .collect()
                });
                let _ = reply.send(out);
            }
            Request::Batch(sql, reply) => {
                let word = sql.trim().to_ascii_uppercase();
                let ends = word.starts_with("COMMIT") || word.starts_with("ROLLBACK");
                if ends && self.client.as_ref().is_none_or(postgres::Client::is_closed) {
                    // The transaction died with its connection.
                    self.in_tx = false;
                    self.client = None;
                    let _ = reply.send(if word.starts_with("ROLLBACK") {
                        Ok(())
                    } else {
                        Err("the connection to PostgreSQL was lost before the commit".into())
                    });
                    return;
                }
                let run = |c: &mut postgres::Client| Ok(c.batch_execute(sql.as_str())?);
                // A transaction may begin on a new connection; nothing
                // inside one may.
                let out = if word.starts_with("BEGIN") && !self.in_tx {
                    self.again(run)
                } else {
                    self.client().and_then(run)
                };
                if word.starts_with("BEGIN") && out.is_ok() {
                    self.in_tx = true;
                }
                if ends {
                    self.in_tx = false;
                }
                let _ = reply.send(out);
            }
        }
    }
}

/// `?N` parameters as PostgreSQL writes them (`$N`). The store's SQL has
/// no `?` inside a literal.
fn dollars(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

impl ToSql for Val {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match (self, ty) {
            (Val::Null, _) => Ok(IsNull::Yes),
            (Val::Int(i), &Type::INT4) => i32::try_from(*i)?.to_sql(ty, out),
            (Val::Int(i), &Type::INT2) => i16::try_from(*i)?.to_sql(ty, out),
            (Val::Int(i), &Type::FLOAT8) => (*i as f64).to_sql(ty, out),
            (Val::Int(i), &Type::BOOL) => (*i != 0).to_sql(ty, out),
            (Val::Int(i), &Type::TEXT | &Type::VARCHAR) => i.to_string().to_sql(ty, out),
            (Val::Int(i), _) => i.to_sql(ty, out),
            (Val::Real(r), &Type::FLOAT4) => (*r as f32).to_sql(ty, out),
            (Val::Real(r), _) => r.to_sql(ty, out),
            (Val::Text(t), &Type::BYTEA) => t.as_bytes().to_sql(ty, out),
            (Val::Text(t), _) => t.to_sql(ty, out),
            (Val::Blob(b), _) => b.to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

impl<'a> FromSql<'a> for Val {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Val, Box<dyn Error + Sync + Send>> {
        Ok(match *ty {
            Type::INT8 => Val::Int(i64::from_sql(ty, raw)?),
            Type::INT4 => Val::Int(i64::from(i32::from_sql(ty, raw)?)),
            Type::INT2 => Val::Int(i64::from(i16::from_sql(ty, raw)?)),
            Type::BOOL => Val::Int(i64::from(bool::from_sql(ty, raw)?)),
            Type::FLOAT8 => Val::Real(f64::from_sql(ty, raw)?),
            Type::FLOAT4 => Val::Real(f64::from(f32::from_sql(ty, raw)?)),
            Type::BYTEA => Val::Blob(raw.to_vec()),
            _ => Val::Text(String::from_sql(ty, raw)?),
        })
    }

    fn from_sql_null(_: &Type) -> Result<Val, Box<dyn Error + Sync + Send>> {
        Ok(Val::Null)
    }

    fn accepts(ty: &Type) -> bool {
        matches!(
            *ty,
            Type::INT8
                | Type::INT4
                | Type::INT2
                | Type::BOOL
                | Type::FLOAT8
                | Type::FLOAT4
                | Type::BYTEA
        ) || <String as FromSql>::accepts(ty)
    }
}

/// `url` without its password, to name the store in messages.
pub(crate) fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (auth, host) = match rest.rsplit_once('@') {
        Some((a, h)) => (Some(a), h),
        None => (None, rest),
    };
    match auth.map(|a| a.split_once(':').map_or(a, |(user, _)| user)) {
        Some(user) => format!("{scheme}://{user}:***@{host}"),
        None => format!("{scheme}://{host}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_numbered_the_postgresql_way_and_passwords_never_shown() {
        assert_eq!(
            dollars("SELECT a FROM t WHERE b = ?1 AND c = ?12 OR d IS ?2"),
            "SELECT a FROM t WHERE b = $1 AND c = $12 OR d IS $2"
        );
        assert_eq!(
            redacted("postgres://forq:s3cret@db.internal:5432/forq"),
            "postgres://forq:***@db.internal:5432/forq"
        );
        assert_eq!(
            redacted("postgres://db.internal/forq"),
            "postgres://db.internal/forq"
        );
    }
}
