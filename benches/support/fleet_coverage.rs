//! What the fleet scenario's member consumers were served, together: after each poll of
//! `/sd/{job}?member=scraper-M`, the targets no member's last answer holds (a gap at
//! that instant: no scraper scrapes them), and the targets a member got outside its
//! zone. Targets are the flood server's pods' (`10.a.b.c`, pod `a<<16 | b<<8 | c`, six
//! ports `8080+c`, `9090+c`), each pod on node `i % 2000`, whose zone is `node % 3`.
//! Pod 0 is left out: the end of the flood deletes it.

use super::flood_members;

/// Ports per pod (three containers, two ports each).
const PORTS: usize = 6;

/// The targets' coverage by the members' last answers.
pub struct Coverage {
    /// How many members' last answers hold each target.
    counts: Vec<u8>,
    /// Each member's last answer, as target ids.
    views: Vec<Vec<u32>>,
    /// Targets (pod 0's left out) that no last answer holds.
    uncovered: usize,
    /// Counting starts once every member has answered (`arm`).
    armed: bool,
    /// Polls after which some target was held by no member.
    pub gap_polls: usize,
    /// The most targets held by no member after a poll.
    pub max_gap: usize,
    /// The most targets one answer gave outside its member's zone.
    pub max_cross_zone: usize,
    /// Addresses that are no pod's target.
    pub unknown: usize,
    /// Polls counted.
    pub polls: usize,
}

impl Coverage {
    /// Nothing covered yet, for `pods` pods and `members` members.
    pub fn new(pods: usize, members: usize) -> Coverage {
        Coverage {
            counts: vec![0; pods * PORTS],
            views: vec![Vec::new(); members],
            uncovered: pods.saturating_sub(1) * PORTS,
            armed: false,
            gap_polls: 0,
            max_gap: 0,
            max_cross_zone: 0,
            unknown: 0,
            polls: 0,
        }
    }

    /// Starts counting gaps; the targets uncovered now.
    pub fn arm(&mut self) -> usize {
        self.armed = true;
        self.uncovered
    }

    /// Member `m`'s new answer, as `scanned`, replaces its last.
    pub fn update(&mut self, m: usize, scanned: &mut Scanner) {
        let zone = flood_members::node_zone(m);
        let mut ids = Vec::with_capacity(scanned.ids.len());
        let mut cross = 0;
        self.unknown += scanned.unknown;
        for &id in &scanned.ids {
            if (id as usize) < self.counts.len() {
                let pod = id as usize / PORTS;
                cross += usize::from(flood_members::node_zone(pod % 2000) != zone);
                ids.push(id);
            } else {
                self.unknown += 1;
            }
        }
        for &id in &ids {
            self.add(id, 1);
        }
        for id in std::mem::replace(&mut self.views[m], ids) {
            self.add(id, -1);
        }
        if self.armed {
            self.polls += 1;
            self.max_cross_zone = self.max_cross_zone.max(cross);
            if self.uncovered > 0 {
                self.gap_polls += 1;
                self.max_gap = self.max_gap.max(self.uncovered);
            }
        }
    }

    fn add(&mut self, id: u32, by: i8) {
        let c = &mut self.counts[id as usize];
        let before = *c;
        *c = c.saturating_add_signed(by);
        if id as usize >= PORTS {
            match (before, *c) {
                (0, n) if n > 0 => self.uncovered -= 1,
                (n, 0) if n > 0 => self.uncovered += 1,
                _ => {}
            }
        }
    }
}

/// Reads an HTTP SD body piece by piece: the target ids of the strings in each
/// `"targets":[...]`, and how many were no pod's target.
#[derive(Default)]
pub struct Scanner {
    /// The last bytes of the piece before, outside an array: the start of a
    /// `"targets":[` the piece's end may have cut.
    carried: Vec<u8>,
    in_array: bool,
    in_string: bool,
    address: Vec<u8>,
    ids: Vec<u32>,
    unknown: usize,
}

impl Scanner {
    const KEY: &'static [u8] = b"\"targets\":[";

    /// Ready for another body.
    pub fn clear(&mut self) {
        *self = Scanner {
            ids: std::mem::take(&mut self.ids),
            ..Scanner::default()
        };
        self.ids.clear();
    }

