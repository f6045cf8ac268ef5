//! A targets answer written out as it is sent. A job of 100k pods has hundreds of
//! thousands of active targets: held whole as JSON values, the answer would take
//! gigabytes. Instead the listing keeps each target's discovered label set as the
//! group holds it (shared, not copied) and its served labels, and the body is made
//! in chunks of [`CHUNK_TARGETS`] targets, each serialized as it is sent.

use std::convert::Infallible;

use actix_web::HttpResponse;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::web::Bytes;
use futures_util::stream;
use serde_json::Value;

use super::listing::ActiveTarget;
use super::target_json::{Pool, active_json};

/// Active targets serialized per chunk of the body.
pub const CHUNK_TARGETS: usize = 256;

/// Every job's active targets: the jobs as scrape pools, and the targets by job.
#[derive(Default)]
pub struct ActiveList {
    /// Each job as a scrape pool.
    pub jobs: Vec<Pool>,
    /// Each target with the position of its job in `jobs`.
    pub targets: Vec<(usize, ActiveTarget)>,
}

impl ActiveList {
    /// Adds the targets of `pool`.
    pub fn add(&mut self, pool: Pool, targets: Vec<ActiveTarget>) {
        let at = self.jobs.len();
        self.jobs.push(pool);
        self.targets.extend(targets.into_iter().map(|t| (at, t)));
    }
}

/// `{"status":"success","data":{"activeTargets":[…], …rest}}`, the active targets
/// written out chunk by chunk; `rest` is an object of the data's other fields.
pub fn success_with_active(active: ActiveList, rest: Value) -> HttpResponse {
    let rest = rest.to_string();
    // `rest` is an object: its fields follow the list, its closing brace ends `data`.
    let tail = match rest.strip_prefix('{') {
        Some("}") | None => "]}}".to_string(),
        Some(fields) => format!("],{fields}}}"),
    };
    let head = r#"{"status":"success","data":{"activeTargets":["#;
    let ActiveList { jobs, targets } = active;
    let mut targets = targets.into_iter().peekable();
    let mut first = true;
    let chunks = std::iter::from_fn(move || {
        targets.peek()?;
        let mut chunk = String::new();
        for (job, target) in targets.by_ref().take(CHUNK_TARGETS) {
            if !first {
                chunk.push(',');
            }
            first = false;
            chunk.push_str(&active_json(&jobs[job], &target).to_string());
        }
        Some(Bytes::from(chunk))
    });
    let body = std::iter::once(Bytes::from_static(head.as_bytes()))
        .chain(chunks)
        .chain(std::iter::once(Bytes::from(tail)));
    HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, "application/json"))
        .streaming(stream::iter(body.map(Ok::<_, Infallible>)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::Labels;
    use crate::relabel::ScrapeSettings;

    fn target(address: &str) -> ActiveTarget {
        let labels = Labels::from_pairs([("__address__", address), ("job", "j")]);
        ActiveTarget {
            discovered: labels.clone(),
            labels,
        }
    }

    /// The chunks make one JSON document, every target in order, the rest after.
    #[actix_rt::test]
    async fn chunks_make_one_document() {
        let pool = Pool {
            name: "j".into(),
            scrape: ScrapeSettings::new("j"),
            params: Vec::new(),
        };
        let mut active = ActiveList::default();
        let n = CHUNK_TARGETS * 2 + 3;
        let targets = (0..n).map(|i| target(&format!("10.0.0.1:{i}"))).collect();
        active.add(pool, targets);
        let rest = serde_json::json!({"droppedTargets": []});
        let response = success_with_active(active, rest);
        let body = actix_web::body::to_bytes(response.into_body()).await;
        let value: Value = serde_json::from_slice(&body.unwrap_or_default()).unwrap_or_default();
        let listed = value["data"]["activeTargets"].as_array().map(Vec::len);
        assert_eq!(listed, Some(n));
        assert_eq!(
            value["data"]["activeTargets"][n - 1]["labels"]["instance"],
            format!("10.0.0.1:{}", n - 1)
        );
        assert_eq!(value["data"]["droppedTargets"], serde_json::json!([]));
        let empty = success_with_active(ActiveList::default(), serde_json::json!({}));
        let body = actix_web::body::to_bytes(empty.into_body())
            .await
            .unwrap_or_default();
        assert_eq!(
            &body[..],
            br#"{"status":"success","data":{"activeTargets":[]}}"#
        );
    }
}
