//! One array of the descriptor table as a slot space: slot 0 is reserved (never handed out, so
//! handle or slot 0 names nothing live), fresh slots are handed out in order, released ones are
//! reused. Pure bookkeeping; the users write the descriptors.

#[derive(Debug)]
pub struct SlotSpace {
    capacity: u32,
    next_fresh: u32,
    free: Vec<u32>,
}

impl SlotSpace {
    /// `capacity` is the array size, slot 0 included.
    pub fn new(capacity: u32) -> SlotSpace {
        SlotSpace { capacity, next_fresh: 1, free: Vec::new() }
    }
    /// A free slot, or None when the array is full.
    pub fn alloc(&mut self) -> Option<u32> {
        if let Some(s) = self.free.pop() {
            return Some(s);
        }
        (self.next_fresh < self.capacity).then(|| {
            self.next_fresh += 1;
            self.next_fresh - 1
        })
    }
    pub fn release(&mut self, slot: u32) {
        self.free.push(slot);
    }
    pub fn in_use(&self) -> u32 {
        self.next_fresh - 1 - self.free.len() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_zero_reserved_and_reuse() {
        let mut s = SlotSpace::new(3);
        assert_eq!((s.alloc(), s.alloc(), s.alloc()), (Some(1), Some(2), None));
        s.release(1);
        assert_eq!(s.in_use(), 1);
        assert_eq!(s.alloc(), Some(1));
        assert_eq!(s.in_use(), 2);
    }
}
