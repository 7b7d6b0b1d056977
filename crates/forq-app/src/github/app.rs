//! forq as a GitHub App: the App's private key signs a short JWT (RS256),
//! which buys an installation access token per installation; a request on
//! a repository carries the token of the installation that holds it.
//!
//! Tokens live in memory only, and are bought again five minutes before
//! they expire (or at once, when GitHub refuses one it had given). The key
//! is read from a file the operator names and is never printed: the
//! `Debug` of everything here says only whether it is set.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::{Deserialize, Serialize};

use super::GithubError;

/// A token is bought again when less than this is left of it.
const REFRESH_MARGIN: Duration = Duration::from_secs(300);

/// A GitHub App's id and private key.
pub struct AppKey {
    id: u64,
    key: EncodingKey,
}

impl std::fmt::Debug for AppKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppKey")
            .field("id", &self.id)
            .field("key", &"(set)")
            .finish()
    }
}

#[derive(Serialize)]
struct Claims {
    iat: i64,
    exp: i64,
    iss: String,
}

impl AppKey {
    /// App `id`'s key from its PEM text (the `.pem` GitHub hands out:
    /// PKCS#1 or PKCS#8 RSA).
    pub fn from_pem(id: u64, pem: &[u8]) -> Result<AppKey, GithubError> {
        let key = EncodingKey::from_rsa_pem(pem).map_err(|e| GithubError::AppKey {
            path: None,
            message: e.to_string(),
        })?;
        Ok(AppKey { id, key })
    }

    /// App `id`'s key from the PEM file at `path`. An error names the file,
    /// never what is in it.
    pub fn from_file(id: u64, path: &Path) -> Result<AppKey, GithubError> {
        let pem = std::fs::read(path).map_err(|e| GithubError::AppKey {
            path: Some(path.to_owned()),
            message: e.to_string(),
        })?;
        AppKey::from_pem(id, &pem).map_err(|e| match e {
            GithubError::AppKey { message, .. } => GithubError::AppKey {
                path: Some(path.to_owned()),
                message,
            },
            other => other,
        })
    }

    /// The App's id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// A JWT that speaks for the App for nine minutes (GitHub takes ten at
    /// most), issued a minute in the past against clock drift.
    pub(super) fn jwt(&self) -> Result<String, GithubError> {
        let now = jiff::Timestamp::now().as_second();
        let claims = Claims {
            iat: now - 60,
            exp: now + 540,
            iss: self.id.to_string(),
        };
        jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &self.key).map_err(|e| {
            GithubError::AppKey {
                path: None,
                message: e.to_string(),
            }
        })
    }
}

/// An installation access token and when it ends.
#[derive(Clone)]
pub(super) struct Token {
    pub(super) secret: String,
    expires: jiff::Timestamp,
}

impl Token {
    /// Whether it is still good for more than the refresh margin.
    fn fresh(&self) -> bool {
        let margin = jiff::SignedDuration::try_from(REFRESH_MARGIN).unwrap_or_default();
        jiff::Timestamp::now()
            .checked_add(margin)
            .is_ok_and(|soon| soon < self.expires)
    }
}

/// `POST /app/installations/ID/access_tokens`' reply.
#[derive(Deserialize)]
pub(super) struct Granted {
    token: String,
    expires_at: String,
}

impl Granted {
    pub(super) fn token(self, url: &str) -> Result<Token, GithubError> {
        let expires =
            self.expires_at
                .parse::<jiff::Timestamp>()
                .map_err(|e| GithubError::Shape {
                    url: url.to_owned(),
                    message: format!("expires_at {:?}: {e}", self.expires_at),
                })?;
        Ok(Token {
            secret: self.token,
            expires,
        })
    }
}

/// The App's key and what it has bought: which installation holds each
/// repository asked about, and each installation's token.
pub(super) struct Installations {
    pub(super) key: AppKey,
    repos: Mutex<HashMap<String, u64>>,
    /// Tokens by installation and the one repository each is scoped to
    /// (`None`: the installation's whole, for listing its repositories).
    tokens: Mutex<HashMap<(u64, Option<String>), Token>>,
}

impl std::fmt::Debug for Installations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Installations")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Installations {
    pub(super) fn new(key: AppKey) -> Installations {
        Installations {
            key,
            repos: Mutex::default(),
            tokens: Mutex::default(),
        }
    }

    /// The installation known to hold `repo` (`OWNER/REPO`, any case).
    pub(super) fn installation(&self, repo: &str) -> Option<u64> {
        lock(&self.repos).get(&repo.to_lowercase()).copied()
    }

    pub(super) fn remember(&self, repo: &str, installation: u64) {
        lock(&self.repos).insert(repo.to_lowercase(), installation);
    }

    /// Forgets which installation holds `repo`: the next request on it
    /// asks GitHub again.
    pub(super) fn forget(&self, repo: &str) {
        lock(&self.repos).remove(&repo.to_lowercase());
    }

    /// Installation `id`'s token scoped to `repo`, while it is fresh.
    pub(super) fn token(&self, id: u64, repo: Option<&str>) -> Option<String> {
        lock(&self.tokens)
            .get(&(id, repo.map(str::to_lowercase)))
            .filter(|t| t.fresh())
            .map(|t| t.secret.clone())
    }

    pub(super) fn keep(&self, id: u64, repo: Option<&str>, token: Token) {
        lock(&self.tokens).insert((id, repo.map(str::to_lowercase)), token);
    }

    /// Drops installation `id`'s tokens (GitHub refused one).
    pub(super) fn drop_token(&self, id: u64) {
        lock(&self.tokens).retain(|(i, _), _| *i != id);
    }
}
