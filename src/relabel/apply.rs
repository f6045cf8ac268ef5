//! Applying relabel rules to one label set: Prometheus' `relabel.Process`.

use std::borrow::Cow;

use arcstr::ArcStr;

use md5::{Digest, Md5};

use regex::Regex;

use super::config::{Action, CompiledRule};
use super::dialect::Dialect;
use super::graphite::expand_graphite;
use super::name_memo::{NameDecision, NameMemo};
use super::template::expand;
use crate::labels::{Labels, LabelsBuilder};

/// `labels` after `rules`, applied in order, or `None` if a rule dropped the target.
///
/// As in Prometheus, a label with an empty value is the same as no label: empty values
/// in `labels` are not carried over, a rule that writes an empty value removes the
/// label, and the result holds no empty values.
pub fn relabel(labels: &Labels, rules: &[CompiledRule]) -> Option<Labels> {
    let mut set = WorkingSet::new(labels);
    for rule in rules {
        if !apply(rule, &mut set, None) {
            return None;
        }
    }
    Some(set.finish())
}

/// One rule; false if it drops the target. A name-only rule (`labelmap`, `labeldrop`,
/// `labelkeep`) asks `memo` for its decisions when given one.
pub(super) fn apply(
    rule: &CompiledRule,
    set: &mut WorkingSet<'_>,
    memo: Option<&mut NameMemo>,
) -> bool {
    if let Some(selector) = &rule.if_selector
        && !selector.matches(|name| set.get(name))
    {
        // vmagent: a `keep` rule drops what its `if` does not match; any other rule
        // leaves it alone.
        return rule.action != Action::Keep;
    }
    match rule.action {
        Action::Drop => return !rule.regex.is_match(&source_value(rule, set)),
        Action::Keep => return rule.regex.is_match(&source_value(rule, set)),
        Action::DropEqual => return set.get(&rule.target_label) != source_value(rule, set),
        Action::KeepEqual => return set.get(&rule.target_label) == source_value(rule, set),
        Action::Replace => match (&rule.copy_to, rule.source_labels.as_slice()) {
            // `(.*)` matches any value and `$1` is all of it: the source's value as it
            // is, shared rather than copied.
            (Some(target), [source]) => {
                let value = set.get_shared(source);
                set.set_shared(ArcStr::clone(target), value);
            }
            _ => {
                let value = source_value(rule, set).into_owned();
                replace(rule, &value, set);
            }
        },
        Action::Lowercase => {
            let value = source_value(rule, set).to_lowercase();
            set.set(&rule.target_label, &value);
        }
        Action::Uppercase => {
            let value = source_value(rule, set).to_uppercase();
            set.set(&rule.target_label, &value);
        }
        Action::KeepIfEqual => return all_equal(rule, set),
        Action::DropIfEqual => return !all_equal(rule, set),
        Action::KeepIfContains => return contains_all(rule, set),
        Action::DropIfContains => return !contains_all(rule, set),
        // Compiled to `keep` and `drop` on `__name__`.
        Action::KeepMetrics => return rule.regex.is_match(set.get("__name__")),
        Action::DropMetrics => return !rule.regex.is_match(set.get("__name__")),
        Action::ReplaceAll => replace_all(rule, set),
        Action::LabelMapAll => label_map_all(rule, set),
        Action::Graphite => graphite(rule, set),
        Action::HashMod => hash_mod_into(rule, set),
        Action::LabelMap => label_map(rule, set, memo),
        Action::LabelDrop => {
            let mut memo = memo;
            set.entries
                .retain(|e| !decide(rule, &e.name, memo.as_deref_mut()).matches);
        }
        Action::LabelKeep => {
            let mut memo = memo;
            set.entries
                .retain(|e| decide(rule, &e.name, memo.as_deref_mut()).matches);
        }
    }
    true
}

/// `replace_all` (vmagent): every match of the unanchored regex in the sources'
/// value replaced; the target is written only when something was replaced.
fn replace_all(rule: &CompiledRule, set: &mut WorkingSet<'_>) {
    if let Some(re) = &rule.unanchored {
        let value = source_value(rule, set).into_owned();
        let replaced = replace_every_match(re, &value, &rule.replacement);
        if replaced != value {
            set.set(&rule.target_label, &replaced);
        }
    }
}

/// `labelmap_all` (vmagent): every label renamed by replacing each match in its name.
fn label_map_all(rule: &CompiledRule, set: &mut WorkingSet<'_>) {
    if let Some(re) = &rule.unanchored {
        for (name, value) in set.snapshot() {
            let renamed = replace_every_match(re, &name, &rule.replacement);
            if renamed != *name && rule.names.is_valid(&renamed) {
                set.delete(&name);
                set.set_shared(ArcStr::from(renamed), value);
            }
        }
    }
}

