//! The store on PostgreSQL: the synchronous client on a thread of its own
//! (it runs a runtime of its own, which may not start inside the async
//! code that calls the store), statements sent to it one at a time.
//!
//! A lost connection is made again before the next statement, except
//! inside a transaction: there every statement fails until the caller
//! rolls back, so no statement of a transaction runs outside it.
//!
//! A server beyond this machine is spoken to over TLS, its certificate
//! checked for the host's name ([`Transport`]): a store's rows are the
//! fleet's work, and a network between a worker and its store is no
//! place to send them in the clear or to trust whoever answers.

use std::error::Error;
use std::net::IpAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::mpsc;
use std::sync::Arc;
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
        let (url, transport) = Transport::of(url)?;
        let tls = transport.connector()?;
        let mut config = postgres::Config::from_str(&url)?;
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
                    tls,
                    client: None,
                    in_tx: false,
                };
                let first = driver.client().map(drop).map_err(|e| transport.explain(e));
                let _ = ready_tx.send(first);
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
    /// `None`: no TLS ([`Transport::Plain`]).
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
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
            self.client = Some(match &self.tls {
                Some(tls) => self.config.connect(tls.clone())?,
                None => self.config.connect(postgres::NoTls)?,
            });
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

/// How a connection to the store is carried, read from its URL's
/// `sslmode` and `sslrootcert` (libpq's words) with stricter defaults:
///
/// - a server on this machine (loopback, a Unix socket) is spoken to in the
///   clear unless the URL asks for TLS (`sslmode=require`, `verify-ca`,
///   `verify-full`);
/// - any other server only over TLS, whatever `sslmode` says, unless it
///   says `disable` (the operator's own word that the network is private);
///   `prefer` and `allow`, which fall back to the clear when a man in the
///   middle says the server has no TLS, count as unsaid;
/// - TLS always checks the certificate and the host's name (libpq checks
///   them only for `verify-full`): against the CA certificates in the file
///   `sslrootcert` names, else the web's roots (webpki-roots).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Transport {
    /// No TLS.
    Plain,
    /// TLS, checked against the CAs in `ca` (`None`: the web's roots).
    Tls { ca: Option<PathBuf> },
}

impl Transport {
    /// The transport `url` asks for, and the URL to hand the driver
    /// (`sslrootcert` taken out, `sslmode` what the transport needs).
    pub(crate) fn of(url: &str) -> Result<(String, Transport), DbError> {
        let (head, query) = url.split_once('?').unwrap_or((url, ""));
        let mut keep = Vec::new();
        let mut mode = None;
        let mut ca = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "sslmode" => mode = Some(value.to_owned()),
                "sslrootcert" => ca = Some(PathBuf::from(unescape(value)?)),
                _ => keep.push(pair),
            }
        }
        let asked = match mode.as_deref() {
            None | Some("prefer" | "allow") => None,
            Some("disable") => Some(false),
            Some("require" | "verify-ca" | "verify-full") => Some(true),
            Some(other) => {
                return Err(format!(
                    "the store URL's sslmode={other} is not one forq knows: write disable, \
                     require or verify-full"
                )
                .into())
            }
        };
        // Where the URL points, as the driver reads it (`host=` in the
        // query string included).
        let local = local(&postgres::Config::from_str(&without_tls(head, &keep))?);
        let transport = match asked {
            Some(false) => Transport::Plain,
            None if local && ca.is_none() => Transport::Plain,
            _ => Transport::Tls { ca },
        };
        keep.push(match transport {
            Transport::Plain => "sslmode=disable",
            Transport::Tls { .. } => "sslmode=require",
        });
        Ok((format!("{head}?{}", keep.join("&")), transport))
    }

    /// The driver's TLS connector for this transport.
    fn connector(&self) -> Result<Option<tokio_postgres_rustls::MakeRustlsConnect>, DbError> {
        let Transport::Tls { ca } = self else {
            return Ok(None);
        };
        let mut roots = rustls::RootCertStore::empty();
        match ca {
            None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
            Some(path) => {
                use rustls::pki_types::{pem::PemObject, CertificateDer};
                let read = |e: &dyn std::fmt::Display| {
                    format!(
                        "the store URL's sslrootcert {}: {e} (name a PEM file of the CA \
                         certificates that signed the server's)",
                        path.display()
                    )
                };
                for cert in CertificateDer::pem_file_iter(path).map_err(|e| read(&e))? {
                    roots
                        .add(cert.map_err(|e| read(&e))?)
                        .map_err(|e| read(&e))?;
                }
                if roots.is_empty() {
                    return Err(read(&"it holds no certificate").into());
                }
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Some(tokio_postgres_rustls::MakeRustlsConnect::new(config)))
    }

    /// `e`, the first connection's failure, with what forq asked of the
    /// server's certificate when TLS was in it.
    fn explain(&self, e: DbError) -> DbError {
        match self {
            Transport::Tls { ca } if format!("{e:?}").contains("Tls") => {
                let against = ca.as_ref().map_or_else(
                    || "the web's roots; name your own CA with ?sslrootcert=FILE".to_owned(),
                    |p| p.display().to_string(),
                );
                format!(
                    "{e}: forq speaks to a store beyond this machine only over TLS, the \
                     server's certificate checked for its host name against {against} \
                     (sslmode=disable turns TLS off, for a network you trust)"
                )
                .into()
            }
            _ => e,
        }
    }
}

