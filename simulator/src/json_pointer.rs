//! JSON pointers (RFC 6901) read as `serde_json::Value::pointer` reads them, without
//! its two string allocations per token: the controllers and the churn read a pod's
//! fields through dozens of pointers per change, and those allocations were most of a
//! change's cost.

use serde_json::Value;

/// The value at `pointer` in `value` (`""` is the value itself), as
/// [`Value::pointer`] finds it.
pub fn at<'a>(value: &'a Value, pointer: &str) -> Option<&'a Value> {
    if pointer.is_empty() {
        return Some(value);
    }
    let tokens = pointer.strip_prefix('/')?;
    tokens.split('/').try_fold(value, |target, token| {
        if token.contains('~') {
            step(target, &unescape(token))
        } else {
            step(target, token)
        }
    })
}

/// The value at `pointer` in `value`, mutable, as [`Value::pointer_mut`] finds it.
pub fn at_mut<'a>(value: &'a mut Value, pointer: &str) -> Option<&'a mut Value> {
    if pointer.is_empty() {
        return Some(value);
    }
    let tokens = pointer.strip_prefix('/')?;
    tokens.split('/').try_fold(value, |target, token| {
        if token.contains('~') {
            step_mut(target, &unescape(token))
        } else {
            step_mut(target, token)
        }
    })
}

/// The string at `pointer`, empty if there is none or it is not a string.
pub fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    at(value, pointer).and_then(Value::as_str).unwrap_or("")
}

/// A token's `~1` and `~0` made `/` and `~`, in that order (RFC 6901, section 4).
fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn step<'a>(target: &'a Value, token: &str) -> Option<&'a Value> {
    match target {
        Value::Object(map) => map.get(token),
        Value::Array(list) => index(token).and_then(|i| list.get(i)),
        _ => None,
    }
}

fn step_mut<'a>(target: &'a mut Value, token: &str) -> Option<&'a mut Value> {
    match target {
        Value::Object(map) => map.get_mut(token),
        Value::Array(list) => index(token).and_then(move |i| list.get_mut(i)),
        _ => None,
    }
}

/// An array index as RFC 6901 writes one: digits, no sign, no leading zero.
fn index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_what_serde_json_finds() {
        let mut v = json!({
            "metadata": {"labels": {"statefulset.kubernetes.io/pod-name": "web-0", "a~b": "t"}},
            "list": [{"x": 1}, {"x": 2}],
            "": {"empty": true},
        });
        for pointer in [
            "",
            "/metadata",
            "/metadata/labels/statefulset.kubernetes.io~1pod-name",
            "/metadata/labels/a~0b",
            "/list/1/x",
            "/list/01/x",
            "/list/+1/x",
            "/list/9",
            "/list/x",
            "/metadata/labels/none",
            "/metadata/labels/a~0b/deeper",
            "//empty",
            "no-slash",
        ] {
            assert_eq!(at(&v, pointer), v.pointer(pointer), "{pointer}");
        }
        assert_eq!(str_at(&v, "/metadata/labels/a~0b"), "t");
        assert_eq!(str_at(&v, "/list/0/x"), "");
        if let Some(x) = at_mut(&mut v, "/list/0/x") {
            *x = json!(3);
        }
        assert_eq!(v["list"][0]["x"], 3);
    }
}
