//! A job's HTTP SD body as kubesd keeps it: its objects' serialized groups in key
//! order in a persistent ordered map ([`KeyedGroups`], an `imbl::OrdMap`: a copy is a
//! pointer, a change copies one path), with a [`Digest`] kept as objects come and go;
//! and [`SdBody`], which joins such maps with the job's name in their holes and writes
//! them out in pieces as a response sends them.
//!
//! Nothing here passes over every object but the writing itself: a change costs
//! O(log n), a body's length and ETag come from the digests.

use std::ops::Bound;
use std::sync::Arc;

use imbl::OrdMap;

use super::{Fnv, Pruner, Share, write_json_str};
use crate::model::ObjectKey;
use crate::relabel::ReadableMeta;

/// What a body needs to know of a set of objects, kept up to date object by object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Digest {
    /// The wrapping sum of each object's hash of its key and bytes: equal sets give
    /// equal sums, whatever order their objects came and went in.
    sum: u64,
    /// Their bytes, holes left out.
    bytes: usize,
    /// Their holes.
    holes: usize,
    /// How many objects.
    objects: usize,
    /// Their targets.
    targets: usize,
    /// Objects whose bytes are known only once written (discovered label sets): not
    /// in `bytes`.
    lazy: usize,
}

impl Digest {
    fn add(&mut self, key: &ObjectKey, share: &Share) {
        self.add_object(&ObjectDigest::of(key, share));
    }

    fn remove(&mut self, key: &ObjectKey, share: &Share) {
        self.remove_object(&ObjectDigest::of(key, share));
    }

    /// Takes out an object added by its part ([`Digest::add_object`]).
    pub fn remove_object(&mut self, object: &ObjectDigest) {
        self.sum = self.sum.wrapping_sub(object.hash);
        self.bytes -= object.bytes as usize;
        self.holes -= object.holes as usize;
        self.lazy -= usize::from(object.lazy);
        self.objects -= 1;
        self.targets -= object.targets as usize;
    }

    /// True when it counts no object.
    pub fn is_empty(&self) -> bool {
        self.objects == 0
    }

    /// The targets it counts.
    pub fn targets(&self) -> usize {
        self.targets
    }

    /// Adds an object by its part ([`ObjectDigest::of`]).
    pub fn add_object(&mut self, object: &ObjectDigest) {
        self.sum = self.sum.wrapping_add(object.hash);
        self.bytes += object.bytes as usize;
        self.holes += object.holes as usize;
        self.lazy += usize::from(object.lazy);
        self.objects += 1;
        self.targets += object.targets as usize;
    }
}

/// One object's part of a [`Digest`], made once and kept where the object's share is
/// made anew for each body it is written in (see [`CutObjects::digest`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectDigest {
    hash: u64,
    bytes: u32,
    holes: u32,
    targets: u32,
    lazy: bool,
}

impl ObjectDigest {
    /// The targets it counts.
    pub fn targets(&self) -> usize {
        self.targets as usize
    }

    /// The part of a digest object `key` adds with `share`.
    pub fn of(key: &ObjectKey, share: &Share) -> ObjectDigest {
        let sizes = share.sizes();
        let (bytes, holes) = sizes.unwrap_or_default();
        // One object's bytes, holes and targets are far below 4 GiB.
        let small = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        ObjectDigest {
            hash: object_hash(key, share),
            bytes: small(bytes),
            holes: small(holes),
            targets: small(share.targets()),
            lazy: sizes.is_none(),
        }
    }
}

/// FNV-1a of an object's key and its share's hash: fixed by definition, so replicas
/// and restarts agree. The key is in it because the body's order is the keys' order.
fn object_hash(key: &ObjectKey, share: &Share) -> u64 {
    let mut hash = Fnv::default();
    hash.write(key.namespace.as_bytes());
    hash.write(&[0]);
    hash.write(key.name.as_bytes());
    hash.write(&share.hash().to_le_bytes());
    hash.0
}

/// Objects' shares in body order (by namespace and name) with their [`Digest`]. Holds
/// only objects that have targets. Cloning it is O(1) and shares every node.
#[derive(Clone, Debug, Default)]
pub struct KeyedGroups {
    objects: OrdMap<ObjectKey, Share>,
    digest: Digest,
}

