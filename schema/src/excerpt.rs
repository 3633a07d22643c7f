//! Quoting bad input in a message without paying for all of it.

/// A bad input quoted in a message: `{:?}` of its first 80 characters, then `…` and its
/// length when longer. Escaping costs tens of nanoseconds a character, so quoting a garbage
/// line of megabytes in full would cost more than reading it (a second for a 6 MB line) and
/// would make a log line of megabytes that says nothing more.
pub struct Excerpt<'a>(pub &'a str);

/// Characters of a long input that an [`Excerpt`] quotes.
pub const EXCERPT_CHARS: usize = 80;

impl std::fmt::Debug for Excerpt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.char_indices().nth(EXCERPT_CHARS) {
            None => write!(f, "{:?}", self.0),
            Some((cut, _)) => write!(f, "{:?}… ({} bytes)", &self.0[..cut], self.0.len()),
        }
    }
}

/// The longest error message either binary keeps: messages quote bad input, and a garbage
/// file of megabytes must not become a log line of megabytes.
pub const MAX_MESSAGE: usize = 300;

/// `msg` cut to [`MAX_MESSAGE`] bytes on a character boundary, then `…` and its length:
/// the backstop for a message that quotes input without an [`Excerpt`].
pub fn bounded(msg: String) -> String {
    cut_to(msg, MAX_MESSAGE)
}

fn cut_to(mut msg: String, limit: usize) -> String {
    if msg.len() > limit {
        let mut cut = limit;
        while !msg.is_char_boundary(cut) {
            cut -= 1;
        }
        let total = msg.len();
        msg.truncate(cut);
        msg.push_str(&format!("… ({total} bytes)"));
    }
    msg
}

/// The longest message [`library_message`] keeps: room for serde's list of every key a
/// section takes after an unknown one (`expected one of …`), which is ours, not input.
pub const MAX_LIBRARY_MESSAGE: usize = 1000;

/// A library's error message (the YAML or JSON reader's, through serde) with each quoted span
/// longer than [`EXCERPT_CHARS`] characters cut to an excerpt, then the whole cut to
/// [`MAX_LIBRARY_MESSAGE`] bytes. serde quotes a bad scalar or key whole (`invalid type:
/// string "…"`, ``unknown field `…` ``): a key of a megabyte made a message of a megabyte, and
/// cutting the whole message to a few hundred bytes instead would lose the words after the
/// quote (what was expected, and where).
pub fn library_message(msg: impl std::fmt::Display) -> String {
    cut_to(shorten_quotes(&msg.to_string()), MAX_LIBRARY_MESSAGE)
}

/// `msg` with every `"…"` (backslash escapes inside) or `` `…` `` span of more than
/// [`EXCERPT_CHARS`] characters cut to its first ones, then `…` and its length in bytes. An
/// unclosed quote runs to the end.
pub fn shorten_quotes(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len().min(4 * MAX_MESSAGE));
    let mut rest = msg;
    while let Some(open) = rest.find(['"', '`']) {
        let quote = rest.as_bytes()[open];
        out.push_str(&rest[..=open]);
        let body = &rest[open + 1..];
        let close = span_end(body, quote);
        let inner = &body[..close];
        let cut = inner.char_indices().nth(EXCERPT_CHARS).map(|(i, _)| i);
        let mut kept = &inner[..cut.unwrap_or(inner.len())];
        if cut.is_some() && quote == b'"' {
            // Do not end on half of an escape: `\` followed by the closing quote.
            let slashes = kept.len() - kept.trim_end_matches('\\').len();
            if slashes % 2 == 1 {
                kept = &kept[..kept.len() - 1];
            }
        }
        out.push_str(kept);
        let closed = close < body.len();
        if closed {
            out.push(quote as char);
        }
        if cut.is_some() {
            out.push_str(&format!("… ({} bytes)", inner.len()));
        }
        rest = if closed { &body[close + 1..] } else { "" };
    }
    out.push_str(rest);
    out
}

/// Where the span that `quote` opened ends in `body`: the index of its closing quote, or the
/// length when it has none. Inside `"…"` a backslash escapes the next character.
fn span_end(body: &str, quote: u8) -> usize {
    let b = body.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if quote == b'"' => i += 2,
            c if c == quote => return i,
            _ => i += 1,
        }
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_cut_on_a_char_boundary() {
        let long = format!("{:?} is not a count", "é".repeat(1_000_000));
        let msg = bounded(long.clone());
        assert!(msg.len() < MAX_MESSAGE + 40, "{}", msg.len());
        assert!(msg.ends_with(&format!("… ({} bytes)", long.len())));
        assert!(long.starts_with(msg.trim_end_matches(|c: char| c != 'é')));
        assert_eq!(bounded("short".into()), "short");
    }

    #[test]
    fn long_quotes_in_a_library_message_are_cut_and_the_rest_is_kept() {
        let long = "v".repeat(1_000_000);
        let msg = format!("line 1: invalid type: string {long:?}, expected struct WebConfig");
        let short = library_message(&msg);
        assert_eq!(
            short,
            format!(
                "line 1: invalid type: string \"{}\"… (1000000 bytes), expected struct WebConfig",
                "v".repeat(EXCERPT_CHARS)
            )
        );
        let field = format!("unknown field `{long}`, expected one of `a`, `b` at line 3");
        assert_eq!(
            library_message(field),
            format!(
                "unknown field `{}`… (1000000 bytes), expected one of `a`, `b` at line 3",
                "v".repeat(EXCERPT_CHARS)
            )
        );
        // Escaped quotes do not end a span; a cut never leaves half an escape.
        let escaped = format!(
            "{:?} then",
            format!("{}\"{}", "q".repeat(79), "z".repeat(100))
        );
        let s = shorten_quotes(&escaped);
        assert!(s.starts_with(&format!("\"{}\"… (", "q".repeat(79))), "{s}");
        assert!(s.ends_with(" bytes) then"), "{s}");
        // An unclosed quote runs to the end; short quotes and plain text are left alone.
        let open = format!("bad `{}", "é".repeat(200));
        assert_eq!(
            shorten_quotes(&open),
            format!("bad `{}… (400 bytes)", "é".repeat(EXCERPT_CHARS))
        );
        let plain = "expected `a` or \"b\", found \"\\\"\" at line 2";
        assert_eq!(shorten_quotes(plain), plain);
        // A long list of short quotes (every key a section takes) is kept whole.
        let keys: Vec<String> = (0..40).map(|i| format!("`key_{i}`")).collect();
        let list = format!("unknown field `x`, expected one of {}", keys.join(", "));
        assert!(list.len() > MAX_MESSAGE);
        assert_eq!(library_message(&list), list);
    }

    #[test]
    fn an_excerpt_quotes_the_start_of_a_long_input() {
        assert_eq!(format!("{:?}", Excerpt("12\n")), "\"12\\n\"");
        let exact = "x".repeat(EXCERPT_CHARS);
        assert_eq!(format!("{:?}", Excerpt(&exact)), format!("{exact:?}"));
        let long = "é".repeat(1000);
        let e = format!("{:?}", Excerpt(&long));
        assert_eq!(e, format!("{:?}… (2000 bytes)", "é".repeat(EXCERPT_CHARS)));
    }
}
