//! Statements and def-use on demand. An update leaves them out (unless
//! [`IndexOptions::eager_flow`](crate::IndexOptions::eager_flow)): most
//! files are never asked about, and computing them for all costs as much
//! as the rest of a cold index. The first question about a file computes
//! them from the file as it was indexed (its hash is checked) and keeps
//! them; an update that rewrites the file drops them again.

use crate::error::{Error, Result};
use crate::extract::{self, Queries};
use crate::index::{git_blob_id, on_threads, thread_count, Index};
use crate::lang::Lang;
use crate::store::Store;

/// Files computed in one go beyond which the WAL is folded back at once.
const CHECKPOINT_FILES: usize = 64;

/// Which files' flow a question needs.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Needed<'a> {
    /// Every parsed file (the audit of unused definitions).
    All,
    /// One file.
    File(&'a str),
    /// The files whose text holds this name (the uses of a variable).
    Mentioning(&'a str),
}

/// A parsed file without stored flow.
struct Missing {
    fid: i64,
    path: String,
    lang: Lang,
    hash: String,
}

impl Index {
    /// Computes and stores the statements and def-use of every indexed file
    /// that lacks them (all of them after a cold index), on the index's
    /// parser threads; returns how many files were computed. Questions
    /// about a file's flow do this for the files they need, so calling it
    /// is only a way to pay the whole cost at once. Does nothing for an
    /// index opened with [`IndexOptions::flow`](crate::IndexOptions::flow)
    /// off.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// std::fs::write(dir.path().join("m.py"), "x = 1\nprint(x)\n").unwrap();
    /// let index = forq_graph::Index::open_current(dir.path()).unwrap();
    /// assert_eq!(index.stats().unwrap().statements, 0);
    /// assert_eq!(index.compute_flow().unwrap(), 1);
    /// assert_eq!(index.stats().unwrap().statements, 2);
    /// assert_eq!(index.compute_flow().unwrap(), 0);
    /// ```
    pub fn compute_flow(&self) -> Result<usize> {
        self.check_complete()?;
        self.fill_flow(Needed::All)
    }

    /// Computes the flow a question needs and the index lacks.
    pub(crate) fn fill_flow(&self, needed: Needed<'_>) -> Result<usize> {
        if !self.options.flow {
            return Ok(0);
        }
        let missing = self.missing_flow(needed)?;
        if missing.is_empty() {
            return Ok(0);
        }
        let mention = match needed {
            Needed::Mentioning(name) => Some(memchr::memmem::Finder::new(name.as_bytes())),
            _ => None,
        };
        let db = self.store.db();
        let tx = self.store.conn.unchecked_transaction().map_err(&db)?;
        let mut computed = 0;
        let root = &self.root;
        on_threads(
            thread_count(&self.options, missing.len()),
            missing.len(),
            |parser, i| -> Result<Option<(i64, extract::FileFacts)>> {
                let m = &missing[i];
                let path = root.join(&m.path);
                let source = std::fs::read(&path).map_err(|source| Error::Io {
                    op: "read",
                    path,
                    source,
                })?;
                if mention.as_ref().is_some_and(|f| f.find(&source).is_none()) {
                    return Ok(None);
                }
                if git_blob_id(&source) != m.hash {
                    return Err(Error::Stale {
                        file: m.path.clone(),
                    });
                }
                let mut facts = extract::FileFacts {
                    flow: true,
                    ..extract::FileFacts::default()
                };
                if let Some(tree) = extract::parse(parser, m.lang, &source) {
                    let options = extract::Options { flow: true };
                    facts =
                        extract::extract(Queries::get(m.lang)?, &tree, &m.path, &source, options);
                }
                Ok(Some((m.fid, facts)))
            },
            |done| {
                if let Some((fid, facts)) = done? {
                    Store::write_flow(&tx, fid, &facts).map_err(&db)?;
                    computed += 1;
                }
                Ok(())
            },
        )?;
        tx.commit().map_err(&db)?;
        if computed >= CHECKPOINT_FILES {
            // A large fill sits in the WAL: fold it into the database now,
            // so the disk holds it once.
            self.store
                .conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .map_err(&db)?;
        }
        Ok(computed)
    }

    /// The parsed files `needed` names that have no stored flow.
    fn missing_flow(&self, needed: Needed<'_>) -> Result<Vec<Missing>> {
        let db = self.store.db();
        let only = match needed {
            Needed::File(path) => Some(path),
            Needed::All | Needed::Mentioning(_) => None,
        };
        let mut stmt = self
            .store
            .conn
            .prepare_cached(
                "SELECT f.fid, f.path, f.lang, f.hash FROM files f
                 WHERE f.status = 'parsed' AND (?1 IS NULL OR f.path = ?1)
                   AND NOT EXISTS (SELECT 1 FROM flow l WHERE l.fid = f.fid)
                 ORDER BY f.fid",
            )
            .map_err(&db)?;
        let rows = stmt
            .query_map([only], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get::<_, String>(2)?, r.get(3)?))
            })
            .map_err(&db)?;
        let mut out = Vec::new();
        for row in rows {
            let (fid, path, lang, hash) = row.map_err(&db)?;
            if let Some(lang) = Lang::ALL.into_iter().find(|l| l.name() == lang) {
                out.push(Missing {
                    fid,
                    path,
                    lang,
                    hash,
                });
            }
        }
        Ok(out)
    }
}
