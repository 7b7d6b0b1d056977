//! Names that come from outside forq — a row of a shared store, a webhook,
//! a fork — as types made only by a parser that refuses what is not one:
//! a [`RunId`] is one safe path component, an [`ObjectId`] is hex, a
//! [`BranchName`] is a branch git takes and never an option or a refspec.
//! A string becomes a path, a git argument or a push target only through
//! one of these.
//!
//! ```
//! use forq_app::ids::{BranchName, ObjectId, RunId};
//!
//! assert!(RunId::parse("20261207-191729-0a3f").is_ok());
//! assert!(RunId::parse("/etc").is_err());
//! assert!(RunId::parse("../x").is_err());
//! assert!(ObjectId::parse("--upload-pack=touch PWNED").is_err());
//! assert!(ObjectId::parse(&"a".repeat(40)).is_ok());
//! assert!(BranchName::parse("forq/fix-7").is_ok());
//! assert!(BranchName::parse("x:refs/heads/main").is_err());
//! assert!(BranchName::parse("--force").is_err());
//! ```

use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A string that is not the id it was read as: what it was meant to be,
/// and the string (quoted, cut at 80 characters).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} {found:?} is not one: {rule}")]
pub struct IdError {
    /// What the string was read as (`run id`, `commit id`, `branch name`).
    pub what: &'static str,
    /// The string, cut at 80 characters.
    pub found: String,
    /// What one looks like.
    pub rule: &'static str,
}

fn refuse(what: &'static str, found: &str, rule: &'static str) -> IdError {
    IdError {
        what,
        found: found.chars().take(80).collect(),
        rule,
    }
}

macro_rules! string_id {
    ($name:ident) => {
        impl $name {
            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }
        impl Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }
        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
        impl AsRef<std::ffi::OsStr> for $name {
            fn as_ref(&self) -> &std::ffi::OsStr {
                self.0.as_ref()
            }
        }
        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(&self.0)
            }
        }
        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }
        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }
        impl PartialEq<$name> for str {
            fn eq(&self, other: &$name) -> bool {
                self == other.0
            }
        }
        impl PartialEq<$name> for &str {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }
        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }
        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }
        impl std::str::FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, IdError> {
                $name::parse(s)
            }
        }
        impl TryFrom<String> for $name {
            type Error = IdError;
            fn try_from(s: String) -> Result<Self, IdError> {
                $name::parse(&s)
            }
        }
        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                $name::parse(&s).map_err(serde::de::Error::custom)
            }
        }
    };
}

/// A run's id: what names its directory (`runs/ID/`) on every machine
/// that drives it. forq makes them as `YYYYMMDD-HHMMSS-xxxx`; any id is
/// one path component of ASCII letters, digits, `-` and `_`, at most 64
/// long, never beginning with `-` (so never `/etc`, `..` or an option).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunId(String);

string_id!(RunId);

impl RunId {
    /// `s`, when it is a run id.
    pub fn parse(s: &str) -> Result<RunId, IdError> {
        let ok = !s.is_empty()
            && s.len() <= 64
            && !s.starts_with('-')
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if ok {
            Ok(RunId(s.to_owned()))
        } else {
            Err(refuse(
                "run id",
                s,
                "one path component of ASCII letters, digits, `-` and `_`, at most 64, not beginning with `-`",
            ))
        }
    }

    /// A new id for a run created at `now_ms`: the second, and 16 random
    /// bits.
    pub(crate) fn new_at(now_ms: u64) -> RunId {
        let at = i64::try_from(now_ms)
            .ok()
            .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        RunId(format!(
            "{}-{:04x}",
            at.strftime("%Y%m%d-%H%M%S"),
            fastrand::u16(..)
        ))
    }
}

/// A git object's id (a commit, a tree): 40 or 64 lowercase hex digits,
/// the way git prints them. Never a revision expression, a ref or an
/// option.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId(String);

string_id!(ObjectId);

