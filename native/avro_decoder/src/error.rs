//! What can go wrong while decoding a message.
//!
//! Errors are rare and the success path is hot, so a [`Malformed`] is one boxed pointer (a
//! `Result` of it stays small) and is only ever built in `#[cold]` functions. Field names are
//! added while the error travels up through the records, so the reader that notices the problem
//! does not need to know where in the schema it is.

use pyo3::PyErr;

/// The message does not hold a valid record of the schema.
#[derive(Debug)]
pub struct Malformed(Box<Detail>);

#[derive(Debug)]
struct Detail {
    what: String,
    offset: usize,
    /// Optional specifics (sizes, counts) appended in parentheses.
    detail: Option<String>,
    /// Enclosing field names, innermost first (pushed while unwinding).
    fields: Vec<String>,
}

impl Malformed {
    /// `what` went wrong with the item starting at byte `offset` of the message.
    #[cold]
    #[inline(never)]
    pub fn new(what: impl Into<String>, offset: usize) -> Self {
        Malformed(Box::new(Detail {
            what: what.into(),
            offset,
            detail: None,
            fields: Vec::new(),
        }))
    }

    /// The same error with specifics, e.g. `needs 12 bytes, 3 left`.
    #[cold]
    #[inline(never)]
    pub fn with_detail(mut self, detail: String) -> Self {
        self.0.detail = Some(detail);
        self
    }

    /// The same error, now known to be inside record field `name`.
    #[cold]
    #[inline(never)]
    pub fn in_field(mut self, name: &str) -> Self {
        self.0.fields.push(name.to_owned());
        self
    }

    /// One line, e.g. `truncated string in field customer_id at byte 37 (needs 9 bytes, 2 left)`.
    pub fn message(&self) -> String {
        let d = &self.0;
        let mut out = d.what.clone();
        if !d.fields.is_empty() {
            out += &format!(" in field {}", field_path(&d.fields));
        }
        out += &format!(" at byte {}", d.offset);
        if let Some(detail) = &d.detail {
            out += &format!(" ({detail})");
        }
        out
    }
}

/// Longest field path shown in full; deeper ones (a long recursive chain) keep both ends.
const MAX_PATH_SHOWN: usize = 8;

/// `outer.inner` from innermost-first names, shortened in the middle when very deep.
fn field_path(innermost_first: &[String]) -> String {
    let names: Vec<&str> = innermost_first.iter().rev().map(String::as_str).collect();
    if names.len() <= MAX_PATH_SHOWN {
        return names.join(".");
    }
    let keep = MAX_PATH_SHOWN / 2;
    let hidden = names.len() - 2 * keep;
    format!(
        "{}.({hidden} more).{}",
        names[..keep].join("."),
        names[names.len() - keep..].join(".")
    )
}

/// Why a decode stopped: bad data, or Python itself failed (e.g. `MemoryError`).
#[derive(Debug)]
pub enum Failure {
    Malformed(Malformed),
    /// Boxed so that `Result<_, Failure>` stays two words on the hot path.
    Python(Box<PyErr>),
}

impl Failure {
    /// Name the record field the failure happened in; a Python error passes unchanged.
    #[cold]
    #[inline(never)]
    pub fn in_field(self, name: &str) -> Self {
        match self {
            Failure::Malformed(m) => Failure::Malformed(m.in_field(name)),
            python => python,
        }
    }
}

impl From<Malformed> for Failure {
    fn from(m: Malformed) -> Self {
        Failure::Malformed(m)
    }
}

impl From<PyErr> for Failure {
    #[cold]
    fn from(e: PyErr) -> Self {
        Failure::Python(Box::new(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_names_the_field_path_outermost_first() {
        let m = Malformed::new("truncated string", 37)
            .with_detail("needs 9 bytes, 2 left".into())
            .in_field("street")
            .in_field("address");
        assert_eq!(
            m.message(),
            "truncated string in field address.street at byte 37 (needs 9 bytes, 2 left)"
        );
    }

    #[test]
    fn deep_paths_are_shortened_in_the_middle() {
        let mut m = Malformed::new("truncated long", 5);
        for i in (0..20).rev() {
            m = m.in_field(&format!("f{i}"));
        }
        assert_eq!(
            m.message(),
            "truncated long in field f0.f1.f2.f3.(12 more).f16.f17.f18.f19 at byte 5"
        );
    }

    #[test]
    fn message_without_field() {
        assert_eq!(
            Malformed::new("2 unexpected byte(s)", 9).message(),
            "2 unexpected byte(s) at byte 9"
        );
    }
}
