//! Reading the workspace: `view_file`, `find_files`, `search`, and the
//! walk they share (the repository's `.gitignore` files respected, `.git`
//! and `.forq` never entered).

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use forq_sandbox::Sandbox;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;
use serde_json::Value;

use super::{object_schema, path_arg, string_arg, Tool, ToolContext, ToolOutput};
use crate::message::ToolSpec;

/// Lines `view_file` shows at once.
pub(crate) const WINDOW: usize = 100;
/// Longest line shown; the rest is cut with a marker.
const LINE_CHARS: usize = 400;
/// Most matches `search` returns; more is refused with a hint.
pub(crate) const MAX_HITS: usize = 100;
/// Most paths `find_files` lists.
const MAX_FILES_LISTED: usize = 200;
/// Most files a walk visits.
const MAX_WALK: usize = 50_000;
/// Files larger than this are not searched.
const MAX_SEARCH_BYTES: u64 = 1 << 20;
/// The largest file the tools read whole (to view or edit): past it, a
/// file is refused before it is read, whatever size it claims.
pub(crate) const MAX_FILE_BYTES: u64 = 8 << 20;

fn cut(line: &str) -> String {
    if line.chars().count() <= LINE_CHARS {
        return line.to_owned();
    }
    let kept: String = line.chars().take(LINE_CHARS).collect();
    format!("{kept} …[line cut]")
}

/// Files of the workspace under `under` (`""`: all), in name order, with
/// the `.gitignore` files on the way applied; and whether the walk stopped
/// at its cap.
pub(crate) async fn walk(sandbox: &dyn Sandbox, under: &Path) -> (Vec<PathBuf>, bool) {
    let mut files = Vec::new();
    // A single file.
    if !under.as_os_str().is_empty() && sandbox.list_dir(under).await.is_err() {
        if sandbox
            .read_file_within(under, MAX_FILE_BYTES)
            .await
            .is_ok()
        {
            files.push(under.to_path_buf());
        }
        return (files, false);
    }
    // The rules of the directories above `under`, root first.
    let mut rules: Vec<Gitignore> = Vec::new();
    if !under.as_os_str().is_empty() {
        let mut above: Vec<&Path> = under.ancestors().skip(1).collect();
        above.reverse();
        for dir in above {
            if let Some(g) = gitignore_of(sandbox, dir).await {
                rules.push(g);
            }
        }
    }
    let mut stack = vec![(under.to_path_buf(), rules)];
    let mut truncated = false;
    while let Some((dir, mut rules)) = stack.pop() {
        if let Some(g) = gitignore_of(sandbox, &dir).await {
            rules.push(g);
        }
        let Ok(entries) = sandbox.list_dir(&dir).await else {
            continue;
        };
        let mut subdirs = Vec::new();
        for e in entries {
            let path = dir.join(&e.name);
            if e.is_dir && matches!(e.name.as_str(), ".git" | ".forq") {
                continue;
            }
            if ignored(&rules, &path, e.is_dir) {
                continue;
            }
            if e.is_dir {
                subdirs.push(path);
            } else {
                if files.len() >= MAX_WALK {
                    truncated = true;
                    break;
                }
                files.push(path);
            }
        }
        for d in subdirs.into_iter().rev() {
            stack.push((d, rules.clone()));
        }
    }
    files.sort();
    (files, truncated)
}

/// Whether the nearest rule that matches `path` ignores it.
fn ignored(rules: &[Gitignore], path: &Path, is_dir: bool) -> bool {
    for g in rules.iter().rev() {
        match g.matched_path_or_any_parents(path, is_dir) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => {}
        }
    }
    false
}

async fn gitignore_of(sandbox: &dyn Sandbox, dir: &Path) -> Option<Gitignore> {
    let bytes = sandbox
        .read_file_within(&dir.join(".gitignore"), MAX_SEARCH_BYTES)
        .await
        .ok()?;
    let mut b = GitignoreBuilder::new(dir);
    for line in String::from_utf8_lossy(&bytes).lines() {
        let _ = b.add_line(None, line);
    }
    b.build().ok()
}

/// `view_file(path, start_line?)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ViewFile;