    /// The next piece of the body, skipping to the next bytes that matter (a
    /// `"targets":[`, then a quote or the array's end) with `memchr`: the consumer
    /// shares the cores kubesd runs on, and the time it takes is in the latency it
    /// measures, so it should be a fraction of kubesd's.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            bytes = if self.in_string {
                self.address_part(bytes)
            } else if self.in_array {
                self.array_part(bytes)
            } else {
                self.outside_part(bytes)
            };
        }
    }

    /// Inside an address: up to its closing quote.
    fn address_part<'a>(&mut self, bytes: &'a [u8]) -> &'a [u8] {
        let Some(end) = memchr::memchr(b'"', bytes) else {
            self.address.extend_from_slice(bytes);
            return &[];
        };
        self.address.extend_from_slice(&bytes[..end]);
        self.in_string = false;
        match target_id(&self.address) {
            Some(id) => self.ids.push(id),
            None => self.unknown += 1,
        }
        &bytes[end + 1..]
    }

    /// Inside `"targets":[`: to the next address or the array's end.
    fn array_part<'a>(&mut self, bytes: &'a [u8]) -> &'a [u8] {
        let Some(at) = memchr::memchr2(b'"', b']', bytes) else {
            return &[];
        };
        match bytes[at] {
            b'"' => {
                self.in_string = true;
                self.address.clear();
            }
            _ => self.in_array = false,
        }
        &bytes[at + 1..]
    }

    /// Outside the arrays: to the end of the next `"targets":[`, found with `memmem`,
    /// also where the piece before ended within it.
    fn outside_part<'a>(&mut self, bytes: &'a [u8]) -> &'a [u8] {
        let (key, keep) = (Self::KEY, Self::KEY.len() - 1);
        let mut seam = std::mem::take(&mut self.carried);
        let carried = seam.len();
        if carried > 0 {
            seam.extend_from_slice(&bytes[..bytes.len().min(keep)]);
            if let Some(at) = targets_key().find(&seam) {
                self.in_array = true;
                return &bytes[at + key.len() - carried..];
            }
        }
        if let Some(at) = targets_key().find(bytes) {
            self.in_array = true;
            return &bytes[at + key.len()..];
        }
        // Too short a piece leaves some of the bytes carried before to carry on.
        if bytes.len() < keep {
            seam.truncate(carried);
            seam.extend_from_slice(bytes);
            self.carried = seam[seam.len().saturating_sub(keep)..].to_vec();
        } else {
            self.carried = bytes[bytes.len() - keep..].to_vec();
        }
        &[]
    }
}

/// The searcher for [`Scanner::KEY`], made once: a member's answer holds one per target.
fn targets_key() -> &'static memchr::memmem::Finder<'static> {
    static FINDER: std::sync::OnceLock<memchr::memmem::Finder<'static>> =
        std::sync::OnceLock::new();
    FINDER.get_or_init(|| memchr::memmem::Finder::new(Scanner::KEY))
}

/// The id of target `10.a.b.c:port`: pod `a<<16 | b<<8 | c` times six plus its port's
/// place.
fn target_id(address: &[u8]) -> Option<u32> {
    // Read number by number, without allocating: a member's answer holds thousands.
    let mut numbers = [0u32; 5];
    let mut at = 0;
    let mut digits = 0;
    for &b in address {
        match b {
            b'0'..=b'9' if digits < 6 => {
                numbers[at] = numbers[at] * 10 + u32::from(b - b'0');
                digits += 1;
            }
            b'.' if at < 3 && digits > 0 => (at, digits) = (at + 1, 0),
            b':' if at == 3 && digits > 0 => (at, digits) = (4, 0),
            _ => return None,
        }
    }
    let [10, a, b, c, port] = numbers else {
        return None;
    };
    if at != 4 || digits == 0 || a > 255 || b > 255 || c > 255 {
        return None;
    }
    let slot = match port {
        8080..=8082 => port - 8080,
        9090..=9092 => 3 + port - 9090,
        _ => return None,
    };
    Some(((a << 16 | b << 8 | c) * PORTS as u32) + slot)
}