impl KeyedGroups {
    /// Puts `share` for `key` (replacing what it had); an empty one removes the key.
    pub fn insert(&mut self, key: &ObjectKey, share: &Share) {
        if share.is_empty() {
            self.objects
                .remove(key)
                .inspect(|old| self.digest.remove(key, old));
            return;
        }
        // A key held already keeps its entry: only the share is replaced, and the key
        // is neither cloned nor dropped (each a count touched in its strings).
        match self.objects.get_mut(key) {
            Some(held) => {
                let old = std::mem::replace(held, share.clone());
                self.digest.remove(key, &old);
            }
            None => {
                self.objects.insert(key.clone(), share.clone());
            }
        }
        self.digest.add(key, share);
    }

    /// Removes `key` if it holds this very `share` (not another object's that took the
    /// key meanwhile); true if it did.
    pub fn remove(&mut self, key: &ObjectKey, share: &Share) -> bool {
        match self.objects.get(key) {
            Some(held) if held.same(share) => {
                self.objects.remove(key);
                self.digest.remove(key, share);
                true
            }
            _ => false,
        }
    }

    /// The digest.
    pub fn digest(&self) -> Digest {
        self.digest
    }

    /// Targets held.
    pub fn targets(&self) -> usize {
        self.digest.targets
    }

    /// True when no object is held.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// True when `other` is this very map (a copy of it, nothing changed since).
    pub fn same_map(&self, other: &KeyedGroups) -> bool {
        self.objects.ptr_eq(&other.objects)
    }

    /// The objects in body order.
    pub fn iter(&self) -> impl Iterator<Item = (&ObjectKey, &Share)> {
        self.objects.iter()
    }

    /// The share held for `key`, if any.
    pub fn get(&self, key: &ObjectKey) -> Option<&Share> {
        self.objects.get(key)
    }

    /// What changed from this map to `newer` (a later copy of it), object by object in
    /// key order: the map's nodes both share are passed over, so this costs the
    /// changed objects, not all of them.
    pub fn diff<'a>(&'a self, newer: &'a KeyedGroups) -> impl Iterator<Item = Change<'a>> {
        self.objects.diff(&newer.objects).map(|item| match item {
            imbl::ordmap::DiffItem::Add(key, share) => Change::Added(key, share),
            imbl::ordmap::DiffItem::Update { new, .. } => Change::Changed(new.0, new.1),
            imbl::ordmap::DiffItem::Remove(key, share) => Change::Removed(key, share),
        })
    }
}

/// One object's change between two copies of a map ([`KeyedGroups::diff`]).
#[derive(Clone, Copy, Debug)]
pub enum Change<'a> {
    /// New in the later map, with its share.
    Added(&'a ObjectKey, &'a Share),
    /// Another share in the later map: this one.
    Changed(&'a ObjectKey, &'a Share),
    /// Gone from the later map (its share in the earlier).
    Removed(&'a ObjectKey, &'a Share),
}

/// Objects a body is cut from while it is written, instead of a map kept of them: a
/// member's view or a collector's share, cut from a job actor's placements
/// (`service::fleet::assigned`) by each request, so that nothing per member is kept.
pub trait CutObjects: Send + Sync + std::fmt::Debug {
    /// Calls `f` with each object's share in body order (by key), from key `from` on
    /// (every object when `None`), until `f` answers false.
    fn each_from(&self, from: Option<&ObjectKey>, f: &mut dyn FnMut(&ObjectKey, &Share) -> bool);

    /// The digest of the objects [`CutObjects::each_from`] hands out: what
    /// [`Digest`]s their shares would add up to. Read from sums kept as the objects
    /// change, not summed anew: a body is cut on the thread that serves its request.
    fn digest(&self) -> Digest;
}

/// What a body holds of one discovery of its job.
#[derive(Clone, Debug)]
enum Part {
    /// A map of objects kept.
    Kept(KeyedGroups),
    /// Objects cut as written, with their digest.
    Cut(Arc<dyn CutObjects>, Digest),
}