#[async_trait]
impl Tool for ViewFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "view_file".to_owned(),
            description: format!(
                "Show {WINDOW} lines of a file with line numbers, from start_line (default 1), and how many lines lie above and below."
            ),
            parameters: {
                let mut s = object_schema(
                    &[("path", "string", "File path relative to the repository root")],
                    &[],
                );
                s["properties"]["start_line"] =
                    serde_json::json!({"type": "integer", "description": "First line to show (1-based)"});
                s
            },
        }
    }

    async fn call(&self, cx: &ToolContext<'_>, args: &Value) -> ToolOutput {
        let path = match path_arg(args, "path") {
            Ok(p) => p,
            Err(e) => return e,
        };
        let start = args
            .get("start_line")
            .and_then(Value::as_u64)
            .unwrap_or(1)
            .max(1) as usize;
        let bytes = match cx.sandbox.read_file_within(path, MAX_FILE_BYTES).await {
            Ok(b) => b,
            Err(forq_sandbox::Error::TooLarge { .. }) => {
                return ToolOutput::error(format!(
                    "{} is larger than {} MiB: search it with search_code instead",
                    path.display(),
                    MAX_FILE_BYTES >> 20
                ))
            }
            Err(_) => {
                return ToolOutput::error(format!(
                    "no file {}: use find_files to see what exists",
                    path.display()
                ))
            }
        };
        if bytes.contains(&0) {
            return ToolOutput::error(format!("{} is a binary file", path.display()));
        }
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.lines().collect();
        if lines.is_empty() {
            return ToolOutput::ok(format!("{} is empty", path.display()));
        }
        if start > lines.len() {
            return ToolOutput::error(format!(
                "{} has {} lines; start_line {start} is past the end",
                path.display(),
                lines.len()
            ));
        }
        let end = (start - 1 + WINDOW).min(lines.len());
        let mut out = format!(
            "{} lines {start}-{end} of {} ({} above, {} below)\n",
            path.display(),
            lines.len(),
            start - 1,
            lines.len() - end
        );
        for (i, line) in lines[start - 1..end].iter().enumerate() {
            out.push_str(&format!("{:>5}| {}\n", start + i, cut(line)));
        }
        if end < lines.len() {
            out.push_str(&format!(
                "[{} more lines: view_file with start_line {}]\n",
                lines.len() - end,
                end + 1
            ));
        }
        ToolOutput::ok(out)
    }
}

/// `find_files(glob)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct FindFiles;

#[async_trait]
impl Tool for FindFiles {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "find_files".to_owned(),
            description: "List files whose path matches a glob (`**/*.py`, `src/*.rs`; a pattern without `/` matches file names anywhere), .gitignore respected.".to_owned(),
            parameters: object_schema(&[("glob", "string", "The glob")], &[]),
        }
    }

    async fn call(&self, cx: &ToolContext<'_>, args: &Value) -> ToolOutput {
        let pattern = match string_arg(args, "glob") {
            Ok(p) => p,
            Err(e) => return e,
        };
        let glob = match globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
        {
            Ok(g) => g.compile_matcher(),
            Err(e) => return ToolOutput::error(format!("not a glob: {e}")),
        };
        let by_name = !pattern.contains('/');
        let (files, truncated) = walk(cx.sandbox, Path::new("")).await;
        let hits: Vec<&PathBuf> = files
            .iter()
            .filter(|f| {
                if by_name {
                    f.file_name().is_some_and(|n| glob.is_match(n))
                } else {
                    glob.is_match(f)
                }
            })
            .collect();
        if hits.is_empty() {
            return ToolOutput::ok(format!("no file matches {pattern:?}"));
        }
        let mut out: Vec<String> = hits
            .iter()
            .take(MAX_FILES_LISTED)
            .map(|p| p.display().to_string())
            .collect();
        if hits.len() > MAX_FILES_LISTED {
            out.push(format!(
                "[{} more: narrow the glob]",
                hits.len() - MAX_FILES_LISTED
            ));
        }
        if truncated {
            out.push(format!("[the walk stopped after {MAX_WALK} files]"));
        }
        ToolOutput::ok(out.join("\n"))
    }
}

/// `search(pattern, path?)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Search;

#[async_trait]
impl Tool for Search {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "search".to_owned(),
            description: format!(
                "Search file contents for a regular expression (Rust regex syntax), under path if given, .gitignore respected. More than {MAX_HITS} matches are refused: narrow the pattern or the path."
            ),
            parameters: object_schema(
                &[
                    ("pattern", "string", "The regular expression"),
                    ("path", "string", "A file or directory to search under"),
                ],
                &["path"],
            ),
        }
    }

    async fn call(&self, cx: &ToolContext<'_>, args: &Value) -> ToolOutput {
        let pattern = match string_arg(args, "pattern") {
            Ok(p) => p,
            Err(e) => return e,
        };
        let re = match regex::Regex::new(pattern) {
            Ok(r) => r,
            Err(e) => return ToolOutput::error(format!("not a regular expression: {e}")),
        };
        let under = if args.get("path").is_some() {
            match path_arg(args, "path") {
                Ok(p) => p.to_path_buf(),
                Err(e) => return e,
            }
        } else {
            PathBuf::new()
        };
        let (files, _) = walk(cx.sandbox, &under).await;
        let mut hits = Vec::new();
        for file in &files {
            let Ok(bytes) = cx.sandbox.read_file_within(file, MAX_SEARCH_BYTES).await else {
                continue;
            };
            if bytes.len() as u64 > MAX_SEARCH_BYTES || bytes.contains(&0) {
                continue;
            }
            for (n, line) in String::from_utf8_lossy(&bytes).lines().enumerate() {
                if re.is_match(line) {
                    if hits.len() == MAX_HITS {
                        return ToolOutput::error(format!(
                            "more than {MAX_HITS} matches for {pattern:?}: narrow the pattern or give a path"
                        ));
                    }
                    let shown: String = line.trim().chars().take(200).collect();
                    hits.push(format!("{}:{}: {shown}", file.display(), n + 1));
                }
            }
        }
        if hits.is_empty() {
            return ToolOutput::ok(format!("no match for {pattern:?}"));
        }
        ToolOutput::ok(hits.join("\n"))
    }
}
