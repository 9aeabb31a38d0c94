//! The fewest bytes any value of each type takes on the wire.
//!
//! This is what makes a bogus array or map count harmless: `count * min_size` bytes must still
//! be left in the message, checked before the first item is decoded. Recursive types make it a
//! fixpoint: start every type at "impossible" (`u64::MAX`) and lower the estimates until
//! nothing changes. A type that stays at `u64::MAX` has no finite value at all (a record that
//! contains itself with no way out), so any count of it is refused.

use crate::schema::{Schema, Type};

/// `min_sizes(schema)[id]` is the minimum encoded size of type `id`, `u64::MAX` if none.
pub fn min_sizes(schema: &Schema) -> Vec<u64> {
    let mut min = vec![u64::MAX; schema.types.len()];
    // Each pass settles at least one more level of the smallest values, and a smallest value
    // never nests a type inside itself, so there are at most `types.len() + 1` passes.
    loop {
        let mut changed = false;
        for (id, ty) in schema.types.iter().enumerate() {
            let size = match ty {
                Type::Null => 0,
                Type::Boolean
                | Type::Int
                | Type::Long
                | Type::Bytes
                | Type::String
                | Type::Enum { .. } => 1,
                Type::Float => 4,
                Type::Double => 8,
                Type::Fixed { size, .. } => *size as u64,
                // An empty array or map is the single byte 0.
                Type::Array { .. } | Type::Map { .. } => 1,
                Type::Union { branches } => {
                    let cheapest = branches.iter().map(|b| min[*b]).min().unwrap_or(u64::MAX);
                    cheapest.saturating_add(1)
                }
                Type::Record { fields, .. } => fields
                    .iter()
                    .fold(0u64, |sum, f| sum.saturating_add(min[f.ty])),
            };
            if size < min[id] {
                min[id] = size;
                changed = true;
            }
        }
        if !changed {
            return min;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::parse;

    fn root_min(json: &str) -> u64 {
        let schema = parse(json).unwrap();
        min_sizes(&schema)[schema.root]
    }

    #[test]
    fn sums_fields_and_takes_the_cheapest_branch() {
        let json = r#"{"name":"R","type":"record","fields":[{"name":"a","type":"double"},
            {"name":"b","type":["string","null"]},{"name":"c","type":{"name":"F","type":"fixed","size":5}},
            {"name":"d","type":"null"}]}"#;
        assert_eq!(root_min(json), 8 + 1 + 5);
    }

    #[test]
    fn recursive_types_settle() {
        let list = r#"{"name":"L","type":"record","fields":[{"name":"v","type":"long"},
            {"name":"next","type":["L","null"]}]}"#;
        assert_eq!(root_min(list), 2);
        let endless = r#"{"name":"E","type":"record","fields":[{"name":"again","type":"E"}]}"#;
        assert_eq!(root_min(endless), u64::MAX);
        let empty = r#"{"name":"Z","type":"record","fields":[]}"#;
        assert_eq!(root_min(empty), 0);
    }
}
