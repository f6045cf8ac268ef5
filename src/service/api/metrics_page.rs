//! `/metrics`: the engine's and the service's metrics, the process's, and each job's
//! status and views.

use std::fmt::Write;

use actix_web::HttpResponse;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::web;

use super::{fleet_metrics, process_metrics};
use crate::metrics::escape_label_value;
use crate::service::jobs::job::JobViewCounts;
use crate::service::state::ServiceState;
use crate::service::views::{Bucket, ViewKind};

/// `kubesd_job_view_targets`: targets per shard and per member (bounded by the shard
/// counts and members asked for), but per node only in total and for the empty node
/// (thousands of nodes would be thousands of series); `kubesd_job_view_buckets`: how
/// many buckets each view kind holds.
fn render_views(out: &mut String, views: &[(String, JobViewCounts)]) {
    let _ = writeln!(
        out,
        "# HELP kubesd_job_view_targets Targets a view of a job serves (per shard and member; per node summed, with node=\"\" the targets on no node).\n# TYPE kubesd_job_view_targets gauge"
    );
    for (job, counts) in views {
        for (kind, buckets) in counts {
            match kind {
                ViewKind::Shards(n) => {
                    for (bucket, t) in buckets {
                        if let Bucket::Shard(i) = bucket {
                            let _ = writeln!(
                                out,
                                "kubesd_job_view_targets{{job=\"{job}\",view=\"shard\",shards=\"{n}\",shard=\"{i}\"}} {t}"
                            );
                        }
                    }
                }
                // The same targets as the member views, counted there.
                ViewKind::Allocator => {}
                ViewKind::Member => {
                    for (bucket, t) in buckets {
                        if let Bucket::Name(m) = bucket {
                            let m = escape_label_value(m);
                            let _ = writeln!(
                                out,
                                "kubesd_job_view_targets{{job=\"{job}\",view=\"member\",member=\"{m}\"}} {t}"
                            );
                        }
                    }
                }
                ViewKind::Node => {
                    let none = buckets.get(&Bucket::Name(Default::default())).copied();
                    let on_nodes: usize = buckets.values().sum::<usize>() - none.unwrap_or(0);
                    let _ = writeln!(
                        out,
                        "kubesd_job_view_targets{{job=\"{job}\",view=\"node\"}} {on_nodes}\nkubesd_job_view_targets{{job=\"{job}\",view=\"node\",node=\"\"}} {}",
                        none.unwrap_or(0)
                    );
                }
            }
        }
    }
    let _ = writeln!(
        out,
        "# HELP kubesd_job_view_buckets Shards, nodes or members a view kind of a job has targets in.\n# TYPE kubesd_job_view_buckets gauge"
    );
    for (job, counts) in views {
        for (kind, buckets) in counts {
            let view = match kind {
                ViewKind::Shards(n) => format!("view=\"shard\",shards=\"{n}\""),
                ViewKind::Node => "view=\"node\"".to_string(),
                ViewKind::Member => "view=\"member\"".to_string(),
                ViewKind::Allocator => "view=\"allocator\"".to_string(),
            };
            let _ = writeln!(
                out,
                "kubesd_job_view_buckets{{job=\"{job}\",{view}}} {}",
                buckets.len()
            );
        }
    }
}

/// `/metrics`, rendered from the jobs' published status (never their targets' bodies).
pub(super) async fn metrics(state: web::Data<ServiceState>) -> HttpResponse {
    let mut out = state.engine_metrics.render();
    state.service_metrics.render(&mut out);
    process_metrics::render(&mut out);
    let jobs = state.all();
    // Jobs' status only: never their targets' bodies.
    let mut statuses = Vec::with_capacity(jobs.len());
    let mut views = Vec::new();
    for (name, job) in &jobs {
        statuses.push((escape_label_value(name), job.status()));
        let counts = job.views();
        if !counts.is_empty() {
            views.push((escape_label_value(name), counts));
        }
    }
    let _ = writeln!(
        out,
        "# HELP kubesd_job_targets Targets a job serves.\n# TYPE kubesd_job_targets gauge"
    );
    for (name, status) in &statuses {
        let _ = writeln!(
            out,
            "kubesd_job_targets{{job=\"{name}\"}} {}",
            status.targets
        );
    }
    let _ = writeln!(
        out,
        "# HELP kubesd_job_synced 1 once every discovery of a job has listed.\n# TYPE kubesd_job_synced gauge"
    );
    for (name, status) in &statuses {
        let _ = writeln!(
            out,
            "kubesd_job_synced{{job=\"{name}\"}} {}",
            u8::from(status.synced)
        );
    }
    let _ = writeln!(
        out,
        "# HELP kubesd_job_changes_applied_total Object changes a job applied to its targets.\n# TYPE kubesd_job_changes_applied_total counter"
    );
    for (name, status) in &statuses {
        let _ = writeln!(
            out,
            "kubesd_job_changes_applied_total{{job=\"{name}\"}} {}",
            status.applied
        );
    }
    let _ = writeln!(
        out,
        "# HELP kubesd_job_change_visible_seconds Time from a watch event's arrival to its change being visible in the job's /sd.\n# TYPE kubesd_job_change_visible_seconds histogram"
    );
    for (name, status) in &statuses {
        status.latency.render(
            "kubesd_job_change_visible_seconds",
            &format!("job=\"{name}\""),
            &mut out,
        );
    }
    if !views.is_empty() {
        render_views(&mut out, &views);
    }
    fleet_metrics::render(&mut out, &jobs);
    HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8"))
        .body(out)
}
