//! The context budget of a model: every request fitted to its window.
//!
//! A request is measured by a conservative estimate (three characters a
//! token, plus a little per message; real tokenizers give more characters
//! a token for code and prose). When it leaves less than a reply's floor,
//! history is condensed, oldest first: the issue (the first message), the
//! last exchanges and every tool call (the edits, with their arguments)
//! are kept; old tool outputs go first, then old assistant prose, then
//! whole old exchanges. `max_tokens` is then what is left, at most the
//! caller's. Tool outputs are capped when they come back, with a note of
//! what was cut. A server that still refuses the request as too long
//! says its window, and the loop fits to that.

use crate::message::{Message, Part, Request, Role};

/// The window of a model nothing says anything about: small enough for
/// the local servers people run (llama.cpp's default is smaller still, and
/// says so when it refuses).
pub const DEFAULT_CONTEXT_WINDOW: u32 = 8_192;

/// The least a reply is given; below it, history is condensed.
const REPLY_FLOOR: u32 = 512;

/// Exchanges at the end of the history never condensed.
const KEEP_LAST: usize = 4;

/// Estimated tokens of `text`.
fn tokens_of(text: &str) -> u32 {
    u32::try_from(text.len().div_ceil(3)).unwrap_or(u32::MAX)
}

/// Estimated tokens of a message: its parts, and a little for its frame.
fn message_tokens(m: &Message) -> u32 {
    let parts: u32 = m
        .parts
        .iter()
        .map(|p| match p {
            Part::Text { text } => tokens_of(text),
            Part::ToolCall {
                name, arguments, ..
            } => tokens_of(name) + tokens_of(&arguments.to_string()) + 8,
            Part::ToolResult { content, .. } => tokens_of(content) + 8,
        })
        .sum();
    parts + 4
}

/// Estimated tokens of everything `request` sends: the system prompt, the
/// tools' specifications and the messages.
pub fn request_tokens(request: &Request) -> u32 {
    let tools: u32 = request
        .tools
        .iter()
        .map(|t| {
            tokens_of(&t.name) + tokens_of(&t.description) + tokens_of(&t.parameters.to_string())
        })
        .sum();
    tokens_of(&request.system) + tools + messages_tokens(&request.messages)
}

fn messages_tokens(messages: &[Message]) -> u32 {
    messages.iter().map(message_tokens).sum()
}

/// What fitting a request did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fitted {
    /// Estimated tokens sent before condensing.
    pub before: u32,
    /// After.
    pub after: u32,
    /// Whether anything was condensed.
    pub condensed: bool,
}

/// Fits `request` into `window` tokens: condenses its history when the
/// prompt leaves less than a reply's floor, then gives the reply what is
/// left, at most `max_reply` and a quarter of the window.
pub fn fit(request: &mut Request, window: u32, max_reply: u32) -> Fitted {
    fit_scaled(request, window, max_reply, 1.0)
}

/// [`fit`] for a model whose tokenizer makes `scale` times the estimate's
/// tokens (learnt from a refusal that says how many the prompt had:
/// [`used_scale`]).
pub fn fit_scaled(request: &mut Request, window: u32, max_reply: u32, scale: f64) -> Fitted {
    let scale = scale.max(1.0);
    let real = |estimate: u32| (f64::from(estimate) * scale).ceil() as u32;
    let before = real(request_tokens(request));
    let floor = REPLY_FLOOR.min(window / 4).min(max_reply);
    let limit = window.saturating_sub(floor);
    if before > limit {
        let fixed = request_tokens(request) - messages_tokens(&request.messages);
        let target = ((f64::from(limit) / scale) as u32).saturating_sub(fixed);
        condense(&mut request.messages, target);
    }
    let after = real(request_tokens(request));
    // A reply's share is a quarter of the window: a small model that
    // rambles spends one step on it, not the run.
    request.max_tokens = window
        .saturating_sub(after)
        .min(max_reply)
        .min(window / 4)
        .max(floor.min(64));
    Fitted {
        before,
        after,
        condensed: after < before,
    }
}

