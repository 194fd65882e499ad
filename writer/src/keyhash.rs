//! A hasher for keys that need no protection from crafted collisions.

use std::hash::Hasher;

/// Hashes integer keys with one multiply: the session's tables and the agent's registry
/// (method keys are pointers, class and thread keys serials). None of them needs protection
/// from crafted collisions.
#[derive(Default, Clone, Copy, Debug)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (n ^ (n >> 29))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(21);
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
}
