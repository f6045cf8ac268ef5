//! The flood bench's handle on its fake API server: the child process it spawns
//! (`--serve`, see `flood_server`), the gate that paces the pods watch, the members'
//! roll, and a self-check of how fast the server alone pushes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use crate::flood_args::Args;

pub struct Server {
    pub child: Option<Child>,
    pub url: String,
    pub addr: Option<String>,
    /// The `Accept` of the self-check, as the engine's requests send it.
    pub accept: &'static str,
}

impl Server {
    pub fn spawn(args: &Args) -> Server {
        let exe = std::env::current_exe().expect("current exe");
        let mut child = Command::new(exe)
            .args([
                "--serve",
                "--pods",
                &args.pods.to_string(),
                "--nodes",
                &args.nodes.to_string(),
                "--services",
                &args.services.to_string(),
                "--events",
                &args.events.to_string(),
                "--flood-touches",
                &args.flood_touches,
                "--encoding",
                &args.encoding.to_string(),
                "--fleet-members",
                &args.fleet_members.to_string(),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("server starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("server says where it listens");
        let addr = line
            .split_whitespace()
            .nth(1)
            .expect("listening line")
            .to_string();
        println!("server (child pid {}): {}", child.id(), line.trim());
        Server {
            child: Some(child),
            url: format!("http://{addr}"),
            addr: Some(addr),
            accept: args.encoding.accept(),
        }
    }

    pub fn external(url: &str) -> Server {
        Server {
            child: None,
            url: url.to_string(),
            addr: None,
            accept: "application/json",
        }
    }

    /// Lets the pods watches stream up to event `upto`.
    pub fn gate(&self, upto: usize) {
        let Some(addr) = &self.addr else { return };
        let mut s = TcpStream::connect(addr).expect("server reachable");
        write!(
            s,
            "GET /bench/go?upto={upto} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .expect("gate request");
        let mut buf = Vec::new();
        let _ = s.read_to_end(&mut buf);
    }

    /// Lets the member pods' roll go as far as step `step`.
    pub fn roll(&self, step: usize) {
        let Some(addr) = &self.addr else { return };
        let mut s = TcpStream::connect(addr).expect("server reachable");
        write!(
            s,
            "GET /bench/roll?step={step} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .expect("roll request");
        let mut buf = Vec::new();
        let _ = s.read_to_end(&mut buf);
    }

    /// Reads the whole event stream with a trivial client: how fast the server alone
    /// pushes (events/s, MB/s).
    pub fn self_check(&self, events: usize) -> Option<(f64, f64)> {
        let addr = self.addr.as_ref()?;
        let mut s = TcpStream::connect(addr).ok()?;
        write!(
            s,
            "GET /bench/stream HTTP/1.1\r\nHost: x\r\nAccept: {}\r\n\r\n",
            self.accept
        )
        .ok()?;
        let t = Instant::now();
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0usize;
        let tail = b"\r\n0\r\n\r\n";
        let mut last = Vec::new();
        loop {
            let n = s.read(&mut buf).ok()?;
            if n == 0 {
                break;
            }
            total += n;
            last.extend_from_slice(&buf[..n]);
            if last.len() > 16 {
                last.drain(..last.len() - 16);
            }
            if last.ends_with(tail) {
                break;
            }
        }
        let secs = t.elapsed().as_secs_f64();
        Some((events as f64 / secs, total as f64 / secs / 1e6))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
