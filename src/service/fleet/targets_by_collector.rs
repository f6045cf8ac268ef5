//! The target allocator's `GET /jobs/{job}/targets` without `collector_id`: every
//! collector's share of one job, as the allocator's `GetAllTargetsByJob` answers it (a
//! debugging call there):
//!
//! ```json
//! {"<collector>": {"_link": "/debug/jobs/<url.QueryEscape(job)>/targets?collector_id=<collector>",
//!                  "targets": [<its share, as ?collector_id= answers it>]}}
//! ```
//!
//! One key per member the allocator partition splits the job among (the Ready members,
//! and those still in handover, who are served their old targets meanwhile), in name
//! order, each with its share, `[]` where it has none; a job that does not exist gets
//! every member with `[]`, as the allocator answers. The link is the allocator's, to a
//! path neither serves, the collector's name as it is.
//!
//! Built on request from the partition's buckets, each written as it is sent: the
//! answer is the job's targets once (handover copies twice), streamed in pieces.

use std::collections::BTreeSet;
use std::iter;

use actix_web::HttpResponse;
use arcstr::ArcStr;
use bytes::Bytes;

use crate::sd_output::SdBody;
use crate::service::jobs::job::Job;
use crate::service::views::ViewQuery;
use crate::service::web::http::written_apart;

/// Every member of `members_from`'s fleet with its share of `job`, whose name is
/// `escaped` in the links (as Go's `url.QueryEscape` escapes it); `job` is `None` for
/// a job that does not exist, which every member has no share of.
pub async fn every_collectors_share(
    escaped: &str,
    job: Option<&Job>,
    members_from: Option<&Job>,
) -> HttpResponse {
    let members = members_from.map(members_of).unwrap_or_default();
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

/// The members a job's allocator partition splits it among: each of its actors' fleet,
/// the current assignment's members and those of the assignments still in handover.
fn members_of(job: &Job) -> BTreeSet<ArcStr> {
    let mut names = BTreeSet::new();
    for part in job.parts() {
        let fleet = part.cell.load().members.clone();
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
    let empty = pieces.is_empty();
    pieces
        .into_iter()
        .flatten()
        .chain(iter::once(Bytes::from_static(match empty {
            true => b"{}",
            false => b"}",
        })))
}

/// `text` as a JSON string.
fn json_string(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}
