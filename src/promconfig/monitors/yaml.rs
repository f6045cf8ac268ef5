//! Building the generated scrape configs: YAML mappings in the order prometheus-operator
//! writes their keys, so a job reads as the operator's does.

use serde_norway::{Mapping, Value};

/// A mapping built key by key, in order.
#[derive(Clone, Debug, Default)]
pub struct Map(Mapping);

impl Map {
    /// An empty mapping.
    pub fn new() -> Map {
        Map(Mapping::new())
    }

    /// Appends `key: value`.
    pub fn put(&mut self, key: &str, value: impl Into<Value>) {
        self.0.insert(Value::from(key), value.into());
    }

    /// Appends `key: value` if `value` is set.
    pub fn put_some<T: Into<Value>>(&mut self, key: &str, value: Option<T>) {
        if let Some(value) = value {
            self.put(key, value);
        }
    }

    /// Whether it has no key.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value of `key`, to change it.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.0.get_mut(key)
    }
}

impl From<Map> for Value {
    fn from(map: Map) -> Value {
        Value::Mapping(map.0)
    }
}

/// A list of strings.
pub fn strings<S: AsRef<str>>(items: &[S]) -> Value {
    Value::Sequence(items.iter().map(|s| Value::from(s.as_ref())).collect())
}

/// A list of values.
pub fn list(items: Vec<Value>) -> Value {
    Value::Sequence(items)
}

/// A mapping of string keys, sorted (Go marshals its maps sorted by key).
pub fn sorted<'a, V: Into<Value> + Clone + 'a>(
    entries: impl IntoIterator<Item = (&'a String, &'a V)>,
) -> Value {
    let mut entries: Vec<_> = entries.into_iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let mut map = Map::new();
    for (key, value) in entries {
        map.put(key, value.clone());
    }
    map.into()
}
