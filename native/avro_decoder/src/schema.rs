//! Parse a writer schema's Parsing Canonical Form into an arena of types.
//!
//! The Parsing Canonical Form (PCF) is what the fingerprint in every message header is computed
//! from, so it is exactly the writer schema the decoder must follow. In it every name is a full
//! name and there are no `namespace` attributes, so names are taken literally: no namespace
//! inheritance, which the PCF does not need and which would even misread a null-namespace type
//! nested inside a namespaced one. A `namespace` attribute therefore means the caller passed the
//! schema file rather than its canonical form, and is refused with a message saying so.
//! Attributes that do not change the binary encoding (doc, default, aliases, order,
//! logicalType) are ignored, so a logical type decodes as its underlying type.
//!
//! Named types live once in the arena and references point at them by index, which is how
//! recursive types (a linked list) are represented without cycles of ownership.

use std::collections::HashMap;
use std::collections::HashSet;

use serde_json::{Map, Value};

/// Index of a type in [`Schema::types`].
pub type TypeId = usize;

#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
    Fixed { name: String, size: usize },
    Enum { name: String, symbols: Vec<String> },
    Array { items: TypeId },
    Map { values: TypeId },
    Union { branches: Vec<TypeId> },
    Record { name: String, fields: Vec<Field> },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub ty: TypeId,
}

#[derive(Debug)]
pub struct Schema {
    pub types: Vec<Type>,
    /// The top-level record.
    pub root: TypeId,
}

impl Schema {
    /// Full name of the top-level record.
    pub fn root_name(&self) -> &str {
        match &self.types[self.root] {
            Type::Record { name, .. } => name,
            _ => "",
        }
    }
}

/// The primitive types, each stored once at the start of the arena, at these indexes.
const PRIMITIVES: [(&str, Type); 8] = [
    ("null", Type::Null),
    ("boolean", Type::Boolean),
    ("int", Type::Int),
    ("long", Type::Long),
    ("float", Type::Float),
    ("double", Type::Double),
    ("bytes", Type::Bytes),
    ("string", Type::String),
];

/// Parse the PCF of a record schema; the error is one line saying what is wrong and where.
pub fn parse(json: &str) -> Result<Schema, String> {
    let value: Value = serde_json::from_str(json).map_err(|e| format!("not valid JSON: {e}"))?;
    let mut parser = Parser {
        types: PRIMITIVES.iter().map(|(_, t)| t.clone()).collect(),
        names: HashMap::new(),
    };
    let root = parser.parse_type(&value, "top-level type")?;
    match &parser.types[root] {
        Type::Record { .. } => Ok(Schema {
            types: parser.types,
            root,
        }),
        other => Err(format!(
            "the top-level type must be a record, got {}",
            kind(other)
        )),
    }
}

struct Parser {
    types: Vec<Type>,
    /// Full name -> index of every named type defined so far.
    names: HashMap<String, TypeId>,
}

impl Parser {
    /// `at` says where the type is (e.g. `field amount of mesh.Transaction`), for messages.
    fn parse_type(&mut self, value: &Value, at: &str) -> Result<TypeId, String> {
        match value {
            Value::String(name) => self.resolve(name, at),
            Value::Array(branches) => self.parse_union(branches, at),
            Value::Object(object) => self.parse_object(object, at),
            other => Err(format!(
                "{at}: a type must be a name, an object or an array, got {other}"
            )),
        }
    }

    fn resolve(&self, name: &str, at: &str) -> Result<TypeId, String> {
        if let Some(id) = primitive(name) {
            return Ok(id);
        }
        self.names.get(name).copied().ok_or_else(|| {
            format!(
                "{at}: unknown type {name:?} (named types must be defined before use, by full name)"
            )
        })
    }

    fn parse_union(&mut self, branches: &[Value], at: &str) -> Result<TypeId, String> {
        let mut ids = Vec::with_capacity(branches.len());
        let mut seen = HashSet::new();
        for branch in branches {
            let id = self.parse_type(branch, at)?;
            let ty = &self.types[id];
            if matches!(ty, Type::Union { .. }) {
                return Err(format!(
                    "{at}: a union may not directly contain another union"
                ));
            }
            let key = match ty {
                Type::Fixed { name, .. } | Type::Enum { name, .. } | Type::Record { name, .. } => {
                    name.clone()
                }
                other => kind(other).to_owned(),
            };
            if !seen.insert(key.clone()) {
                return Err(format!("{at}: the union has two branches of type {key}"));
            }
            ids.push(id);
        }
        Ok(self.push(Type::Union { branches: ids }))
    }

