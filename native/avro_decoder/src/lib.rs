//! `mesh_avro_decoder`: a compiled decoder for the Avro binary encoding of one record.
//!
//! fastavro's `schemaless_reader` spends about 10 µs on a transaction, most of the detector
//! runtime's cost per record. This module does the same decoding (same Python values) with the
//! schema work done once: `Decoder(canonical_form)` parses the writer schema into a plan, and
//! `Decoder.decode(message, start)` only reads bytes and creates the objects.
//!
//! Layout, one concern per module: `schema` parses the canonical form, `min_size` computes
//! the smallest encoding of each type, `plan` prepares the ops and interned names, `reader`
//! reads bounds-checked primitives, `decode` walks the plan, `pyobj` wraps the one CPython call
//! pyo3 lacks, `error` carries what went wrong and where.

mod decode;
mod error;
mod min_size;
mod plan;
mod pyobj;
mod reader;
mod schema;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::error::Failure;
use crate::plan::Plan;

pyo3::create_exception!(
    mesh_avro_decoder,
    DecodeFailure,
    PyValueError,
    "The message is not a valid Avro encoding of the record: truncated, a bad length, bad UTF-8, \
     a bad union or enum index, or bytes left over. The message names the problem and its byte \
     offset."
);

/// Decodes records written with one writer schema, given as its Parsing Canonical Form.
///
/// The schema is parsed once, here; ``decode`` then only reads bytes and builds the record.
/// Values are those fastavro gives for the same schema without logical types: ``int`` for
/// int/long (timestamps too), ``float``, ``bool``, ``None``, ``str``, ``bytes`` for bytes and
/// fixed, the symbol ``str`` for an enum, ``list``, ``dict`` for maps and records.
#[pyclass(frozen, module = "mesh_avro_decoder")]
pub struct Decoder {
    plan: Plan,
}

#[pymethods]
impl Decoder {
    /// Raises ValueError, with one line saying why, for a schema it cannot use.
    #[new]
    fn new(py: Python<'_>, canonical_form_json: &str) -> PyResult<Self> {
        let schema = schema::parse(canonical_form_json)
            .map_err(|e| PyValueError::new_err(format!("cannot use this Avro schema: {e}")))?;
        Ok(Decoder {
            plan: Plan::new(py, &schema)?,
        })
    }

    /// The record whose body starts at byte ``start`` of ``message`` and ends at its end.
    ///
    /// Raises DecodeFailure (a ValueError) if the bytes are not exactly one such record.
    fn decode<'py>(
        &self,
        py: Python<'py>,
        message: &[u8],
        start: isize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let Ok(start) = usize::try_from(start) else {
            return Err(PyValueError::new_err(format!(
                "start must be >= 0, got {start}"
            )));
        };
        if start > message.len() {
            return Err(DecodeFailure::new_err(format!(
                "truncated message: the record should start at byte {start} but the message has {} bytes",
                message.len()
            )));
        }
        self.plan
            .decode(py, message, start)
            .map_err(|failure| match failure {
                Failure::Malformed(m) => DecodeFailure::new_err(m.message()),
                Failure::Python(err) => *err,
            })
    }

    /// Full name of the record type, e.g. ``mesh.Transaction``.
    #[getter]
    fn name(&self) -> &str {
        &self.plan.name
    }

    fn __repr__(&self) -> String {
        format!("Decoder({})", self.plan.name)
    }
}

/// Compiled Avro decoder: ``Decoder(canonical_form).decode(message, start)``.
#[pymodule]
mod mesh_avro_decoder {
    #[pymodule_export]
    use super::{DecodeFailure, Decoder};
}
