//! A hasher for keys that need no protection from crafted collisions.

use std::hash::Hasher;

/// Hashes integer keys with one multiply per field: the session's tables, the agent's registry
/// (method keys are pointers, class and thread keys serials) and the calling-context trees. None of them needs protection
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
    /// A single key hashes as it always did (the state starts at 0); a key of several fields
    /// (the calling-context trees' (caller, method)) folds each into what came before.
    fn write_u64(&mut self, n: u64) {
        let n = self.0.rotate_left(5) ^ n;
        self.0 = (n ^ (n >> 29))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(21);
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u16(&mut self, n: u16) {
        self.write_u64(u64::from(n));
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}
