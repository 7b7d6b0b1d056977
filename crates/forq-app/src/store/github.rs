//! What the store keeps of GitHub: the repositories a GitHub App's
//! installations hold (kept by the `installation` webhooks, so every
//! server and worker on the store agrees), and what forq said on GitHub
//! once, so it is never said twice across redeliveries, restarts and
//! machines.

use super::db::{vals, Val};
use super::{now_ms, Store, StoreError};

impl Store {
    /// Records that `installation` holds each of `repos` (`OWNER/REPO`).
    pub fn install_repos(&self, installation: u64, repos: &[String]) -> Result<(), StoreError> {
        let now = now_ms() as i64;
        self.write(|c| {
            for repo in repos {
                c.exec(
                    "INSERT INTO github_repos (repo, installation, at_ms) VALUES (?1, ?2, ?3)
                     ON CONFLICT (repo) DO UPDATE SET installation = excluded.installation, at_ms = excluded.at_ms",
                    vals![repo.to_lowercase(), installation as i64, now],
                )?;
            }
            Ok(Ok(()))
        })
    }

    /// Forgets `repos`, or, with none named, every repository of
    /// `installation` (the App was uninstalled); the repositories
    /// forgotten.
    pub fn uninstall_repos(
        &self,
        installation: u64,
        repos: Option<&[String]>,
    ) -> Result<Vec<String>, StoreError> {
        self.write(|c| {
            let gone: Vec<String> = match repos {
                Some(repos) => repos.iter().map(|r| r.to_lowercase()).collect(),
                None => c
                    .rows(
                        "SELECT repo FROM github_repos WHERE installation = ?1",
                        vals![installation as i64],
                    )?
                    .into_iter()
                    .filter_map(|r| r.into_iter().next().and_then(Val::into_text))
                    .collect(),
            };
            for repo in &gone {
                c.exec(
                    "DELETE FROM github_repos WHERE repo = ?1 AND installation = ?2",
                    vals![repo, installation as i64],
                )?;
            }
            Ok(Ok(gone))
        })
    }

    /// The installation that holds `repo`, if the store knows one.
    pub fn installation_of(&self, repo: &str) -> Result<Option<u64>, StoreError> {
        self.with(|c| {
            Ok(c.value(
                "SELECT installation FROM github_repos WHERE repo = ?1",
                vals![repo.to_lowercase()],
            )?
            .int()
            .map(|i| i as u64))
        })
    }

    /// Every repository the store knows installed, with its installation,
    /// by name.
    pub fn installed_repos(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let rows = self.with(|c| {
            c.rows(
                "SELECT repo, installation FROM github_repos ORDER BY repo",
                &[],
            )
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|r| {
                let mut r = r.into_iter();
                let repo = r.next()?.into_text()?;
                Some((repo, r.next()?.int()? as u64))
            })
            .collect())
    }

    /// What forq said under `key` (the comment's URL), if it did.
    pub fn said(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.with(|c| {
            Ok(
                c.value("SELECT url FROM github_said WHERE key = ?1", vals![key])?
                    .into_text(),
            )
        })
    }

    /// Records that forq said `key` at `url`; `false` when it was recorded
    /// already (the first record stands).
    pub fn record_said(&self, key: &str, url: &str) -> Result<bool, StoreError> {
        let now = now_ms() as i64;
        self.with(|c| {
            Ok(c.exec(
                "INSERT INTO github_said (key, url, at_ms) VALUES (?1, ?2, ?3) ON CONFLICT (key) DO NOTHING",
                vals![key, url, now],
            )? == 1)
        })
    }
}
