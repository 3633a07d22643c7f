//! Channel names in exposition syntax: `name{a="x",b="y"}`.

/// Splits `name{a="x",b="y"}` into the name and its labels; never panics,
/// and gives no labels for a malformed label set.
pub fn parse_channel(channel: &str) -> (&str, Vec<(String, String)>) {
    let Some((name, rest)) = channel.split_once('{') else {
        return (channel.trim(), Vec::new());
    };
    let body = rest.strip_suffix('}').unwrap_or(rest);
    let mut labels = Vec::new();
    let mut chars = body.chars().peekable();
    loop {
        let key: String = chars.by_ref().take_while(|&c| c != '=').collect();
        let key = key.trim().trim_start_matches(',').trim().to_string();
        if key.is_empty() || chars.next() != Some('"') {
            break;
        }
        let mut value = String::new();
        let mut closed = false;
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some('n') => value.push('\n'),
                    Some(other) => value.push(other),
                    None => break,
                },
                '"' => {
                    closed = true;
                    break;
                }
                c => value.push(c),
            }
        }
        if !closed {
            return (name.trim(), Vec::new());
        }
        labels.push((key, value));
    }
    (name.trim(), labels)
}
