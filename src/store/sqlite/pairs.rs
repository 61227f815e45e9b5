//! An input round's requests and answers as one JSON object each, in the
//! order they were given: readable in the file, and the `inputRequests`
//! object a client sees, as it is stored.

use serde_json::value::RawValue;

use super::corrupt;
use crate::store::StoreError;
use crate::wire::raw::{Members, write_object};

/// Keyed JSON values, kept in order.
pub(super) type Pairs = Vec<(String, Box<RawValue>)>;

/// `pairs` as one JSON object, in order.
pub(super) fn render(pairs: &[(String, Box<RawValue>)]) -> String {
    let mut text = String::new();
    write_object(&mut text, pairs.iter().map(|(k, v)| (k.as_str(), v.get())));
    text
}

/// The pairs of a stored JSON object, in the order written.
pub(super) fn parse(text: &str) -> Result<Pairs, StoreError> {
    let members = Members::parse(text)
        .map_err(|e| corrupt(format!("an input column is not a JSON object: {e}")))?;
    Ok(members
        .0
        .into_iter()
        .map(|(key, value)| (key.into_owned(), value.to_owned()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn pairs_round_trip_through_one_object_in_their_order() {
        let pairs = vec![
            ("z".to_owned(), raw(r#"{"method":"roots/list"}"#)),
            ("a".to_owned(), raw("[1, 2]")),
        ];
        let text = render(&pairs);
        assert_eq!(text, r#"{"z":{"method":"roots/list"},"a":[1, 2]}"#);
        let back = parse(&text).unwrap();
        let back: Vec<_> = back.iter().map(|(k, v)| (k.as_str(), v.get())).collect();
        assert_eq!(
            back,
            vec![("z", r#"{"method":"roots/list"}"#), ("a", "[1, 2]")]
        );
        assert_eq!(render(&[]), "{}");
    }

    #[test]
    fn a_column_that_is_not_an_object_is_a_backend_error() {
        for bad in ["", "[]", "{\"a\":", "7"] {
            assert!(matches!(parse(bad), Err(StoreError::Backend(_))), "{bad:?}");
        }
    }
}
