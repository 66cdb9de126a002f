//! The hash map of the runner's per-run tables: foldhash's fast hasher
//! (the std SipHash shows in a call that takes microseconds).

use std::collections::HashMap;

/// A `HashMap` with foldhash's fast hasher.
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
