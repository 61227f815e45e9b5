//! An input round's requests and answers as one JSON object each, in the
//! order they were given: readable in the file, and the `inputRequests`
//! object a client sees, as it is stored.

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use super::corrupt;
use crate::store::StoreError;

/// Keyed JSON values, kept in order.
pub(super) type Pairs = Vec<(String, Box<RawValue>)>;

struct Ordered<'a>(&'a [(String, Box<RawValue>)]);

impl Serialize for Ordered<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

struct Read(Pairs);

impl<'de> Deserialize<'de> for Read {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = Pairs;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Pairs, A::Error> {
                let mut pairs = Vec::new();
                while let Some(entry) = map.next_entry::<String, Box<RawValue>>()? {
                    pairs.push(entry);
                }
                Ok(pairs)
            }
        }
        deserializer.deserialize_map(Entries).map(Read)
    }
}

/// `pairs` as one JSON object, in order.
pub(super) fn render(pairs: &[(String, Box<RawValue>)]) -> Result<String, StoreError> {
    serde_json::to_string(&Ordered(pairs)).map_err(|e| StoreError::Backend(Box::new(e)))
}

/// The pairs of a stored JSON object, in the order written.
pub(super) fn parse(text: &str) -> Result<Pairs, StoreError> {
    serde_json::from_str::<Read>(text)
        .map(|read| read.0)
        .map_err(|e| corrupt(format!("an input column is not a JSON object: {e}")))
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
        let text = render(&pairs).unwrap();
        assert_eq!(text, r#"{"z":{"method":"roots/list"},"a":[1, 2]}"#);
        let back = parse(&text).unwrap();
        let back: Vec<_> = back.iter().map(|(k, v)| (k.as_str(), v.get())).collect();
        assert_eq!(
            back,
            vec![("z", r#"{"method":"roots/list"}"#), ("a", "[1, 2]")]
        );
        assert_eq!(render(&[]).unwrap(), "{}");
    }

    #[test]
    fn a_column_that_is_not_an_object_is_a_backend_error() {
        for bad in ["", "[]", "{\"a\":", "7"] {
            assert!(matches!(parse(bad), Err(StoreError::Backend(_))), "{bad:?}");
        }
    }
}