/// `graphite` (vmagent): the labels its template's captures of `__name__` give.
fn graphite(rule: &CompiledRule, set: &mut WorkingSet<'_>) {
    if let Some((template, labels)) = &rule.graphite {
        let name = set.get("__name__").to_string();
        if let Some(captures) = template.captures(&name) {
            for (label, value) in labels {
                set.set(label, &expand_graphite(value, &captures));
            }
        }
    }
}

/// `hashmod`: the sources' value hashed as the rule's dialect does, modulo `modulus`.
fn hash_mod_into(rule: &CompiledRule, set: &mut WorkingSet<'_>) {
    let value = source_value(rule, set);
    let bucket = match rule.dialect {
        Dialect::Prometheus => hash_mod(&value, rule.modulus),
        Dialect::VictoriaMetrics => hash_mod_xxhash(&value, rule.modulus),
    };
    set.set(&rule.target_label, &bucket.to_string());
}

/// `labelmap`: every label the regex maps, copied in the order Prometheus' builder
/// visits them (the last copy to a name wins), from the labels as they were before
/// the rule.
fn label_map(rule: &CompiledRule, set: &mut WorkingSet<'_>, mut memo: Option<&mut NameMemo>) {
    let mut copies: Vec<((bool, u64), ArcStr, ArcStr)> = Vec::new();
    for entry in &set.entries {
        if let Some(new_name) = decide(rule, &entry.name, memo.as_deref_mut()).renamed {
            copies.push((entry.visit_order(), new_name, ArcStr::clone(&*entry.value)));
        }
    }
    // Stable: untouched labels stay in name order.
    copies.sort_by_key(|(order, _, _)| *order);
    for (_, name, value) in copies {
        set.set_shared(name, value);
    }
}

/// A name-only rule's decision for `name`: remembered in `memo` if given.
fn decide(rule: &CompiledRule, name: &ArcStr, memo: Option<&mut NameMemo>) -> NameDecision {
    match memo {
        Some(memo) => memo.decide(rule, name),
        None => NameDecision::compute(rule, name),
    }
}

/// The source labels' values joined with the separator (absent labels are empty);
/// one source label's value is borrowed.
fn source_value<'s>(rule: &CompiledRule, set: &'s WorkingSet<'_>) -> Cow<'s, str> {
    if let [name] = rule.source_labels.as_slice() {
        return Cow::Borrowed(set.get(name));
    }
    let mut value = String::new();
    for (i, name) in rule.source_labels.iter().enumerate() {
        if i > 0 {
            value.push_str(&rule.separator);
        }
        value.push_str(set.get(name));
    }
    Cow::Owned(value)
}

/// `replace`: if the regex matches, write the expanded replacement to the expanded
/// target label; an empty replacement removes the label, and a target that expands to
/// something that is not a label name is skipped. In vmagent's dialect, `{{name}}` in
/// the replacement is first replaced by label `name`'s value.
fn replace(rule: &CompiledRule, value: &str, set: &mut WorkingSet<'_>) {
    let Some(caps) = rule.regex.captures(value) else {
        return;
    };
    let target = expand(&rule.target_label, &caps);
    if !rule.names.is_valid(&target) {
        return;
    }
    let result = if rule.dialect == Dialect::VictoriaMetrics && rule.replacement.contains("{{") {
        expand(&fill_label_references(&rule.replacement, set), &caps)
    } else {
        expand(&rule.replacement, &caps)
    };
    set.set(&target, &result);
}

/// vmagent's `{{name}}` references in a replacement, filled from the labels; an
/// unclosed `{{` is kept as written.
fn fill_label_references(replacement: &str, set: &WorkingSet<'_>) -> String {
    let mut out = String::with_capacity(replacement.len());
    let mut rest = replacement;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else {
            out.push_str(&rest[open..]);
            return out;
        };
        out.push_str(set.get(&after[..close]));
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    out
}

/// `value` with every match of `re` replaced by `template` expanded for that match
/// (Go's `Regexp.ReplaceAllString`).
fn replace_every_match(re: &Regex, value: &str, template: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut last = 0;
    for caps in re.captures_iter(value) {
        let Some(whole) = caps.get(0) else {
            continue;
        };
        out.push_str(&value[last..whole.start()]);
        out.push_str(&expand(template, &caps));
        last = whole.end();
    }
    out.push_str(&value[last..]);
    out
}