impl ObjectId {
    /// `s`, when it is an object id.
    pub fn parse(s: &str) -> Result<ObjectId, IdError> {
        let ok = (s.len() == 40 || s.len() == 64)
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if ok {
            Ok(ObjectId(s.to_owned()))
        } else {
            Err(refuse(
                "commit id",
                s,
                "40 or 64 lowercase hex digits, as git prints an object's id",
            ))
        }
    }

    /// Its first 8 digits, for messages.
    pub fn short(&self) -> &str {
        &self.0[..8]
    }
}

/// A branch name forq commits on, bundles and pushes: ASCII letters,
/// digits and `/ _ . -`, at most 200 long; no component empty or
/// beginning with `.`, none ending in `.lock`, no `..`, and never
/// beginning with `-` — so never an option, a refspec (`a:b`), a range
/// (`a..b`) or a revision expression.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BranchName(String);

string_id!(BranchName);

impl BranchName {
    /// `s`, when it is a branch name forq uses.
    pub fn parse(s: &str) -> Result<BranchName, IdError> {
        let chars_ok = !s.is_empty()
            && s.len() <= 200
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'_' | b'.' | b'-'));
        let shape_ok = !s.starts_with('-')
            && !s.contains("..")
            && s.split('/')
                .all(|part| !part.is_empty() && !part.starts_with('.') && !part.ends_with(".lock"))
            && !s.ends_with('.');
        if chars_ok && shape_ok {
            Ok(BranchName(s.to_owned()))
        } else {
            Err(refuse(
                "branch name",
                s,
                "ASCII letters, digits and `/ _ . -`, no `..`, no component empty or beginning with \
                 `.`, not beginning with `-`",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check<T: std::fmt::Debug>(
        parse: fn(&str) -> Result<T, IdError>,
        good: &[&str],
        bad: &[&str],
    ) {
        for s in good {
            assert!(parse(s).is_ok(), "{s:?} should parse");
        }
        for s in bad {
            assert!(parse(s).is_err(), "{s:?} should be refused");
        }
    }

    #[test]
    fn run_ids_are_one_safe_component() {
        check(
            RunId::parse,
            &["20261207-191729-0a3f", "r-old", "run_1"],
            &[
                "",
                "/etc",
                "..",
                ".",
                "a/b",
                "-rf",
                "--upload-pack=x",
                "a b",
                "a\nb",
                "é",
                &"a".repeat(65),
            ],
        );
        let made = RunId::new_at(1_780_000_000_000);
        assert!(RunId::parse(&made).is_ok(), "{made}");
    }

    #[test]
    fn object_ids_are_hex_and_nothing_else() {
        check(
            ObjectId::parse,
            &[&"0123456789abcdef".repeat(4)[..40], &"f".repeat(64)],
            &[
                "--upload-pack=touch PWNED; git-upload-pack",
                "HEAD",
                "main",
                &"A".repeat(40),
                &"a".repeat(39),
                &"a".repeat(41),
                "a1b2c3",
            ],
        );
    }

    #[test]
    fn branch_names_are_never_options_refspecs_or_ranges() {
        check(
            BranchName::parse,
            &[
                "main",
                "forq/fix-7-20261207-191729-0a3f",
                "release/1.2",
                "a_b.c",
            ],
            &[
                "",
                "--force",
                "-x",
                "x:refs/heads/main",
                "+main",
                "a..b",
                "a/../b",
                "/a",
                "a/",
                "a//b",
                ".hidden",
                "a/.b",
                "a.lock",
                "a.",
                "a b",
                "a~1",
                "a^",
                "a@{0}",
                "a\\b",
                "ref\u{0}",
            ],
        );
    }

    #[test]
    fn a_stored_id_that_is_not_one_fails_to_deserialize() {
        let bad: Result<ObjectId, _> = serde_json::from_str("\"--upload-pack=x\"");
        assert!(bad.is_err());
        let good: RunId = serde_json::from_str("\"20261207-191729-0a3f\"").unwrap();
        assert_eq!(
            format!("{good:<22}|"),
            "20261207-191729-0a3f  |",
            "tables pad it"
        );
        assert_eq!(
            serde_json::to_string(&good).unwrap(),
            "\"20261207-191729-0a3f\""
        );
    }
}
