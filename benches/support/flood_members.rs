//! The fleet scenario's member pods on the flood bench's fake API server: `members`
//! scraper pods in namespace `monitoring` (label `app.kubernetes.io/name=kubesd-scraper`),
//! member `m` on node `m` (so spread over the nodes' three zones), annotation
//! `kubesd.io/weight` 1 for even `m` and 2 for odd, rolled one by one as a StatefulSet
//! rolls: step `3m` turns `scraper-m` NotReady, `3m + 1` deletes it, `3m + 2` creates it
//! again Ready (a new uid), then the next member, round after round.
//!
//! `GET /bench/roll?step=K` lets the roll go as far as step `K`. The namespaced pods
//! path serves the members alone: the LIST at the current step (resourceVersion
//! `2000 + step`), the WATCH from its `resourceVersion` (or, with
//! `sendInitialEvents=true`, the members now as `ADDED` and the bookmark first), one
//! event per step as the roll reaches it.

use std::io::Write;
use std::net::TcpStream;
use std::sync::{Condvar, Mutex};

/// The namespace the members are in.
pub const NAMESPACE: &str = "monitoring";
/// The members' label selector.
pub const SELECTOR: &str = "app.kubernetes.io/name=kubesd-scraper";
/// The resourceVersion of step 0.
const RV0: usize = 2000;

/// The member pods and how far their roll has gone.
pub struct Members {
    count: usize,
    step: Mutex<usize>,
    stepped: Condvar,
}

/// One member's state at some step.
#[derive(Clone, Copy)]
struct State {
    present: bool,
    ready: bool,
    /// How many times it was created again (its uid).
    generation: usize,
}

/// The name of member `m`.
pub fn member_name(m: usize) -> String {
    format!("scraper-{m:02}")
}

/// The zone of node `n`, as the server's nodes carry it (`0` is `eu-west-1a`).
pub fn node_zone(n: usize) -> usize {
    n % 3
}

/// Member `m`'s weight.
pub fn member_weight(m: usize) -> usize {
    1 + m % 2
}

impl Members {
    /// `count` members, none rolled yet.
    pub fn new(count: usize) -> Members {
        Members {
            count,
            step: Mutex::new(0),
            stepped: Condvar::new(),
        }
    }

    /// Lets the roll go as far as `step` (never back).
    pub fn roll_to(&self, step: usize) {
        let mut now = self.step.lock().expect("roll");
        *now = (*now).max(step);
        self.stepped.notify_all();
    }

    /// Every member's state after `step` steps.
    fn states(&self, step: usize) -> Vec<State> {
        let mut states = vec![
            State {
                present: true,
                ready: true,
                generation: 0,
            };
            self.count
        ];
        for s in 0..step {
            self.apply(&mut states, s);
        }
        states
    }

    /// Step `s` (from 0) applied to `states`; the member it touches.
    fn apply(&self, states: &mut [State], s: usize) -> usize {
        let m = (s / 3) % self.count;
        let st = &mut states[m];
        match s % 3 {
            0 => st.ready = false,
            1 => st.present = false,
            _ => {
                *st = State {
                    present: true,
                    ready: true,
                    generation: st.generation + 1,
                }
            }
        }
        m
    }

    fn pod_json(&self, m: usize, st: State, rv: usize) -> String {
        let ready = if st.ready { "True" } else { "False" };
        format!(
            r#"{{"kind":"Pod","apiVersion":"v1","metadata":{{"name":"{name}","namespace":"{NAMESPACE}","uid":"5c4b0000-0000-4000-8000-{m:06}{g:06}","resourceVersion":"{rv}","labels":{{"app.kubernetes.io/name":"kubesd-scraper"}},"annotations":{{"kubesd.io/weight":"{w}"}}}},"spec":{{"nodeName":"node-{m:04}","containers":[{{"name":"collector","image":"otel/opentelemetry-collector-contrib:0.115.0"}}]}},"status":{{"phase":"Running","podIP":"10.250.0.{m}","conditions":[{{"type":"Ready","status":"{ready}"}}]}}}}"#,
            name = member_name(m),
            g = st.generation,
            w = member_weight(m),
        )
    }

    /// The LIST body at the current step.
    pub fn list(&self) -> Vec<u8> {
        let step = *self.step.lock().expect("roll");
        let items: Vec<String> = self
            .states(step)
            .into_iter()
            .enumerate()
            .filter(|(_, st)| st.present)
            .map(|(m, st)| self.pod_json(m, st, RV0 + step))
            .collect();
        format!(
            r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"{}"}},"items":[{}]}}"#,
            RV0 + step,
            items.join(",")
        )
        .into_bytes()
    }

    /// A WATCH (its head already sent) from `query`'s resourceVersion, or from the
    /// members now with `sendInitialEvents=true`; streams each step as the roll reaches
    /// it, until the client goes away.
    pub fn watch(&self, out: &mut TcpStream, query: &str) -> std::io::Result<()> {
        let param = |name: &str| {
            query
                .split('&')
                .find_map(|p| p.strip_prefix(name)?.strip_prefix('='))
        };
        let mut step = if param("sendInitialEvents") == Some("true") {
            let step = *self.step.lock().expect("roll");
            let mut chunk = String::new();
            for (m, st) in self.states(step).into_iter().enumerate() {
                if st.present {
                    let pod = self.pod_json(m, st, RV0 + step);
                    chunk.push_str(&format!("{{\"type\":\"ADDED\",\"object\":{pod}}}\n"));
                }
            }
            chunk.push_str(&format!(
                r#"{{"type":"BOOKMARK","object":{{"kind":"Pod","apiVersion":"v1","metadata":{{"resourceVersion":"{}","annotations":{{"k8s.io/initial-events-end":"true"}}}}}}}}"#,
                RV0 + step
            ));
            chunk.push('\n');
            write_chunk(out, chunk.as_bytes())?;
            step
        } else {
            param("resourceVersion")
                .and_then(|v| v.parse::<usize>().ok())
                .map_or(0, |rv| rv.saturating_sub(RV0))
        };
        // A client gone is noticed at the next write.
        loop {
            {
                let mut now = self.step.lock().expect("roll");
                while *now <= step {
                    now = self.stepped.wait(now).expect("roll");
                }
            }
            let mut states = self.states(step);
            let m = self.apply(&mut states, step);
            step += 1;
            let st = states[m];
            let kind = match (step - 1) % 3 {
                0 => "MODIFIED",
                1 => "DELETED",
                _ => "ADDED",
            };
            let pod = self.pod_json(m, st, RV0 + step);
            let line = format!("{{\"type\":\"{kind}\",\"object\":{pod}}}\n");
            write_chunk(out, line.as_bytes())?;
        }
    }
}

fn write_chunk(out: &mut TcpStream, chunk: &[u8]) -> std::io::Result<()> {
    write!(out, "{:x}\r\n", chunk.len())?;
    out.write_all(chunk)?;
    out.write_all(b"\r\n")
}

/// Whether `path` is the members' namespaced pods path.
pub fn is_members_path(path: &str) -> bool {
    path == format!("/api/v1/namespaces/{NAMESPACE}/pods")
}
