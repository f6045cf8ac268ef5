//! JSON merge patch (RFC 7386), the `application/merge-patch+json` PATCH
//! body: objects merge recursively, `null` deletes a key, anything else
//! (arrays included) replaces the target value.

use serde_json::{Map, Value};

/// Applies `patch` to `target` in place, per RFC 7386.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch_map) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(target_map) = target {
        for (key, value) in patch_map {
            if value.is_null() {
                target_map.remove(key);
            } else {
                merge_patch(target_map.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rfc7386_examples() {
        let mut doc = json!({"title": "Goodbye!", "author": {"givenName": "John", "familyName": "Doe"},
                             "tags": ["example", "sample"], "content": "This will be unchanged"});
        let patch = json!({"title": "Hello!", "phoneNumber": "+01-123-456-7890",
                           "author": {"familyName": null}, "tags": ["example"]});
        merge_patch(&mut doc, &patch);
        assert_eq!(
            doc,
            json!({"title": "Hello!", "author": {"givenName": "John"}, "tags": ["example"],
                   "content": "This will be unchanged", "phoneNumber": "+01-123-456-7890"})
        );
        let mut scalar = json!({"a": "b"});
        merge_patch(&mut scalar, &json!({"a": {"bb": null, "c": 1}}));
        assert_eq!(scalar, json!({"a": {"c": 1}}));
    }
}