/// vmagent's keep/drop_if_equal test: every source label has the first one's value.
fn all_equal(rule: &CompiledRule, set: &WorkingSet<'_>) -> bool {
    let mut values = rule.source_labels.iter().map(|name| set.get(name));
    let first = values.next().unwrap_or("");
    values.all(|v| v == first)
}

/// vmagent's keep/drop_if_contains test: `target_label`'s value contains each source
/// label's value.
fn contains_all(rule: &CompiledRule, set: &WorkingSet<'_>) -> bool {
    let haystack = set.get(&rule.target_label);
    rule.source_labels
        .iter()
        .all(|name| haystack.contains(set.get(name)))
}

/// Prometheus' `hashmod`: MD5 of the value, its *last* 8 bytes read as a big-endian
/// integer, modulo `modulus`. (Prometheus keeps the last 8 bytes so results match its
/// earlier versions; taking the first 8 would send targets to different shards.)
pub fn hash_mod(value: &str, modulus: u64) -> u64 {
    prometheus_hash(value) % modulus
}

/// The number Prometheus' `hashmod` takes the modulus of: MD5 of the value, its last 8
/// bytes read as a big-endian integer. Computed once per target, it gives every
/// modulus's shard ([`hash_mod`]).
pub fn prometheus_hash(value: &str) -> u64 {
    let digest = Md5::digest(value.as_bytes());
    let mut last = [0u8; 8];
    last.copy_from_slice(&digest[8..16]);
    u64::from_be_bytes(last)
}

/// vmagent's `hashmod`: xxHash64 of the value, modulo `modulus`.
pub fn hash_mod_xxhash(value: &str, modulus: u64) -> u64 {
    xxhash_rust::xxh64::xxh64(value.as_bytes(), 0) % modulus
}

/// The labels while rules run, mirroring Prometheus' `labels.Builder`, whose order of
/// iteration `labelmap` depends on.
///
/// Sorted by name. Each label remembers whether it is an input label left untouched
/// (`set_order` `None`) or was written by a rule, and if so when it was first written.
/// Prometheus' builder visits untouched labels in name order, then written ones in the
/// order they were first written; when two labels map to one name, the last visited
/// wins, so kubesd visits in the same order. (For scrape targets Prometheus fills its
/// builder from a Go map, so there its order is unspecified; kubesd's is deterministic.)
pub(super) struct WorkingSet<'a> {
    /// Sorted by name.
    entries: Vec<Entry<'a>>,
    next_order: u64,
    /// When recording: every name a rule wrote or removed by name (see
    /// [`WorkingSet::record_writes`]).
    written: Option<Vec<ArcStr>>,
}

/// A label while rules run: the input's and the seeds' strings are borrowed (most of a
/// target's labels are read or removed, never kept, so they cost no reference counts),
/// what rules write is owned.
struct Entry<'a> {
    name: Cow<'a, ArcStr>,
    value: Cow<'a, ArcStr>,
    set_order: Option<u64>,
}

impl Entry<'_> {
    /// Where the builder visits this label: untouched labels first (in name order,
    /// as the entries are sorted), then written ones in the order they were written.
    fn visit_order(&self) -> (bool, u64) {
        self.set_order.map_or((false, 0), |o| (true, o))
    }
}

