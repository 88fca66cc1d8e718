//! The points a search has tried or proposed: exact membership (a point is
//! compared whole), hashed with a fast multiplicative hash instead of SipHash —
//! the draft loop asks for every point it draws, and as an iteration fills the
//! design space most draws are points already there.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

use crate::design_point::DesignPoint;

/// FxHash (the Rust compiler's): a rotate, xor and multiply per word. Not
/// resistant to chosen collisions — the points are the search's own.
#[derive(Default)]
struct FastHasher {
    hash: u64,
}

impl FastHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(0x51_7C_C1_B7_27_22_0A_95);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, value: u8) {
        self.add(u64::from(value));
    }

    fn write_u32(&mut self, value: u32) {
        self.add(u64::from(value));
    }

    fn write_u64(&mut self, value: u64) {
        self.add(value);
    }

    fn write_usize(&mut self, value: usize) {
        self.add(value as u64);
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

/// A set of design points.
#[derive(Default)]
pub(super) struct PointSet {
    points: HashSet<DesignPoint, BuildHasherDefault<FastHasher>>,
}

impl PointSet {
    /// Adds `point` unless it is there (cloned only when added); whether it was added.
    pub(super) fn add(&mut self, point: &DesignPoint) -> bool {
        if self.points.contains(point) {
            return false;
        }
        self.points.insert(point.clone());
        true
    }

    pub(super) fn len(&self) -> usize {
        self.points.len()
    }

    /// How many of the points `holds`.
    pub(super) fn count(&self, holds: impl Fn(&DesignPoint) -> bool) -> u64 {
        self.points.iter().filter(|point| holds(point)).count() as u64
    }
}

impl FromIterator<DesignPoint> for PointSet {
    fn from_iter<Points: IntoIterator<Item = DesignPoint>>(points: Points) -> PointSet {
        PointSet {
            points: points.into_iter().collect(),
        }
    }
}
