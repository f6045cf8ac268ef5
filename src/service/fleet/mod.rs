//! How a fleet of scrapers shares a job's targets (`/sd/{job}?member=POD`): the members
//! with their zones and weights ([`assignment`]), the member watch (`members.rs`), the
//! nodes' zones ([`zones`]), the weights read from the members' pods ([`weights`]), and
//! the handover that keeps a moved target at its old member for a while ([`handover`]).
//! Serving the shares over HTTP is `service::api`'s.

pub mod assigned;
pub mod assignment;
pub mod handover;
pub(crate) mod members;
pub mod owners;
pub mod placements;
pub mod weights;
pub mod zones;

pub use assignment::{Assignment, Member};
pub use handover::{Fleet, Handover};

/// A job actor's member partition counted, for `/metrics`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FleetCounts {
    /// Targets whose member is outside their zone now (zone-aware fleets: their zone
    /// has no Ready member).
    pub cross_zone: u64,
    /// Targets a member gained when the fleet changed (a move, or a copy kept for a
    /// handover), since the actor started.
    pub moves: u64,
}

impl FleetCounts {
    /// The sum of two actors' counts.
    pub fn plus(self, other: FleetCounts) -> FleetCounts {
        FleetCounts {
            cross_zone: self.cross_zone + other.cross_zone,
            moves: self.moves + other.moves,
        }
    }
}
