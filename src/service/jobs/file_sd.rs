//! A job's targets written as Prometheus file SD (`<output_dir>/<encoded name>.json`,
//! see [`crate::service::jobs::file_name`]): once the job has synced, then whenever its ETag changed,
//! at most once a second however often its targets change. The writer reads the job's
//! snapshots as the HTTP handlers do.

use std::path::PathBuf;
use std::time::Duration;

use tracing::warn;

use crate::sd_output::write_file_atomically;
use crate::service::jobs::job::Job;

/// How often the writer looks at the job's snapshots.
const WRITE_EVERY: Duration = Duration::from_secs(1);

/// Writes `job`'s body to `path` until the task is aborted.
pub fn spawn_file_writer(job: Job, path: PathBuf) -> actix_rt::task::JoinHandle<()> {
    actix_rt::spawn(async move {
        let mut written: Option<String> = None;
        let mut tick = actix_rt::time::interval(WRITE_EVERY);
        loop {
            tick.tick().await;
            if !job.status().synced {
                continue;
            }
            let body = job.sd();
            if written.as_ref() == Some(&body.etag) {
                continue;
            }
            match write_file_atomically(&path, &body.to_vec()) {
                Ok(()) => written = Some(body.etag),
                Err(e) => {
                    warn!(job = %job.name(), path = %path.display(), "cannot write the file SD output: {e}");
                }
            }
        }
    })
}
