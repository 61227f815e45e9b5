//! Text the layer keeps of what a client or a tool chose, bounded.

/// The longest prefix of `text` of at most `max` bytes that ends at a
/// character boundary: `text` itself when it is short enough.
pub(crate) fn head(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::head;

    #[test]
    fn a_head_ends_at_a_character_boundary() {
        assert_eq!(head("short", 10), "short");
        assert_eq!(head("ééé", 3), "é");
        assert_eq!(head("ééé", 4), "éé");
        assert_eq!(head("", 0), "");
    }
}
