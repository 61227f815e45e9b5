//! Reading a request's envelope: the one-pass reader first
//! ([`pass`](super::pass)), serde's derived reader where it gives up.
//!
//! The shapes are [`envelope`](super::envelope)'s and both readers fill
//! them; this is the one place that chooses between the two, so neither
//! reader needs the other.

use super::envelope::{Capabilities, Envelope, Json, TasksMember};

impl<'a> Envelope<'a> {
    /// Parses `body`, keeping where `params` lies in it: free to the
    /// one-pass reader; serde's, which only odd bodies reach, reads
    /// `params` twice for it.
    ///
    /// A body that is UTF-8 throughout (any real one) is checked once, as a
    /// whole, and read as text: cheaper than checking each string on the
    /// way. Any other is read as bytes, with serde_json's own errors.
    pub(crate) fn parse(body: &'a [u8]) -> serde_json::Result<Self> {
        let Ok(text) = std::str::from_utf8(body) else {
            return Self::parse_with(serde_json::Deserializer::from_slice(body));
        };
        if let Some(envelope) = super::pass::envelope(text) {
            return Ok(envelope);
        }
        Self::parse_with(serde_json::Deserializer::from_str(text))
    }
}

impl<'a> Capabilities<'a> {
    /// The tasks extension's member of `extensions`: as read with it, or
    /// read now.
    pub(crate) fn tasks_member(&self) -> TasksMember<'a> {
        self.tasks.unwrap_or_else(|| tasks_member(self.extensions))
    }
}

/// The tasks extension's member of an `extensions` object (none when
/// there is no object).
pub(crate) fn tasks_member(extensions: Option<Json<'_>>) -> TasksMember<'_> {
    let Some(raw) = extensions else {
        return TasksMember::default();
    };
    super::pass::tasks_member(raw.get())
        .or_else(|| serde_json::from_str(raw.get()).ok())
        .unwrap_or_default()
}
