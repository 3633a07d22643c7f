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
pub fn bounded(mut msg: String) -> String {
    if msg.len() > MAX_MESSAGE {
        let mut cut = MAX_MESSAGE;
        while !msg.is_char_boundary(cut) {
            cut -= 1;
        }
        let total = msg.len();
        msg.truncate(cut);
        msg.push_str(&format!("… ({total} bytes)"));
    }
    msg
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
    fn an_excerpt_quotes_the_start_of_a_long_input() {
        assert_eq!(format!("{:?}", Excerpt("12\n")), "\"12\\n\"");
        let exact = "x".repeat(EXCERPT_CHARS);
        assert_eq!(format!("{:?}", Excerpt(&exact)), format!("{exact:?}"));
        let long = "é".repeat(1000);
        let e = format!("{:?}", Excerpt(&long));
        assert_eq!(e, format!("{:?}… (2000 bytes)", "é".repeat(EXCERPT_CHARS)));
    }
}