/// What a refusal of `request` as too long teaches: the window the server
/// names (else three quarters of `window`), and the scale of its tokenizer
/// against the estimate when it says what the prompt came to (without
/// that count, a tenth more is taken off, the estimate being unproven).
pub fn after_refusal(
    refusal: &crate::provider::ProviderError,
    request: &Request,
    window: u32,
    scale: f64,
) -> (u32, f64) {
    let smaller = refusal
        .context_limit()
        .unwrap_or(window * 3 / 4)
        .min(window);
    match refusal.context_used() {
        Some(used) => (smaller.max(1_024), used_scale(request, used, scale)),
        None => ((smaller * 9 / 10).max(1_024), scale),
    }
}

/// How many tokens the model's tokenizer makes of what the estimate counts,
/// from a refusal saying the prompt had `used` tokens (with a margin), at
/// least `known`.
pub fn used_scale(request: &Request, used: u32, known: f64) -> f64 {
    let estimate = f64::from(request_tokens(request).max(1));
    (f64::from(used) / estimate * 1.05).max(known).max(1.0)
}

/// The marker an elided output leaves.
fn elided(chars: usize) -> String {
    format!("[{chars} characters of this output were elided to fit the context window]")
}

/// Condenses `messages` until they fit `target` tokens: old tool outputs
/// elided, then old assistant prose, then old exchanges dropped whole (the
/// first message, the issue, always stays).
fn condense(messages: &mut Vec<Message>, target: u32) {
    let fits = |m: &[Message]| messages_tokens(m) <= target;
    let old = messages.len().saturating_sub(KEEP_LAST);
    // Old tool outputs, oldest first.
    for i in 1..old {
        if fits(messages) {
            return;
        }
        for part in &mut messages[i].parts {
            if let Part::ToolResult { content, .. } = part {
                if content.len() > 200 && !content.starts_with('[') {
                    *content = elided(content.len());
                }
            }
        }
    }
    // Old assistant prose (the first reply, the plan, stays).
    let first_reply = messages.iter().position(|m| m.role == Role::Assistant);
    for i in 1..old {
        if fits(messages) {
            return;
        }
        if Some(i) == first_reply || messages[i].role != Role::Assistant {
            continue;
        }
        for part in &mut messages[i].parts {
            if let Part::Text { text } = part {
                if text.len() > 200 {
                    *text = format!("[{} characters of reasoning elided]", text.len());
                }
            }
        }
    }
    // Whole exchanges, oldest first, a reply and its results together.
    while !fits(messages) && messages.len() > KEEP_LAST + 1 {
        let end = messages
            .iter()
            .skip(2)
            .position(|m| m.role == Role::Assistant)
            .map_or(2, |p| p + 2);
        messages.drain(1..end.min(messages.len() - KEEP_LAST));
    }
    // Still too long (a small window): the last steps' outputs and prose
    // too, all but the newest message, then the issue's attachments.
    let last = messages.len().saturating_sub(1);
    for i in 1..last {
        if fits(messages) {
            return;
        }
        for part in &mut messages[i].parts {
            match part {
                Part::ToolResult { content, .. }
                    if content.len() > 200 && !content.starts_with('[') =>
                {
                    *content = elided(content.len());
                }
                Part::Text { text } if text.len() > 200 => {
                    *text = format!("[{} characters of reasoning elided]", text.len());
                }
                _ => {}
            }
        }
    }
    if !fits(messages) {
        if let Some(Part::Text { text }) = messages.first_mut().and_then(|m| m.parts.first_mut()) {
            let over = (tokens_of(text) as usize).saturating_sub(target as usize / 2);
            if over > 0 {
                let keep = text.len().saturating_sub(over * 3).max(400);
                *text = cap_observation(std::mem::take(text), keep);
            }
        }
    }
}

/// Whether `text` repeats itself: a line (or, with no lines, a 20-character
/// piece) said at least eight times that makes up half of it.
pub fn repeats_itself(text: &str) -> bool {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let pieces: Vec<&str> = if lines.len() >= 8 {
        lines
    } else {
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        chars
            .chunks(20)
            .filter(|c| c.len() == 20)
            .map(|c| {
                let end = c[19].0 + c[19].1.len_utf8();
                &text[c[0].0..end]
            })
            .collect()
    };
    if pieces.len() < 8 {
        return false;
    }
    let mut counts: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for p in &pieces {
        *counts.entry(p).or_default() += 1;
    }
    let most = counts.values().copied().max().unwrap_or(0);
    most >= 8 && most * 2 >= pieces.len()
}

/// The most characters one tool output keeps in `window` tokens: an
/// eighth of the window, at least 2,000.
pub fn observation_cap(window: u32) -> usize {
    (window as usize * 3 / 8).max(2_000)
}

