//! The worker's memory ceiling: a fraction of physical memory by default,
//! applied to the worker process as its data-segment limit (heap and
//! private mappings), so a run that asks for more fails there, not in the
//! studio or in the rest of the machine.

use std::io;

/// The part of physical memory a worker may use unless told otherwise.
const DEFAULT_FRACTION: f64 = 0.75;

/// Physical memory in bytes, if the system says.
fn physical_memory() -> Option<u64> {
    // SAFETY: sysconf has no preconditions; it returns -1 when unknown.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages > 0 && size > 0).then(|| pages as u64 * size as u64)
}

/// The default ceiling: three quarters of physical memory.
pub fn default_memory_limit() -> Option<u64> {
    physical_memory().map(|bytes| (bytes as f64 * DEFAULT_FRACTION) as u64)
}

/// Limits this process's data segment to `bytes` (or to the hard limit
/// it already has, when that is lower); returns the limit set.
pub fn apply_memory_limit(bytes: u64) -> io::Result<u64> {
    let mut current = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `current` is a valid rlimit to write for the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_DATA, &mut current) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let bytes = (bytes as libc::rlim_t).min(current.rlim_max);
    let limit = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: bytes,
    };
    // SAFETY: `limit` is a valid rlimit for the duration of the call.
    if unsafe { libc::setrlimit(libc::RLIMIT_DATA, &limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(bytes)
}

/// A ceiling as a byte count to compare with (`None`: no ceiling).
pub fn byte_limit(ceiling: Option<u64>) -> usize {
    ceiling.map_or(usize::MAX, |b| usize::try_from(b).unwrap_or(usize::MAX))
}

/// `bytes` as a person reads it (`3.2 GiB`, `512 MiB`).
pub fn human(bytes: u64) -> String {
    let gib = bytes as f64 / f64::from(1u32 << 30);
    if gib >= 1.0 {
        format!("{gib:.1} GiB")
    } else {
        format!("{} MiB", bytes >> 20)
    }
}