impl Part {
    fn digest(&self) -> Digest {
        match self {
            Part::Kept(objects) => objects.digest,
            Part::Cut(_, digest) => *digest,
        }
    }
}

/// A job's HTTP SD body: its discoveries' objects, joined on demand with the job's
/// name in their holes. Cheap to clone and to keep: it holds the shared maps, not the
/// bytes, which are written out as the body is sent ([`SdBody::chunks`]).
#[derive(Clone, Debug)]
pub struct SdBody {
    /// The job's name as a JSON string.
    job_json: Arc<[u8]>,
    /// One part per discovery of the job, in config order.
    parts: Vec<Part>,
    /// The body's length in bytes (without its lazy objects').
    len: usize,
    /// True when it holds objects whose bytes are known only once written.
    lazy: bool,
    /// Its quoted ETag.
    pub etag: String,
    /// How many targets it holds.
    pub targets: usize,
    /// The `__meta_*` labels its discovered label sets are served with (every one
    /// when `None`, see [`SdBody::pruned`]).
    readable: Option<Arc<ReadableMeta>>,
}

impl SdBody {
    /// The body of job `job_name` made of `parts`: O(parts), no object read. The ETag
    /// is FNV-1a of the job's name and each part's digest, so equal target sets give
    /// equal tags on every replica.
    pub fn new(job_name: &str, parts: Vec<KeyedGroups>) -> SdBody {
        SdBody::of_parts(job_name, parts.into_iter().map(Part::Kept).collect())
    }

    /// The body of job `job_name` cut from `parts` as it is written, its length and
    /// ETag from their digests.
    pub fn cut(job_name: &str, parts: Vec<Arc<dyn CutObjects>>) -> SdBody {
        let parts = (parts.into_iter())
            .map(|objects| {
                let digest = objects.digest();
                Part::Cut(objects, digest)
            })
            .collect();
        SdBody::of_parts(job_name, parts)
    }

    fn of_parts(job_name: &str, parts: Vec<Part>) -> SdBody {
        let mut job_json = Vec::new();
        write_json_str(&mut job_json, job_name);
        let mut hash = Fnv::default();
        hash.write(&job_json);
        // Brackets; then a comma between each two objects.
        let (mut len, mut objects, mut targets, mut lazy) = (2, 0usize, 0, false);
        for part in &parts {
            let d = part.digest();
            lazy |= d.lazy > 0;
            hash.write(&d.sum.to_le_bytes());
            hash.write(&(d.objects as u64).to_le_bytes());
            len += d.bytes + d.holes * job_json.len();
            objects += d.objects;
            targets += d.targets;
        }
        len += objects.saturating_sub(1);
        SdBody {
            job_json: job_json.into(),
            parts,
            len,
            lazy,
            etag: format!("\"{:016x}\"", hash.0),
            targets,
            readable: None,
        }
    }

    /// The same body, its discovered label sets (a collector's share) written with
    /// only the `__meta_*` labels `readable` keeps (every one when `None`).
    pub fn pruned(self, readable: Option<Arc<ReadableMeta>>) -> SdBody {
        SdBody { readable, ..self }
    }

    /// The body's length in bytes (for a body of discovered label sets, only what is
    /// known before writing it: see [`SdBody::known_len`]).
    pub fn len(&self) -> usize {
        self.len
    }

    /// The body's length in bytes, if it is known before the body is written (not for
    /// discovered label sets, which are serialized as they are sent).
    pub fn known_len(&self) -> Option<usize> {
        (!self.lazy).then_some(self.len)
    }

    /// True for the empty list (`[]`).
    pub fn is_empty(&self) -> bool {
        self.targets == 0
    }