    fn parse_object(&mut self, object: &Map<String, Value>, at: &str) -> Result<TypeId, String> {
        if object.contains_key("namespace") {
            return Err(format!(
                "{at}: a \"namespace\" attribute means this is not the Parsing Canonical Form; \
                 pass that (full names, no namespaces), e.g. SchemaVersion.canonical_form"
            ));
        }
        let kind = match object.get("type") {
            Some(Value::String(kind)) => kind.as_str(),
            Some(other) => {
                return Err(format!("{at}: \"type\" must be a string here, got {other}"));
            }
            None => return Err(format!("{at}: an object type needs a \"type\" attribute")),
        };
        match kind {
            "record" | "error" => self.parse_record(object, at),
            "enum" => {
                let name = self.new_name(object, at)?;
                let symbols = parse_symbols(object, &name)?;
                Ok(self.define(name.clone(), Type::Enum { name, symbols }))
            }
            "fixed" => {
                let name = self.new_name(object, at)?;
                let size = match object.get("size") {
                    Some(Value::Number(n)) => n.as_u64().and_then(|n| usize::try_from(n).ok()),
                    _ => None,
                }
                .ok_or_else(|| format!("fixed {name}: \"size\" must be a non-negative integer"))?;
                Ok(self.define(name.clone(), Type::Fixed { name, size }))
            }
            "array" => {
                let items = required(object, "items", at)?;
                let items = self.parse_type(items, &format!("items of the array in {at}"))?;
                Ok(self.push(Type::Array { items }))
            }
            "map" => {
                let values = required(object, "values", at)?;
                let values = self.parse_type(values, &format!("values of the map in {at}"))?;
                Ok(self.push(Type::Map { values }))
            }
            // {"type": "long"} is a long; {"type": "mesh.Thing"} a reference.
            name => self.resolve(name, at),
        }
    }

    fn parse_record(&mut self, object: &Map<String, Value>, at: &str) -> Result<TypeId, String> {
        let name = self.new_name(object, at)?;
        // Defined before its fields are parsed, so a field may refer to the record itself.
        let id = self.define(
            name.clone(),
            Type::Record {
                name: name.clone(),
                fields: Vec::new(),
            },
        );
        let Some(Value::Array(raw_fields)) = object.get("fields") else {
            return Err(format!("record {name}: \"fields\" must be an array"));
        };
        let mut fields = Vec::with_capacity(raw_fields.len());
        let mut seen = HashSet::new();
        for raw in raw_fields {
            let field_name = match raw.get("name") {
                Some(Value::String(n)) if !n.is_empty() => n.clone(),
                _ => {
                    return Err(format!(
                        "record {name}: every field needs a non-empty \"name\""
                    ));
                }
            };
            if !seen.insert(field_name.clone()) {
                return Err(format!("record {name}: two fields are named {field_name}"));
            }
            let where_ = format!("field {field_name} of {name}");
            let ty = raw
                .get("type")
                .ok_or_else(|| format!("{where_}: no \"type\""))?;
            let ty = self.parse_type(ty, &where_)?;
            fields.push(Field {
                name: field_name,
                ty,
            });
        }
        self.types[id] = Type::Record { name, fields };
        Ok(id)
    }

    /// The `name` of a named type about to be defined, checked to be new.
    fn new_name(&self, object: &Map<String, Value>, at: &str) -> Result<String, String> {
        let name = match object.get("name") {
            Some(Value::String(n)) if !n.is_empty() => n.clone(),
            _ => return Err(format!("{at}: a named type needs a non-empty \"name\"")),
        };
        if primitive(&name).is_some() {
            return Err(format!(
                "{at}: {name:?} is a primitive type and cannot be redefined"
            ));
        }
        if self.names.contains_key(&name) {
            return Err(format!("{at}: type {name} is defined twice"));
        }
        Ok(name)
    }

    /// Add a named type and make its name resolvable.
    fn define(&mut self, name: String, ty: Type) -> TypeId {
        let id = self.push(ty);
        self.names.insert(name, id);
        id
    }

    fn push(&mut self, ty: Type) -> TypeId {
        self.types.push(ty);
        self.types.len() - 1
    }
}

fn primitive(name: &str) -> Option<TypeId> {
    PRIMITIVES.iter().position(|(n, _)| *n == name)
}

fn required<'v>(object: &'v Map<String, Value>, key: &str, at: &str) -> Result<&'v Value, String> {
    object
        .get(key)
        .ok_or_else(|| format!("{at}: the type needs a {key:?} attribute"))
}

