//! The protobuf wire format, written: tags, varints and length-delimited fields.

/// Appends protobuf fields to a byte vector.
#[derive(Debug, Default)]
pub struct Writer {
    /// The bytes written so far.
    pub bytes: Vec<u8>,
}

impl Writer {
    /// A varint field (wire type 0): integers and booleans. Negative numbers take ten
    /// bytes of two's complement, as Go writes an `int32` or `int64`.
    pub fn varint(&mut self, number: u32, value: i64) {
        self.tag(number, 0);
        self.raw_varint(value as u64);
    }

    /// A length-delimited field (wire type 2): a string, bytes or a message.
    pub fn bytes(&mut self, number: u32, value: &[u8]) {
        self.tag(number, 2);
        self.raw_varint(value.len() as u64);
        self.bytes.extend_from_slice(value);
    }

    /// A message field, written by `fill` into a writer of its own.
    pub fn message(&mut self, number: u32, fill: impl FnOnce(&mut Writer)) {
        let mut inner = Writer::default();
        fill(&mut inner);
        self.bytes(number, &inner.bytes);
    }

    fn tag(&mut self, number: u32, wire_type: u8) {
        self.raw_varint((u64::from(number) << 3) | u64::from(wire_type));
    }

    /// A bare varint, without a tag.
    pub fn raw_varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.bytes.push((value as u8) | 0x80);
            value >>= 7;
        }
        self.bytes.push(value as u8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_the_wire_format() {
        let mut w = Writer::default();
        w.varint(1, 300);
        w.bytes(2, b"hi");
        w.message(3, |m| m.varint(1, 1));
        w.varint(4, -1);
        assert_eq!(
            w.bytes,
            [
                0x08, 0xac, 0x02, 0x12, 2, b'h', b'i', 0x1a, 2, 0x08, 1, 0x20, 0xff, 0xff, 0xff,
                0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01
            ]
        );
    }
}
