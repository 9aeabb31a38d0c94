//! A cursor over the message bytes that reads Avro's primitive encodings, bounds-checked.
//!
//! Every read checks what is left before touching a byte, and every length read from the data
//! is compared with the bytes that remain *before* anything is allocated for it, so a corrupt
//! or hostile message can neither read out of bounds nor make us reserve a huge buffer.
//! Errors carry the offset where the faulty item starts, which is what a person debugging a
//! message wants to look at. Nothing here knows about Python.

use crate::error::Malformed;

/// Longest varint a 64-bit long can take: 9 bytes of 7 bits plus one byte holding bit 63.
const MAX_VARINT_BYTES: usize = 10;

pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader of `buf` positioned at `pos` (which must be `<= buf.len()`).
    pub fn new(buf: &'a [u8], pos: usize) -> Self {
        debug_assert!(pos <= buf.len());
        Reader { buf, pos }
    }

    /// Offset of the next byte to read.
    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }

    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// A zigzag varint long; `what` names the item in error messages.
    #[inline]
    pub fn long(&mut self, what: &str) -> Result<i64, Malformed> {
        // One-byte varints (-64..=63) are the common case: lengths, union indexes, small ints.
        if let Some(&byte) = self.buf.get(self.pos) {
            if byte < 0x80 {
                self.pos += 1;
                return Ok(unzigzag(u64::from(byte)));
            }
        }
        self.long_multibyte(what)
    }

    fn long_multibyte(&mut self, what: &str) -> Result<i64, Malformed> {
        let start = self.pos;
        let mut value: u64 = 0;
        for i in 0..MAX_VARINT_BYTES {
            let Some(&byte) = self.buf.get(start + i) else {
                return Err(Malformed::new(format!("truncated {what}"), start));
            };
            if i == MAX_VARINT_BYTES - 1 && byte > 1 {
                // The 10th byte may only carry bit 63: anything else overflows 64 bits (or
                // asks for an 11th byte).
                return Err(Malformed::new(format!("{what} overflows 64 bits"), start));
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                self.pos = start + i + 1;
                return Ok(unzigzag(value));
            }
        }
        // Not reached: the 10th byte either ends the varint or is refused above.
        Err(Malformed::new(format!("{what} overflows 64 bits"), start))
    }

    /// A zigzag varint that must fit a 32-bit int.
    #[inline]
    pub fn int(&mut self, what: &str) -> Result<i32, Malformed> {
        let start = self.pos;
        let value = self.long(what)?;
        i32::try_from(value)
            .map_err(|_| Malformed::new(format!("{what} {value} outside the 32-bit range"), start))
    }

    /// One byte, 0 or 1; any other value is refused rather than guessed.
    #[inline]
    pub fn boolean(&mut self) -> Result<bool, Malformed> {
        match self.buf.get(self.pos) {
            Some(&0) => {
                self.pos += 1;
                Ok(false)
            }
            Some(&1) => {
                self.pos += 1;
                Ok(true)
            }
            Some(&other) => Err(Malformed::new(
                format!("bad boolean byte 0x{other:02x}"),
                self.pos,
            )),
            None => Err(Malformed::new("truncated boolean", self.pos)),
        }
    }

    /// 4 bytes, little-endian IEEE 754.
    #[inline]
    pub fn float(&mut self) -> Result<f32, Malformed> {
        self.array("float").map(f32::from_le_bytes)
    }

    /// 8 bytes, little-endian IEEE 754.
    #[inline]
    pub fn double(&mut self) -> Result<f64, Malformed> {
        self.array("double").map(f64::from_le_bytes)
    }

    #[inline]
    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], Malformed> {
        match self.buf.get(self.pos..).and_then(<[u8]>::first_chunk::<N>) {
            Some(bytes) => {
                self.pos += N;
                Ok(*bytes)
            }
            None => Err(self.short(what, N, self.pos)),
        }
    }

    /// The next `n` bytes (a fixed, or the body of a float or double).
    #[inline]
    pub fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], Malformed> {
        if n > self.remaining() {
            return Err(self.short(what, n, self.pos));
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// A length-prefixed item (bytes, string, map key): its body, and where the body starts.
    #[inline]
    pub fn sized(&mut self, what: &str) -> Result<(usize, &'a [u8]), Malformed> {
        let start = self.pos;
        let length = self.long(what)?;
        let Ok(n) = usize::try_from(length) else {
            return Err(Malformed::new(
                format!("negative {what} length {length}"),
                start,
            ));
        };
        if n > self.remaining() {
            return Err(self.short(what, n, start));
        }
        let body = self.pos;
        self.pos += n;
        Ok((body, &self.buf[body..self.pos]))
    }

    /// The item count of the next array or map block (0 ends the array or map).
    ///
    /// A negative count is followed by the block's size in bytes, which is read and ignored.
    /// Each item takes at least `item_min` bytes, so a count that cannot fit in what remains is
    /// refused here, before the caller creates a single item.
    #[inline]
    pub fn block_count(&mut self, what: &str, item_min: u64) -> Result<u64, Malformed> {
        let start = self.pos;
        let count = self.long(what)?;
        if count < 0 {
            self.long("block byte size")?;
        }
        let n = count.unsigned_abs();
        let remaining = self.remaining() as u64;
        if item_min > 0 && n.saturating_mul(item_min) > remaining {
            return Err(
                Malformed::new(format!("{what} {n} too large"), start).with_detail(format!(
                    "{n} items cannot fit in the {remaining} bytes left"
                )),
            );
        }
        Ok(n)
    }

    #[cold]
    fn short(&self, what: &str, needed: usize, start: usize) -> Malformed {
        Malformed::new(format!("truncated {what}"), start)
            .with_detail(format!("needs {needed} bytes, {} left", self.remaining()))
    }
}

#[inline]
fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn long_of(bytes: &[u8]) -> Result<i64, String> {
        let mut r = Reader::new(bytes, 0);
        let v = r.long("long").map_err(|e| e.message())?;
        assert_eq!(r.remaining(), 0, "varint {bytes:?} not fully consumed");
        Ok(v)
    }

    #[test]
    fn zigzag_varints() {
        assert_eq!(long_of(&[0x00]), Ok(0));
        assert_eq!(long_of(&[0x01]), Ok(-1));
        assert_eq!(long_of(&[0x02]), Ok(1));
        assert_eq!(long_of(&[0x7f]), Ok(-64));
        assert_eq!(long_of(&[0x80, 0x01]), Ok(64));
        assert_eq!(
            long_of(&[0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
            Ok(i64::MAX)
        );
        assert_eq!(
            long_of(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
            Ok(i64::MIN)
        );
        // Non-minimal encodings are valid (every Avro library accepts them).
        assert_eq!(long_of(&[0x80, 0x00]), Ok(0));
    }

    #[test]
    fn overlong_and_truncated_varints_are_refused() {
        let too_long = [0xff; 11];
        assert_eq!(
            long_of(&too_long),
            Err("long overflows 64 bits at byte 0".into())
        );
        let overflow = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert_eq!(
            long_of(&overflow),
            Err("long overflows 64 bits at byte 0".into())
        );
        assert_eq!(
            long_of(&[0x80, 0x80]),
            Err("truncated long at byte 0".into())
        );
        assert_eq!(long_of(&[]), Err("truncated long at byte 0".into()));
    }

    #[test]
    fn int_range() {
        let mut r = Reader::new(&[0xfe, 0xff, 0xff, 0xff, 0x0f], 0);
        assert_eq!(r.int("int").unwrap(), i32::MAX);
        let mut r = Reader::new(&[0x80, 0x80, 0x80, 0x80, 0x10], 0);
        assert_eq!(
            r.int("int").unwrap_err().message(),
            "int 2147483648 outside the 32-bit range at byte 0"
        );
    }

    #[test]
    fn sized_checks_the_length_before_slicing() {
        let mut r = Reader::new(&[9, 9, 0x06, b'a', b'b', b'c'], 2);
        assert_eq!(r.sized("string").unwrap(), (3, &b"abc"[..]));
        let mut r = Reader::new(&[0x08, b'a'], 0);
        assert_eq!(
            r.sized("string").unwrap_err().message(),
            "truncated string at byte 0 (needs 4 bytes, 1 left)"
        );
        let mut r = Reader::new(&[0x03], 0);
        assert_eq!(
            r.sized("bytes").unwrap_err().message(),
            "negative bytes length -2 at byte 0"
        );
        // i64::MAX as a length must not be allocated or even added to the position.
        let mut r = Reader::new(
            &[0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            0,
        );
        assert!(r.sized("bytes").is_err());
    }

    #[test]
    fn block_counts() {
        // -2 items, then a byte size of 5 which is skipped.
        let mut r = Reader::new(&[0x03, 0x0a, 1, 2], 0);
        assert_eq!(r.block_count("array block count", 1).unwrap(), 2);
        assert_eq!(r.position(), 2);
        let mut r = Reader::new(&[0x06, 1, 2], 0);
        assert!(r.block_count("array block count", 1).is_err());
        // i64::MIN as a count: its magnitude does not fit an i64, and must not overflow.
        let min = [
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00,
        ];
        let mut r = Reader::new(&min, 0);
        assert!(r.block_count("array block count", 1).is_err());
        let mut r = Reader::new(&min, 0);
        assert_eq!(r.block_count("array block count", 0).unwrap(), 1 << 63);
    }

    #[test]
    fn booleans_and_floats() {
        let mut r = Reader::new(&[0, 1, 2], 0);
        assert!(!r.boolean().unwrap());
        assert!(r.boolean().unwrap());
        assert_eq!(
            r.boolean().unwrap_err().message(),
            "bad boolean byte 0x02 at byte 2"
        );
        let mut r = Reader::new(&[0, 0, 0x80, 0x3f, 0, 0, 0], 0);
        assert_eq!(r.float().unwrap(), 1.0);
        assert_eq!(
            r.double().unwrap_err().message(),
            "truncated double at byte 4 (needs 8 bytes, 3 left)"
        );
    }
}
