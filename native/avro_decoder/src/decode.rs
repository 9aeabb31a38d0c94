//! Walk the plan over the message bytes, building the Python objects as fastavro would.
//!
//! Per record this only reads bytes and creates the values: no schema lookups, no key strings
//! (they are interned in the plan), no allocation sized from the data. Recursion follows the
//! schema, so nesting is capped: a recursive schema (or a record that contains itself) fed
//! with crafted bytes must end in a [`Malformed`], not in a stack overflow.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyList};

use crate::error::{Failure, Malformed};
use crate::plan::{FieldOp, Op, OpId, Plan};
use crate::pyobj::utf8_str;
use crate::reader::Reader;

/// Deepest nesting of records, arrays and maps. Far above any real schema, and far below what
/// the stack holds (a level costs a few hundred bytes of stack, threads get megabytes).
pub const MAX_DEPTH: u32 = 1000;

/// Most items one array may hold when its items take no bytes at all (`null`, an empty
/// record): the count cannot be checked against the bytes left, so it is capped instead.
pub const MAX_ZERO_SIZE_ITEMS: u64 = 1 << 20;

type Decoded<'py> = Result<Bound<'py, PyAny>, Failure>;

impl Plan {
    /// The record whose body is `message[start..]`, which it must use up exactly.
    pub fn decode<'py>(&self, py: Python<'py>, message: &[u8], start: usize) -> Decoded<'py> {
        let mut r = Reader::new(message, start);
        let record = self.value(py, &mut r, self.root, 0)?;
        if r.remaining() > 0 {
            let what = format!(
                "{} unexpected byte(s) after the {} record",
                r.remaining(),
                self.name
            );
            return Err(Malformed::new(what, r.position()).into());
        }
        Ok(record)
    }

    fn value<'py>(
        &self,
        py: Python<'py>,
        r: &mut Reader<'_>,
        op: OpId,
        depth: u32,
    ) -> Decoded<'py> {
        Ok(match &self.ops[op] {
            Op::Null => py.None().into_bound(py),
            Op::Boolean => PyBool::new(py, r.boolean()?).to_owned().into_any(),
            Op::Int => {
                let Ok(v) = r.int("int")?.into_pyobject(py);
                v.into_any()
            }
            Op::Long => {
                let Ok(v) = r.long("long")?.into_pyobject(py);
                v.into_any()
            }
            Op::Float => PyFloat::new(py, f64::from(r.float()?)).into_any(),
            Op::Double => PyFloat::new(py, r.double()?).into_any(),
            Op::Bytes => PyBytes::new(py, r.sized("bytes")?.1).into_any(),
            Op::String => {
                let (at, body) = r.sized("string")?;
                utf8_str(py, body, at, "string")?
            }
            Op::Fixed { size } => PyBytes::new(py, r.take(*size, "fixed")?).into_any(),
            Op::Enum { symbols, name } => {
                let at = r.position();
                let index = r.long("enum index")?;
                match usize::try_from(index).ok().and_then(|i| symbols.get(i)) {
                    Some(symbol) => symbol.bind(py).clone().into_any(),
                    None => {
                        let detail = format!("{name} has {} symbols", symbols.len());
                        return Err(bad_index("enum", index, detail, at));
                    }
                }
            }
            Op::Union { branches } => {
                let at = r.position();
                let index = r.long("union index")?;
                match usize::try_from(index).ok().and_then(|i| branches.get(i)) {
                    Some(&branch) => return self.value(py, r, branch, depth),
                    None => {
                        let detail = format!("the union has {} branches", branches.len());
                        return Err(bad_index("union", index, detail, at));
                    }
                }
            }
            Op::Record { fields, template } => {
                self.record(py, r, fields, template, deeper(depth, r)?)?
            }
            Op::Array { items, item_min } => {
                self.array(py, r, *items, *item_min, deeper(depth, r)?)?
            }
            Op::Map { values, entry_min } => {
                self.map(py, r, *values, *entry_min, deeper(depth, r)?)?
            }
        })
    }

    fn record<'py>(
        &self,
        py: Python<'py>,
        r: &mut Reader<'_>,
        fields: &[FieldOp],
        template: &Py<PyDict>,
        depth: u32,
    ) -> Decoded<'py> {
        // Copying the template (every key, values None, already sized) and then replacing each
        // value is ~10% faster than inserting into an empty dict, which resizes twice for 16
        // fields and has to find a free slot per key.
        let dict = template.bind(py).copy()?;
        for field in fields {
            let value = self
                .value(py, r, field.op, depth)
                .map_err(|e| e.in_field(&field.name))?;
            dict.set_item(field.key.bind(py), value)?;
        }
        Ok(dict.into_any())
    }

    fn array<'py>(
        &self,
        py: Python<'py>,
        r: &mut Reader<'_>,
        items: OpId,
        item_min: u64,
        depth: u32,
    ) -> Decoded<'py> {
        // Appended item by item: the count comes from the data, so nothing is reserved from it.
        let list = PyList::empty(py);
        let mut total: u64 = 0;
        loop {
            let at = r.position();
            let count = r.block_count("array block count", item_min)?;
            if count == 0 {
                return Ok(list.into_any());
            }
            total = total.saturating_add(count);
            if item_min == 0 && total > MAX_ZERO_SIZE_ITEMS {
                let what =
                    format!("array of more than {MAX_ZERO_SIZE_ITEMS} items that take no bytes");
                return Err(Malformed::new(what, at).into());
            }
            for _ in 0..count {
                list.append(self.value(py, r, items, depth)?)?;
            }
        }
    }

    fn map<'py>(
        &self,
        py: Python<'py>,
        r: &mut Reader<'_>,
        values: OpId,
        entry_min: u64,
        depth: u32,
    ) -> Decoded<'py> {
        let dict = PyDict::new(py);
        loop {
            // An entry always takes at least one byte (its key's length), so the count check
            // in `block_count` bounds every map by the bytes left.
            let count = r.block_count("map block count", entry_min)?;
            if count == 0 {
                return Ok(dict.into_any());
            }
            for _ in 0..count {
                let (at, body) = r.sized("map key")?;
                let key = utf8_str(py, body, at, "map key")?;
                dict.set_item(key, self.value(py, r, values, depth)?)?;
            }
        }
    }
}

/// The depth one level down, or a failure past [`MAX_DEPTH`].
#[inline]
fn deeper(depth: u32, r: &Reader<'_>) -> Result<u32, Malformed> {
    if depth >= MAX_DEPTH {
        return Err(Malformed::new(
            format!("values nested deeper than {MAX_DEPTH} levels"),
            r.position(),
        ));
    }
    Ok(depth + 1)
}

#[cold]
#[inline(never)]
fn bad_index(kind: &str, index: i64, detail: String, at: usize) -> Failure {
    Malformed::new(format!("bad {kind} index {index}"), at)
        .with_detail(detail)
        .into()
}
