//! Changing the workspace: `edit` (exact, unique search and replace, with a
//! whitespace-tolerant fallback), `create_file`, `delete_file`. A change
//! that leaves a file of a known language with a syntax error it did not
//! have is refused, and the file is left as it was.

use std::path::Path;

use async_trait::async_trait;
use forq_graph::Lang;
use serde_json::Value;

use super::{object_schema, path_arg, string_arg, Tool, ToolContext, ToolOutput};
use crate::message::ToolSpec;

/// Where the first syntax error of `text` lies (1-based line, column), if
/// `path` is of a language forq parses and the text has one.
pub(crate) fn syntax_error(path: &Path, text: &str) -> Option<(usize, usize)> {
    Lang::of_path(path)?.syntax_error(text)
}

/// Refuses `new` for `path` when it brings a syntax error `old` did not have.
fn check_syntax(path: &Path, old: Option<&str>, new: &str) -> Result<(), ToolOutput> {
    let Some((line, col)) = syntax_error(path, new) else {
        return Ok(());
    };
    if old.is_some_and(|o| syntax_error(path, o).is_some()) {
        return Ok(()); // it was already broken; not this edit's doing
    }
    let near = new
        .lines()
        .nth(line - 1)
        .map(|l| l.trim().chars().take(120).collect::<String>())
        .unwrap_or_default();
    Err(ToolOutput::error(format!(
        "refused: the change leaves {} with a syntax error at line {line}, column {col} (`{near}`); the file is unchanged",
        path.display()
    )))
}