fn parse_symbols(object: &Map<String, Value>, name: &str) -> Result<Vec<String>, String> {
    let Some(Value::Array(raw)) = object.get("symbols") else {
        return Err(format!(
            "enum {name}: \"symbols\" must be an array of strings"
        ));
    };
    let mut symbols = Vec::with_capacity(raw.len());
    for symbol in raw {
        let Value::String(symbol) = symbol else {
            return Err(format!(
                "enum {name}: \"symbols\" must be an array of strings"
            ));
        };
        if symbols.contains(symbol) {
            return Err(format!("enum {name}: symbol {symbol} appears twice"));
        }
        symbols.push(symbol.clone());
    }
    Ok(symbols)
}

/// How a type is called in messages: the Avro type name of its kind.
pub fn kind(ty: &Type) -> &'static str {
    match ty {
        Type::Null => "null",
        Type::Boolean => "boolean",
        Type::Int => "int",
        Type::Long => "long",
        Type::Float => "float",
        Type::Double => "double",
        Type::Bytes => "bytes",
        Type::String => "string",
        Type::Fixed { .. } => "fixed",
        Type::Enum { .. } => "enum",
        Type::Array { .. } => "array",
        Type::Map { .. } => "map",
        Type::Union { .. } => "union",
        Type::Record { .. } => "record",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(json: &str) -> String {
        parse(json).unwrap_err()
    }

    #[test]
    fn parses_a_canonical_record_with_named_types() {
        let s = parse(
            r#"{"name":"a.R","type":"record","fields":[
                {"name":"e","type":{"name":"a.E","type":"enum","symbols":["X","Y"]}},
                {"name":"f","type":{"name":"a.F","type":"fixed","size":3}},
                {"name":"again","type":["null","a.E"]},
                {"name":"m","type":{"type":"map","values":{"type":"array","items":"long"}}}]}"#,
        )
        .unwrap();
        assert_eq!(s.root_name(), "a.R");
        let Type::Record { fields, .. } = &s.types[s.root] else {
            panic!()
        };
        assert_eq!(
            s.types[fields[0].ty],
            Type::Enum {
                name: "a.E".into(),
                symbols: vec!["X".into(), "Y".into()]
            }
        );
        assert_eq!(
            s.types[fields[1].ty],
            Type::Fixed {
                name: "a.F".into(),
                size: 3
            }
        );
        assert_eq!(
            s.types[fields[2].ty],
            Type::Union {
                branches: vec![0, fields[0].ty]
            }
        );
    }

    #[test]
    fn a_record_may_refer_to_itself() {
        let s = parse(
            r#"{"name":"List","type":"record","fields":[{"name":"v","type":"int"},
                {"name":"next","type":["null","List"]}]}"#,
        )
        .unwrap();
        let Type::Record { fields, .. } = &s.types[s.root] else {
            panic!()
        };
        assert_eq!(
            s.types[fields[1].ty],
            Type::Union {
                branches: vec![0, s.root]
            }
        );
    }

    #[test]
    fn refuses_bad_schemas_with_a_reason() {
        assert!(err("{").starts_with("not valid JSON"));
        assert_eq!(
            err(r#""string""#),
            "the top-level type must be a record, got string"
        );
        assert!(
            err(r#"{"name":"R","type":"record","fields":[{"name":"x","type":"Nope"}]}"#)
                .starts_with("field x of R: unknown type \"Nope\"")
        );
        assert!(
            err(r#"{"name":"R","namespace":"a","type":"record","fields":[]}"#)
                .contains("Parsing Canonical Form")
        );
        assert!(
            err(r#"{"name":"R","type":"record","fields":[{"name":"x","type":["int","int"]}]}"#)
                .contains("two branches of type int")
        );
        assert!(
            err(r#"{"name":"R","type":"record","fields":[{"name":"x","type":["int",["null"]]}]}"#)
                .contains("may not directly contain another union")
        );
        assert!(err(r#"{"name":"R","type":"record","fields":[{"name":"x","type":"int"},{"name":"x","type":"int"}]}"#)
            .contains("two fields are named x"));
        assert!(err(r#"{"name":"R","type":"record","fields":[{"name":"x","type":{"name":"F","type":"fixed","size":-1}}]}"#)
            .contains("non-negative integer"));
        assert!(err(r#"{"name":"R","type":"record","fields":[{"name":"x","type":{"name":"R","type":"enum","symbols":[]}}]}"#)
            .contains("defined twice"));
        assert!(err(r#"{"name":"R","type":"record","fields":[{"name":"x","type":{"name":"E","type":"enum","symbols":["A","A"]}}]}"#)
            .contains("appears twice"));
    }
}
