//! Sharding targets across replicas: `--shard N --shards M` keeps the targets whose
//! address hashes to N modulo M. The hash is FNV-1a of the address bytes: fixed by
//! definition, so every replica (whatever its build) splits the same way.

/// One replica's share of the targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This replica's number, `0..count`.
    pub index: u64,
    /// How many replicas share the targets.
    pub count: u64,
}

impl Shard {
    /// Every target (a single replica).
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// A shard, checked: `index < count`, `count > 0`.
    pub fn new(index: u64, count: u64) -> Result<Shard, String> {
        if count == 0 || index >= count {
            return Err(format!(
                "--shard {index} --shards {count}: the shard must be below the number of shards"
            ));
        }
        Ok(Shard { index, count })
    }

    /// True when this replica keeps the target at `address`.
    pub fn keeps(&self, address: &str) -> bool {
        self.count <= 1 || fnv1a(address.as_bytes()) % self.count == self.index
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_address_lands_in_exactly_one_shard() {
        let shards: Vec<Shard> = (0..3).map(|i| Shard::new(i, 3).unwrap()).collect();
        let mut counts = [0usize; 3];
        for i in 0..3000 {
            let addr = format!("10.0.{}.{}:8080", i / 256, i % 256);
            let owners: Vec<usize> = (0..3).filter(|s| shards[*s].keeps(&addr)).collect();
            assert_eq!(owners.len(), 1, "{addr}");
            counts[owners[0]] += 1;
        }
        assert!(counts.iter().all(|c| *c > 800), "roughly even: {counts:?}");
        assert_eq!(
            fnv1a(b"a"),
            0xaf63_dc4c_8601_ec8c,
            "the published FNV-1a 64 value"
        );
        assert!(Shard::new(3, 3).is_err() && Shard::new(0, 0).is_err());
    }
}