/// `content` cut to `cap` characters, its head and tail kept, with a note
/// of what was cut.
pub fn cap_observation(content: String, cap: usize) -> String {
    if content.len() <= cap {
        return content;
    }
    let head_end = floor_boundary(&content, cap * 2 / 3);
    let tail_start = ceil_boundary(&content, content.len() - cap / 3);
    format!(
        "{}\n[… {} characters cut to fit the context window …]\n{}",
        &content[..head_end],
        tail_start - head_end,
        &content[tail_start..]
    )
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn history(steps: usize, output: usize) -> Request {
        let mut r = Request::new("m");
        r.system = "You fix bugs.".to_owned();
        r.messages
            .push(Message::user("Fix this issue: add() subtracts."));
        for n in 0..steps {
            r.messages.push(Message {
                role: Role::Assistant,
                parts: vec![
                    Part::Text {
                        text: "I will look at the file first. ".repeat(10),
                    },
                    Part::ToolCall {
                        id: format!("call_{n}"),
                        name: "edit".to_owned(),
                        arguments: json!({"path": "calc.py", "old": "a - b", "new": format!("a + b # {n}")}),
                        invalid_arguments: None,
                    },
                ],
            });
            r.messages.push(Message {
                role: Role::User,
                parts: vec![Part::ToolResult {
                    id: format!("call_{n}"),
                    content: "x".repeat(output),
                    is_error: false,
                }],
            });
        }
        r
    }

    #[test]
    fn a_long_history_is_fitted_and_keeps_the_issue_the_edits_and_the_last_steps() {
        let mut r = history(30, 3_000);
        let fitted = fit(&mut r, 8_192, 4_096);
        assert!(fitted.condensed, "{fitted:?}");
        assert!(fitted.before > 8_192, "{fitted:?}");
        assert!(
            fitted.after + r.max_tokens <= 8_192,
            "{fitted:?} {}",
            r.max_tokens
        );
        assert!(r.max_tokens >= 512, "{}", r.max_tokens);
        assert!(r.max_tokens <= 8_192 / 4, "{}", r.max_tokens);
        assert_eq!(r.messages[0].text(), "Fix this issue: add() subtracts.");
        // The last steps are whole.
        let last = r.messages.last().unwrap();
        assert!(
            matches!(&last.parts[0], Part::ToolResult { content, .. } if content.len() == 3_000)
        );
        // Every edit that is still there has its arguments.
        for m in &r.messages {
            for p in &m.parts {
                if let Part::ToolCall { arguments, .. } = p {
                    assert!(arguments["new"].as_str().unwrap().starts_with("a + b"));
                }
            }
        }
    }

    #[test]
    fn a_short_history_is_left_alone_and_the_reply_gets_what_is_left() {
        let mut r = history(2, 100);
        let fitted = fit(&mut r, 8_192, 4_096);
        assert!(!fitted.condensed);
        assert_eq!(r.max_tokens, 2_048, "a quarter of the window");
        let mut wide = history(2, 100);
        fit(&mut wide, 200_000, 4_096);
        assert_eq!(wide.max_tokens, 4_096, "the caller's cap");
        let mut tight = history(8, 600);
        fit(&mut tight, 2_048, 4_096);
        assert!(tight.max_tokens <= 2_048 - request_tokens(&tight).min(2_048));
    }

    #[test]
    fn a_reply_that_loops_repeats_itself_and_prose_does_not() {
        assert!(repeats_itself(&"I will fix the bug.\n".repeat(30)));
        assert!(repeats_itself(&"the the the the the ".repeat(12)));
        assert!(!repeats_itself(
            "I will read calc.py, then edit add() and run the tests."
        ));
        let prose: String = (0..30)
            .map(|n| format!("step {n}: look at line {n}\n"))
            .collect();
        assert!(!repeats_itself(&prose));
    }

    #[test]
    fn a_long_output_keeps_its_head_and_tail() {
        let out = format!(
            "{}{}{}",
            "a".repeat(5_000),
            "é".repeat(3_000),
            "z".repeat(5_000)
        );
        let capped = cap_observation(out, 3_000);
        assert!(capped.len() < 3_200, "{}", capped.len());
        assert!(capped.starts_with("aaa") && capped.ends_with("zzz"));
        assert!(capped.contains("characters cut to fit the context window"));
    }
}
