//! A job's file under `--output-dir`: job names are data, never paths.
//!
//! A job name may hold anything (`serviceMonitor/default/app/0`, `../../escaped`), so
//! it is percent-encoded into one file name: ASCII letters, digits, `_` and `-` stay,
//! `.` stays except as the first character, every other byte becomes `%XX` (upper-case
//! hex). The result has no `/`, is never `.` or `..`, and decodes back to the job name
//! ([`job_name_of`]), so two jobs never share a file. A name whose encoding would pass
//! the usual 255-byte limit of a file name is shortened, with a hash of the whole name
//! to keep it unique (not reversible; such names are rare).

use std::path::{Path, PathBuf};

/// The longest file name written (`NAME_MAX` on Linux and most filesystems).
const MAX_FILE_NAME: usize = 255;
/// The extension of every file.
const EXTENSION: &str = ".json";

/// The file under `dir` that holds job `name`'s targets: always directly inside `dir`.
pub fn job_file(dir: &Path, name: &str) -> PathBuf {
    dir.join(job_file_name(name))
}

/// The file name (without directory) for job `name`: `<encoded>.json`.
pub fn job_file_name(name: &str) -> String {
    let mut encoded = String::with_capacity(name.len() + EXTENSION.len());
    for (i, b) in name.bytes().enumerate() {
        let keep = b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || (b == b'.' && i > 0);
        if keep {
            encoded.push(char::from(b));
        } else {
            encoded.push_str(&format!("%{b:02X}"));
        }
    }
    if encoded.is_empty() {
        // No job has an empty name (the loader refuses one), but the function is total.
        encoded.push('%');
    }
    if encoded.len() + EXTENSION.len() > MAX_FILE_NAME {
        use md5::{Digest, Md5};
        let hash: String = Md5::digest(name.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        // Cut at a character boundary of the (ASCII) encoding, off any `%XX` escape.
        let mut keep = MAX_FILE_NAME - EXTENSION.len() - hash.len() - 1;
        while let Some(pos) = encoded[..keep].rfind('%').filter(|p| p + 3 > keep) {
            keep = pos;
        }
        encoded.truncate(keep);
        encoded.push('~');
        encoded.push_str(&hash);
    }
    encoded.push_str(EXTENSION);
    encoded
}

/// The job name a file name written by [`job_file_name`] stands for, or `None` if it is
/// not one (or was shortened).
pub fn job_name_of(file_name: &str) -> Option<String> {
    let encoded = file_name.strip_suffix(EXTENSION)?;
    let mut bytes = Vec::with_capacity(encoded.len());
    let mut rest = encoded.as_bytes();
    while let Some((&b, after)) = rest.split_first() {
        if b == b'%' {
            let hex = std::str::from_utf8(after.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &after[2..];
        } else if b == b'~' {
            return None;
        } else {
            bytes.push(b);
            rest = after;
        }
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_encoded_reversibly_and_stay_in_the_directory() {
        let cases = [
            ("pods", "pods.json"),
            (
                "serviceMonitor/default/app/0",
                "serviceMonitor%2Fdefault%2Fapp%2F0.json",
            ),
            ("../../escaped", "%2E.%2F..%2Fescaped.json"),
            ("..", "%2E..json"),
            (".", "%2E.json"),
            ("a b%c", "a%20b%25c.json"),
            ("ümlaut", "%C3%BCmlaut.json"),
            ("v1.2", "v1.2.json"),
        ];
        for (name, file) in cases {
            assert_eq!(job_file_name(name), file, "{name}");
            assert_eq!(job_name_of(file).as_deref(), Some(name), "{file}");
            let path = job_file(Path::new("/out"), name);
            assert_eq!(path.parent(), Some(Path::new("/out")), "{name}");
        }
        let long = "x/".repeat(200);
        let file = job_file_name(&long);
        assert!(file.len() <= MAX_FILE_NAME && !file.contains('/'), "{file}");
        assert_ne!(file, job_file_name(&"x/".repeat(201)));
        assert_eq!(job_name_of(&file), None);
    }
}
