//! The target allocator's `GET /jobs/{job}/targets` without `collector_id`: every
//! collector's share of one job, as the allocator's `GetAllTargetsByJob` answers it (a
//! debugging call there):
//!
//! ```json
//! {"<collector>": {"_link": "/debug/jobs/<url.QueryEscape(job)>/targets?collector_id=<collector>",
//!                  "targets": [<its share, as ?collector_id= answers it>]}}
//! ```
//!
//! One key per member the job's targets are assigned among (the Ready members,
//! and those still in handover, who are served their old targets meanwhile), in name
//! order, each with its share, `[]` where it has none; a job that does not exist gets
//! every member with `[]`, as the allocator answers. The link is the allocator's, to a
//! path neither serves, the collector's name as it is.
//!
//! Built on request from the members' shares, each written as it is sent: the
//! answer is the job's targets once (handover copies twice), streamed in pieces.

use std::collections::BTreeSet;
use std::iter;
use std::sync::Arc;

use actix_web::HttpResponse;
use arcstr::ArcStr;
use bytes::Bytes;

use super::sd::written_apart;
use crate::sd_output::SdBody;
use crate::service::fleet::Fleet;
use crate::service::jobs::job::Job;
use crate::service::views::ViewQuery;

/// Every member of `members_from`'s fleet with its share of `job`, whose name is
/// `escaped` in the links (as Go's `url.QueryEscape` escapes it); `job` is `None` for
/// a job that does not exist, which every member has no share of.
pub async fn every_collectors_share(
    escaped: &str,
    job: Option<&Job>,
    members_from: Option<&Job>,
) -> HttpResponse {
    let fleets = members_from.map_or_else(Vec::new, |job| {
        let parts = job.parts().iter();
        parts
            .map(|part| Arc::clone(&part.cell.load().members))
            .collect()
    });
    let members = member_names(&fleets);
    let mut shares = Vec::with_capacity(members.len());
    for member in members {
        let share = match job {
            Some(job) => job.view(&ViewQuery::Allocator(member.clone())).await,
            None => SdBody::new("", Vec::new()),
        };
        shares.push((member, share));
    }
    HttpResponse::Ok()
        .content_type("application/json")
        .streaming(written_apart(answer(escaped, shares)))
}

/// The members a job's targets are assigned among, by the `fleets` of its
/// actors: each current assignment's members and those of the assignments still in
/// handover.
fn member_names(fleets: &[Arc<Fleet>]) -> BTreeSet<ArcStr> {
    let mut names = BTreeSet::new();
    for fleet in fleets {
        let assignments = iter::once(fleet.current()).chain(fleet.previous());
        for assignment in assignments {
            names.extend(assignment.members().iter().map(|m| m.name.clone()));
        }
    }
    names
}

/// The answer's pieces: each member's key, link and share, the shares' own pieces in
/// between.
fn answer(
    escaped: &str,
    shares: Vec<(ArcStr, SdBody)>,
) -> impl Iterator<Item = Bytes> + Send + 'static {
    // An answer without members is `{}`; otherwise the first member opens it.
    let close: &'static [u8] = if shares.is_empty() { b"{}" } else { b"}" };
    let mut opening = "{";
    let pieces: Vec<_> = shares
        .into_iter()
        .map(|(member, share)| {
            let link = format!("/debug/jobs/{escaped}/targets?collector_id={member}");
            let head = format!(
                "{opening}{}:{{\"_link\":{},\"targets\":",
                json_string(&member),
                json_string(&link)
            );
            opening = ",";
            iter::once(Bytes::from(head))
                .chain(share.chunks())
                .chain(iter::once(Bytes::from_static(b"}")))
        })
        .collect();
    (pieces.into_iter().flatten()).chain(iter::once(Bytes::from_static(close)))
}

/// `text` as a JSON string.
fn json_string(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::fleet::{Assignment, Member};

    fn assignment(names: &[&str]) -> Arc<Assignment> {
        let members = (names.iter())
            .map(|name| Member {
                name: ArcStr::from(*name),
                node: ArcStr::default(),
                weight: 1.0,
            })
            .collect();
        Arc::new(Assignment::new(members, false, Default::default()))
    }

    fn written(pieces: impl Iterator<Item = Bytes>) -> String {
        let bytes: Vec<u8> = pieces.flat_map(|piece| piece.to_vec()).collect();
        String::from_utf8(bytes).expect("text")
    }

    /// The Ready members and those still in handover, each once, in name order.
    #[test]
    fn members_are_those_now_and_those_in_handover() {
        let now = assignment(&["b", "c"]);
        let before = assignment(&["a", "b"]);
        let fleets = [Arc::new(Fleet::new(now, Box::new([before])))];
        let names = member_names(&fleets);
        let names: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert!(member_names(&[]).is_empty());
    }

    /// `GetAllTargetsByJob`'s shape: the member as key, the link with the job's name
    /// escaped and the member's as it is, the share as `?collector_id=` answers it.
    #[test]
    fn every_share_is_keyed_and_linked_as_the_allocator_writes_it() {
        let empty = || SdBody::new("a b", Vec::new());
        let shares = vec![
            (ArcStr::from("m-0"), empty()),
            (ArcStr::from("m-1"), empty()),
        ];
        let text = written(answer("a+b", shares));
        assert_eq!(
            text,
            r#"{"m-0":{"_link":"/debug/jobs/a+b/targets?collector_id=m-0","targets":[]},"m-1":{"_link":"/debug/jobs/a+b/targets?collector_id=m-1","targets":[]}}"#
        );
        assert_eq!(written(answer("a+b", Vec::new())), "{}");
    }
}