/// `head` with the query pairs `keep`.
fn without_tls(head: &str, keep: &[&str]) -> String {
    if keep.is_empty() {
        head.to_owned()
    } else {
        format!("{head}?{}", keep.join("&"))
    }
}

/// Whether every host `config` names is this machine: a Unix socket, a
/// loopback address, or `localhost`.
fn local(config: &postgres::Config) -> bool {
    use postgres::config::Host;
    let loopback = |name: &str| {
        name.eq_ignore_ascii_case("localhost")
            || name
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    };
    let hosts = config.get_hosts();
    !hosts.is_empty()
        && hosts.iter().all(|h| match h {
            Host::Tcp(name) => loopback(name),
            Host::Unix(_) => true,
        })
        && config.get_hostaddrs().iter().all(IpAddr::is_loopback)
}

/// A URL query value with its `%XX` escapes decoded.
fn unescape(value: &str) -> Result<String, DbError> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = value
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("the store URL has a broken escape in {value:?}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(String::from_utf8(out)?)
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

    #[test]
    fn a_store_beyond_this_machine_is_reached_only_over_checked_tls() {
        let of = |url: &str| Transport::of(url).expect(url);
        let tls = |ca: Option<&str>| Transport::Tls {
            ca: ca.map(PathBuf::from),
        };
        // This machine: in the clear unless TLS is asked for.
        for url in [
            "postgres://u@127.0.0.1:5432/db",
            "postgres://u@localhost/db",
            "postgres://u@[::1]/db",
            "postgres://u@localhost/db?sslmode=prefer",
            "postgres:///db?host=/var/run/postgresql",
        ] {
            assert_eq!(of(url).1, Transport::Plain, "{url}");
        }
        assert_eq!(of("postgres://u@127.0.0.1/db?sslmode=require").1, tls(None));
        // Elsewhere: TLS whatever the URL says, but for disable; prefer
        // (which a man in the middle turns into the clear) is not enough.
        for url in [
            "postgres://u:p@db.internal/forq",
            "postgres://u@10.0.0.5/forq?sslmode=prefer",
            "postgres://u@10.0.0.5/forq?sslmode=allow",
            "postgres://u@127.0.0.1/forq?host=db.internal",
            "postgres://u@localhost/forq?hostaddr=10.0.0.5",
        ] {
            assert_eq!(of(url).1, tls(None), "{url}");
        }
        assert_eq!(
            of("postgres://u@db.internal/forq?sslmode=disable").1,
            Transport::Plain
        );
        // The CA file is forq's to read, not the driver's; the driver
        // is told to require TLS.
        let (url, transport) =
            of("postgres://u@db.internal/forq?application_name=w&sslrootcert=%2Fetc%2Fca%20x.pem");
        assert_eq!(transport, tls(Some("/etc/ca x.pem")));
        assert_eq!(
            url,
            "postgres://u@db.internal/forq?application_name=w&sslmode=require"
        );
        assert!(Transport::of("postgres://u@db/forq?sslmode=verify-fuII").is_err());
        assert!(Transport::of("postgres://u@db/forq?sslrootcert=%zz").is_err());
    }
}
