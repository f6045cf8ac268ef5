//! `TargetContext`: everything label generation needs besides the object itself.

use super::attach_metadata::AttachMetadata;
use super::cache_view::CacheView;
use super::semantics::Semantics;

/// What shapes a job's targets besides the objects: the related metadata it attaches
/// and whose semantics it follows. Part of what makes groups distinct.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TargetOptions {
    /// Which related metadata to attach.
    pub attach: AttachMetadata,
    /// Whose target semantics to follow.
    pub semantics: Semantics,
}

/// Everything label generation needs besides the object itself.
#[derive(Clone, Copy)]
pub struct TargetContext<'a> {
    /// Which related metadata to attach.
    pub attach: AttachMetadata,
    /// Whose target semantics to follow.
    pub semantics: Semantics,
    /// The cache to look related objects up in.
    pub cache: &'a dyn CacheView,
}

impl<'a> TargetContext<'a> {
    /// The context of `options`, looking related objects up in `cache`.
    pub fn new(options: TargetOptions, cache: &'a dyn CacheView) -> TargetContext<'a> {
        TargetContext {
            attach: options.attach,
            semantics: options.semantics,
            cache,
        }
    }
}