impl<'a> WorkingSet<'a> {
    /// The set for `labels`, without their empty values.
    pub(super) fn new(labels: &'a Labels) -> WorkingSet<'a> {
        WorkingSet::seeded(labels, std::iter::empty())
    }

    /// The set for `labels` (without their empty values), then each of `seeds` set in
    /// turn unless a label of that name is already there.
    pub(super) fn seeded(
        labels: &'a Labels,
        seeds: impl Iterator<Item = (&'a ArcStr, &'a ArcStr)>,
    ) -> WorkingSet<'a> {
        let mut entries: Vec<Entry<'a>> = Vec::with_capacity(labels.len() + 8);
        entries.extend(
            labels
                .iter()
                .filter(|l| !l.value.is_empty())
                .map(|l| Entry {
                    name: Cow::Borrowed(&l.name),
                    value: Cow::Borrowed(&l.value),
                    set_order: None,
                }),
        );
        // Each seed that is not there yet, with where it goes among the input labels.
        let mut added: Vec<(usize, Entry<'a>)> = Vec::new();
        let mut next_order = 0;
        for (name, value) in seeds {
            let Err(at) = entries.binary_search_by(|e| e.name.as_str().cmp(name)) else {
                continue;
            };
            if value.is_empty() || added.iter().any(|(_, e)| **e.name == **name) {
                continue;
            }
            added.push((
                at,
                Entry {
                    name: Cow::Borrowed(name),
                    value: Cow::Borrowed(value),
                    set_order: Some(next_order),
                },
            ));
            next_order += 1;
        }
        if !added.is_empty() {
            // Merged in one pass, comparing the few seeds' names only among themselves
            // (reading every input name again would cost a cache miss each).
            added.sort_by(|(a, x), (b, y)| {
                a.cmp(b).then_with(|| x.name.as_str().cmp(y.name.as_str()))
            });
            let mut merged = Vec::with_capacity(entries.len() + added.len() + 8);
            let mut added = added.into_iter().peekable();
            for (i, entry) in entries.into_iter().enumerate() {
                while let Some((_, seed)) = added.next_if(|(at, _)| *at == i) {
                    merged.push(seed);
                }
                merged.push(entry);
            }
            merged.extend(added.map(|(_, seed)| seed));
            entries = merged;
        }
        WorkingSet {
            entries,
            next_order,
            written: None,
        }
    }

    fn find(&self, name: &str) -> Result<usize, usize> {
        self.entries.binary_search_by(|e| e.name.as_str().cmp(name))
    }

    /// The value of `name`, empty if absent.
    pub(super) fn get(&self, name: &str) -> &str {
        match self.find(name) {
            Ok(i) => &self.entries[i].value,
            Err(_) => "",
        }
    }

    /// The value of `name`, shared; empty if absent.
    pub(super) fn get_shared(&self, name: &str) -> ArcStr {
        match self.find(name) {
            Ok(i) => ArcStr::clone(&*self.entries[i].value),
            Err(_) => ArcStr::new(),
        }
    }

    /// Sets `name` to `value`; an empty value removes it.
    pub(super) fn set(&mut self, name: &str, value: &str) {
        if value.is_empty() {
            self.delete(name);
            return;
        }
        self.set_shared(ArcStr::from(name), ArcStr::from(value));
    }

    pub(super) fn set_shared(&mut self, name: ArcStr, value: ArcStr) {
        if let Some(written) = &mut self.written {
            written.push(ArcStr::clone(&name));
        }
        if value.is_empty() {
            self.delete(&name);
            return;
        }
        match self.find(&name) {
            Ok(i) => {
                let entry = &mut self.entries[i];
                entry.value = Cow::Owned(value);
                // A label rules already wrote keeps its place in the write order; an
                // input label joins the end of it, as in Prometheus' builder.
                if entry.set_order.is_none() {
                    entry.set_order = Some(self.next_order);
                    self.next_order += 1;
                }
            }
            Err(i) => {
                self.entries.insert(
                    i,
                    Entry {
                        name: Cow::Owned(name),
                        value: Cow::Owned(value),
                        set_order: Some(self.next_order),
                    },
                );
                self.next_order += 1;
            }
        }
    }

    /// Removes `name` if present.
    pub(super) fn delete(&mut self, name: &str) {
        if let Some(written) = &mut self.written {
            written.push(ArcStr::from(name));
        }
        if let Ok(i) = self.find(name) {
            self.entries.remove(i);
        }
    }

    /// The labels as they are now, in the order Prometheus' builder visits them.
    pub(super) fn snapshot(&self) -> Vec<(ArcStr, ArcStr)> {
        let mut order: Vec<&Entry> = self.entries.iter().collect();
        // Stable: untouched labels stay in name order.
        order.sort_by_key(|e| e.visit_order());
        order
            .into_iter()
            .map(|e| (ArcStr::clone(&*e.name), ArcStr::clone(&*e.value)))
            .collect()
    }

    /// From now on, records the name of every label a rule writes or removes by name
    /// (not those `labeldrop` and `labelkeep` remove: they decide by name, and the
    /// caller asks them).
    pub(super) fn record_writes(&mut self) {
        self.written = Some(Vec::new());
    }

    /// The names recorded since [`WorkingSet::record_writes`].
    pub(super) fn take_written(&mut self) -> Vec<ArcStr> {
        self.written.take().unwrap_or_default()
    }

    /// Whether `name` is set.
    pub(super) fn contains(&self, name: &str) -> bool {
        self.find(name).is_ok()
    }

    /// Keeps only the labels `keep` picks.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.entries.retain(|e| keep(&e.name));
    }

    /// The final label set.
    pub(super) fn finish(&self) -> Labels {
        let mut b = LabelsBuilder::new();
        for e in &self.entries {
            b.add_shared(&e.name, &e.value);
        }
        b.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Prometheus' own expected values (`relabel_test.go`).
    #[test]
    fn hash_mod_matches_prometheus() {
        assert_eq!(hash_mod("baz", 1000), 976);
        assert_eq!(hash_mod("foo\nbar", 1000), 734);
    }
}
