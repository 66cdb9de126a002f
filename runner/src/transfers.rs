//! Copies between host memory and a device's memory during a run: host
//! values handed to a model whose inputs are in device memory, and values
//! kept in device memory that the host then reads. Counted on the run's
//! thread (a run's values never leave it) and reported with the run.

use std::cell::Cell;

/// Copies in one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Copies {
    /// How many tensors were copied.
    pub count: u64,
    /// How many bytes they held.
    pub bytes: u64,
}

/// The copies of a run between host and device memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Transfers {
    /// Host values copied into device memory for a call.
    pub to_device: Copies,
    /// Values in device memory copied to the host for the host to read.
    pub to_host: Copies,
}

impl Transfers {
    /// Copies in both directions.
    pub fn count(&self) -> u64 {
        self.to_device.count + self.to_host.count
    }
}

thread_local! {
    static COUNTED: Cell<Transfers> = Cell::new(Transfers::default());
}

fn add(direction: fn(&mut Transfers) -> &mut Copies, bytes: usize) {
    COUNTED.with(|counted| {
        let mut now = counted.get();
        let copies = direction(&mut now);
        copies.count += 1;
        copies.bytes += bytes as u64;
        counted.set(now);
    });
}

/// Counts a host value of `bytes` copied into device memory.
pub(crate) fn to_device(bytes: usize) {
    add(|t| &mut t.to_device, bytes);
}

/// Counts a device value of `bytes` copied to the host.
pub(crate) fn to_host(bytes: usize) {
    add(|t| &mut t.to_host, bytes);
}

/// The copies counted on this thread since the last call, and a fresh count.
pub(crate) fn take() -> Transfers {
    COUNTED.with(|counted| counted.replace(Transfers::default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_counted_per_direction_and_taken_once() {
        let _ = take();
        to_device(16);
        to_device(4);
        to_host(8);
        let taken = take();
        assert_eq!(
            taken.to_device,
            Copies {
                count: 2,
                bytes: 20
            }
        );
        assert_eq!(taken.to_host, Copies { count: 1, bytes: 8 });
        assert_eq!(taken.count(), 3);
        assert_eq!(take(), Transfers::default());
    }
}