/// The lines around `from..=to` (1-based) of `text`, numbered.
fn snippet(text: &str, from: usize, to: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = from.saturating_sub(3).max(1);
    let end = (to + 2).min(lines.len());
    (start..=end)
        .map(|n| format!("{n:>5}| {}", lines[n - 1]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Line (1-based) at byte offset `at`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// `old` found again, ignoring each line's leading and trailing whitespace,
/// when exactly one place matches: the byte range of the matching whole
/// lines, and how the model's indentation maps to the file's there
/// (`Err(n)`: `n` places match).
#[allow(clippy::type_complexity)]
fn tolerant_match(
    text: &str,
    old: &str,
) -> Result<Option<(usize, usize, Vec<(String, String)>)>, usize> {
    let mut wanted: Vec<&str> = old.lines().skip_while(|l| l.trim().is_empty()).collect();
    while wanted.last().is_some_and(|l| l.trim().is_empty()) {
        wanted.pop();
    }
    if wanted.is_empty() {
        return Ok(None);
    }
    let mut starts = vec![0];
    starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
    let lines: Vec<&str> = text.lines().collect();
    let found: Vec<usize> = (0..(lines.len() + 1).saturating_sub(wanted.len()))
        .filter(|&i| {
            wanted
                .iter()
                .enumerate()
                .all(|(k, w)| lines[i + k].trim() == w.trim())
        })
        .collect();
    match found.as_slice() {
        [] => Ok(None),
        [i] => {
            let last = i + wanted.len() - 1;
            let mut map: Vec<(String, String)> = Vec::new();
            for (k, w) in wanted.iter().enumerate() {
                let pair = (indent(w).to_owned(), indent(lines[i + k]).to_owned());
                if !w.trim().is_empty() && !map.iter().any(|(m, _)| *m == pair.0) {
                    map.push(pair);
                }
            }
            Ok(Some((starts[*i], starts[last] + lines[last].len(), map)))
        }
        many => Err(many.len()),
    }
}

/// `edit(path, old, new)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Edit;

#[async_trait]
impl Tool for Edit {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "edit".to_owned(),
            description: "Replace the text `old` in a file with `new`. `old` must occur exactly once: copy it from view_file, with enough lines to be unique. A change that introduces a syntax error is refused.".to_owned(),
            parameters: object_schema(
                &[
                    ("path", "string", "File path relative to the repository root"),
                    ("old", "string", "The exact text to replace"),
                    ("new", "string", "The text to put in its place"),
                ],
                &[],
            ),
        }
    }

    async fn call(&self, cx: &ToolContext<'_>, args: &Value) -> ToolOutput {
        let (path, old, new) = match (
            path_arg(args, "path"),
            string_arg(args, "old"),
            string_arg(args, "new"),
        ) {
            (Ok(p), Ok(o), Ok(n)) => (p, o, n),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return e,
        };
        if old.is_empty() {
            return ToolOutput::error("`old` is empty: to write a new file use create_file");
        }
        let text = match cx
            .sandbox
            .read_file_within(path, super::files::MAX_FILE_BYTES)
            .await
        {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(_) => {
                return ToolOutput::error(format!(
                    "no file {}: use find_files, or create_file for a new one",
                    path.display()
                ))
            }
        };
        let at: Vec<usize> = text.match_indices(old).map(|(i, _)| i).collect();
        let (updated, first_line, new_lines, note) = match at.as_slice() {
            [i] => {
                let updated = format!("{}{new}{}", &text[..*i], &text[i + old.len()..]);
                (updated, line_of(&text, *i), new.lines().count().max(1), "")
            }
            [] => match tolerant_match(&text, old) {
                Ok(Some((begin, end, map))) => {
                    // Each line's indentation as the model wrote it, mapped
                    // to the file's where the matched lines show how.
                    let reindented: Vec<String> = new
                        .lines()
                        .map(|l| match map.iter().find(|(m, _)| *m == indent(l)) {
                            Some((_, file)) if !l.trim().is_empty() => {
                                format!("{file}{}", l.trim_start())
                            }
                            _ => l.to_owned(),
                        })
                        .collect();
                    let updated =
                        format!("{}{}{}", &text[..begin], reindented.join("\n"), &text[end..]);
                    (
                        updated,
                        line_of(&text, begin),
                        reindented.len().max(1),
                        " (matched ignoring whitespace)",
                    )
                }
                Ok(None) => {
                    return ToolOutput::error(format!(
                        "`old` does not occur in {}, even ignoring whitespace: view_file the region and copy it exactly",
                        path.display()
                    ))
                }
                Err(n) => {
                    return ToolOutput::error(format!(
                        "`old` occurs {n} times in {} (ignoring whitespace): include more lines to make it unique",
                        path.display()
                    ))
                }
            },
            many => {
                let lines: Vec<String> = many
                    .iter()
                    .take(10)
                    .map(|i| line_of(&text, *i).to_string())
                    .collect();
                return ToolOutput::error(format!(
                    "`old` occurs {} times in {}, at lines {}: include more lines to make it unique",
                    many.len(),
                    path.display(),
                    lines.join(", ")
                ));
            }
        };
        if let Err(refused) = check_syntax(path, Some(&text), &updated) {
            return refused;
        }
        if let Err(e) = cx.sandbox.write_file(path, updated.as_bytes()).await {
            return ToolOutput::error(format!("cannot write {}: {e}", path.display()));
        }
        let last = first_line + new_lines - 1;
        ToolOutput::ok(format!(
            "edited {}{note}; lines {first_line}-{last} now read:\n{}",
            path.display(),
            snippet(&updated, first_line, last)
        ))
    }
}

/// `create_file(path, content)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct CreateFile;

#[async_trait]
impl Tool for CreateFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "create_file".to_owned(),
            description: "Create a new file with this content (refused if it exists: use edit). Content with a syntax error is refused.".to_owned(),
            parameters: object_schema(
                &[
                    ("path", "string", "File path relative to the repository root"),
                    ("content", "string", "The whole content"),
                ],
                &[],
            ),
        }
    }

    async fn call(&self, cx: &ToolContext<'_>, args: &Value) -> ToolOutput {
        let (path, content) = match (path_arg(args, "path"), string_arg(args, "content")) {
            (Ok(p), Ok(c)) => (p, c),
            (Err(e), _) | (_, Err(e)) => return e,
        };
        if cx.sandbox.read_file(path).await.is_ok() || cx.sandbox.list_dir(path).await.is_ok() {
            return ToolOutput::error(format!("{} exists: change it with edit", path.display()));
        }
        if let Err(refused) = check_syntax(path, None, content) {
            return refused;
        }
        match cx.sandbox.write_file(path, content.as_bytes()).await {
            Ok(()) => ToolOutput::ok(format!(
                "created {} ({} lines)",
                path.display(),
                content.lines().count()
            )),
            Err(e) => ToolOutput::error(format!("cannot create {}: {e}", path.display())),
        }
    }
}

/// `delete_file(path)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeleteFile;

#[async_trait]
impl Tool for DeleteFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "delete_file".to_owned(),
            description: "Delete a file.".to_owned(),
            parameters: object_schema(
                &[(
                    "path",
                    "string",
                    "File path relative to the repository root",
                )],
                &[],
            ),
        }
    }

    async fn call(&self, cx: &ToolContext<'_>, args: &Value) -> ToolOutput {
        let path = match path_arg(args, "path") {
            Ok(p) => p,
            Err(e) => return e,
        };
        if cx.sandbox.read_file(path).await.is_err() {
            return ToolOutput::error(format!("no file {}", path.display()));
        }
        match cx.sandbox.remove(path).await {
            Ok(()) => ToolOutput::ok(format!("deleted {}", path.display())),
            Err(e) => ToolOutput::error(format!("cannot delete {}: {e}", path.display())),
        }
    }
}