    /// The whole body in one buffer (for files and tests; HTTP sends [`SdBody::chunks`]).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len);
        for chunk in self.chunks_of(usize::MAX) {
            out.extend_from_slice(&chunk);
        }
        out
    }

    /// The body in pieces of about `BODY_CHUNK` bytes, written as they are taken: a
    /// response streams them, and no request keeps a copy of the whole body. The
    /// pieces hold their own handle on the body: they outlive `self`.
    pub fn chunks(&self) -> impl Iterator<Item = bytes::Bytes> + Send + use<> {
        self.chunks_of(BODY_CHUNK)
    }

    pub(super) fn chunks_of(&self, size: usize) -> BodyChunks {
        BodyChunks {
            body: self.clone(),
            part: 0,
            from: None,
            started: false,
            wrote_object: false,
            done: false,
            size,
            pruner: Pruner::new(self.readable.as_ref()),
        }
    }
}

/// How much of a body one streamed piece holds, about: a piece ends after the object
/// that reaches it.
pub const BODY_CHUNK: usize = 256 * 1024;

/// Room a piece has beyond [`BODY_CHUNK`] for the object that reaches it, so that the
/// piece is seldom grown (growing it copies it again).
const CHUNK_SLACK: usize = 64 * 1024;

/// The iterator behind [`SdBody::chunks`]: where it is, as a part and the first key
/// of it not written yet (the next piece starts there, found in O(log n)).
pub(super) struct BodyChunks {
    body: SdBody,
    part: usize,
    from: Option<ObjectKey>,
    started: bool,
    wrote_object: bool,
    done: bool,
    size: usize,
    /// Which discovered labels are served, remembered for the whole body.
    pruner: Pruner,
}

impl Iterator for BodyChunks {
    type Item = bytes::Bytes;

    fn next(&mut self) -> Option<bytes::Bytes> {
        if self.done {
            return None;
        }
        // Objects are written as they come, none sized first (sizing some addresses
        // of an object costs about as much as writing them): a piece ends once an
        // object brings it to `size`. A body whose length is known gets no more room
        // than it needs.
        let room = self.size.saturating_add(CHUNK_SLACK);
        let room = match self.body.lazy {
            true => room.min(BODY_CHUNK + CHUNK_SLACK),
            false => room.min(self.body.len + 2),
        };
        let mut out = Vec::with_capacity(room);
        if !self.started {
            self.started = true;
            out.push(b'[');
        }
        // The fields apart: the body is read while the others change.
        let BodyChunks {
            body,
            part: at,
            from: next_key,
            wrote_object,
            size,
            pruner,
            ..
        } = self;
        while let Some(part) = body.parts.get(*at) {
            let from = next_key.take();
            let mut piece = Piece {
                out: &mut out,
                size: *size,
                job_json: &body.job_json,
                wrote_object,
                pruner,
                next: None,
            };
            match part {
                Part::Kept(objects) => {
                    let from = from.map_or(Bound::Unbounded, Bound::Included);
                    for (key, share) in objects.objects.range((from, Bound::Unbounded)) {
                        if !piece.write(key, share) {
                            break;
                        }
                    }
                }
                Part::Cut(objects, _) => {
                    objects.each_from(from.as_ref(), &mut |key, share| piece.write(key, share))
                }
            }
            if let Some(next) = piece.next {
                // The next piece starts with this object.
                *next_key = Some(next);
                return Some(out.into());
            }
            *at += 1;
        }
        out.push(b']');
        self.done = true;
        Some(out.into())
    }
}

/// One piece of a body being written ([`BodyChunks`]).
struct Piece<'a> {
    out: &'a mut Vec<u8>,
    size: usize,
    job_json: &'a [u8],
    wrote_object: &'a mut bool,
    pruner: &'a mut Pruner,
    /// The object the next piece starts with, once this one is full.
    next: Option<ObjectKey>,
}

impl Piece<'_> {
    /// Writes object `key`'s `share`, or, once the piece is full, notes that the next
    /// piece starts with it; false then.
    fn write(&mut self, key: &ObjectKey, share: &Share) -> bool {
        if self.out.len() >= self.size {
            self.next = Some(key.clone());
            return false;
        }
        let comma = self.out.len();
        if *self.wrote_object {
            self.out.push(b',');
        }
        let before = self.out.len();
        share.write(self.job_json, self.pruner, self.out);
        if self.out.len() == before {
            // Nothing written (discovered label sets with no address): no comma
            // either.
            self.out.truncate(comma);
            return true;
        }
        *self.wrote_object = true;
        true
    }
}
