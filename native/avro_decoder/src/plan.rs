//! The decoding plan: the schema turned, once per `Decoder`, into ops ready for the hot loop.
//!
//! Everything a record needs that does not depend on the data is made here: field names and
//! enum symbols become interned Python strings (so a dict insertion reuses the key object and
//! its cached hash instead of creating a string per field per record), and each array and map
//! knows the minimum size of its items (so a bogus count is refused without decoding).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::min_size::min_sizes;
use crate::schema::{Schema, Type};

/// Index of an op in [`Plan::ops`]; the same as the schema's type index.
pub type OpId = usize;

pub enum Op {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
    Fixed {
        size: usize,
    },
    Enum {
        symbols: Box<[Py<PyString>]>,
        name: Box<str>,
    },
    Array {
        items: OpId,
        item_min: u64,
    },
    /// `entry_min` counts the key (a string: at least its length byte) and the value.
    Map {
        values: OpId,
        entry_min: u64,
    },
    Union {
        branches: Box<[OpId]>,
    },
    Record {
        fields: Box<[FieldOp]>,
        /// The record's dict with every field set to None, in order: a decode copies it.
        template: Py<PyDict>,
    },
}

pub struct FieldOp {
    /// The interned dict key.
    pub key: Py<PyString>,
    /// The same name for error messages, without touching Python.
    pub name: Box<str>,
    pub op: OpId,
}

pub struct Plan {
    pub ops: Vec<Op>,
    pub root: OpId,
    /// Full name of the top-level record, for `repr` and messages.
    pub name: String,
}

impl Plan {
    /// Fails only if Python cannot allocate the names.
    pub fn new(py: Python<'_>, schema: &Schema) -> PyResult<Plan> {
        let min = min_sizes(schema);
        let ops = schema
            .types
            .iter()
            .map(|ty| op_for(py, ty, &min))
            .collect::<PyResult<Vec<Op>>>()?;
        Ok(Plan {
            ops,
            root: schema.root,
            name: schema.root_name().to_owned(),
        })
    }
}

fn op_for(py: Python<'_>, ty: &Type, min: &[u64]) -> PyResult<Op> {
    let intern = |s: &str| PyString::intern(py, s).unbind();
    Ok(match ty {
        Type::Null => Op::Null,
        Type::Boolean => Op::Boolean,
        Type::Int => Op::Int,
        Type::Long => Op::Long,
        Type::Float => Op::Float,
        Type::Double => Op::Double,
        Type::Bytes => Op::Bytes,
        Type::String => Op::String,
        Type::Fixed { size, .. } => Op::Fixed { size: *size },
        Type::Enum { name, symbols } => Op::Enum {
            symbols: symbols.iter().map(|s| intern(s)).collect(),
            name: name.as_str().into(),
        },
        Type::Array { items } => Op::Array {
            items: *items,
            item_min: min[*items],
        },
        Type::Map { values } => Op::Map {
            values: *values,
            entry_min: min[*values].saturating_add(1),
        },
        Type::Union { branches } => Op::Union {
            branches: branches.as_slice().into(),
        },
        Type::Record { fields, .. } => {
            let fields: Box<[FieldOp]> = fields
                .iter()
                .map(|f| FieldOp {
                    key: intern(&f.name),
                    name: f.name.as_str().into(),
                    op: f.ty,
                })
                .collect();
            let template = PyDict::new(py);
            for f in &fields {
                template.set_item(f.key.bind(py), py.None())?;
            }
            Op::Record {
                fields,
                template: template.unbind(),
            }
        }
    })
}
