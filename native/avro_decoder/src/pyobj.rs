//! Python object constructors the hot loop needs that pyo3's safe API does not offer as such.

use pyo3::exceptions::PyUnicodeDecodeError;
use pyo3::ffi;
use pyo3::prelude::*;

use crate::error::{Failure, Malformed};

/// A `str` from bytes that must be valid UTF-8.
///
/// CPython validates and decodes in one pass (`PyUnicode_DecodeUTF8`, strict, so surrogates
/// are refused as by `bytes.decode("utf-8")`); going through a Rust `&str` first would validate
/// twice. Bad UTF-8 becomes a [`Malformed`] naming the offending byte: `body_offset` is where
/// `body` starts in the message.
#[inline]
pub fn utf8_str<'py>(
    py: Python<'py>,
    body: &[u8],
    body_offset: usize,
    what: &str,
) -> Result<Bound<'py, PyAny>, Failure> {
    // SAFETY: the pointer and length describe a live slice (a slice never exceeds
    // isize::MAX bytes, so the length fits a Py_ssize_t); a null `errors` means "strict";
    // we hold the GIL (`py`); the result is a new reference or null with an exception set,
    // which is what `from_owned_ptr_or_err` takes.
    let decoded = unsafe {
        let ptr = ffi::PyUnicode_DecodeUTF8(
            body.as_ptr().cast(),
            body.len() as ffi::Py_ssize_t,
            std::ptr::null(),
        );
        Bound::from_owned_ptr_or_err(py, ptr)
    };
    decoded.map_err(|err| bad_utf8(py, err, body_offset, what))
}

#[cold]
#[inline(never)]
fn bad_utf8(py: Python<'_>, err: PyErr, body_offset: usize, what: &str) -> Failure {
    if !err.is_instance_of::<PyUnicodeDecodeError>(py) {
        return err.into(); // e.g. MemoryError
    }
    let bad = err
        .value(py)
        .getattr("start")
        .and_then(|v| v.extract::<usize>())
        .unwrap_or(0);
    Malformed::new(format!("invalid UTF-8 in {what}"), body_offset + bad).into()
}
