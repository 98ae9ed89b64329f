//! Lock class keys: static ones ([`LockClassKey`]) and the dynamic ones this crate exists for
//! ([`DynamicKey`]), registered in a fixed table of buckets whose lookups are protected by
//! hazard pointers.
//!
//! The kernel's `lockdep_register_key()` / `lockdep_unregister_key()` / `is_dynamic_key()`,
//! with the reader protected by a hazard pointer on the *bucket head* (Boqun Feng's shazptr
//! series for lockdep) instead of an RCU read section:
//!
//! - [`table`]: the buckets and their links, changed only under the graph lock.
//! - [`lookup`]: the lock-free "is this key registered?", a bucket walk inside a hazard-pointer
//!   read section. Start reading here.
//! - [`sync`]: the read section and the grace-period wait as a strategy, so benchmarks can put
//!   other protection ([`KeySyncStrategy`]) on the very same table.
//! - [`dynamic`]: [`DynamicKey`] itself. Unregister unlinks the node, zaps the key's classes
//!   (their dependencies; cached chains die with the class generation), drops the graph lock,
//!   then waits (`hazptr` synchronize) for lookups in that one bucket only, after which the
//!   key's memory is freed.
//! - [`misuse`]: the reports for keys used wrongly.

mod dynamic;
pub(crate) mod lookup;
pub(crate) mod misuse;
mod sync;
mod table;

pub use crate::class::LockClassKey;
pub use dynamic::{DynamicKey, KeyHandle};
pub(crate) use sync::domain as hazptr_domain;
pub use sync::{key_table_sync, set_key_table_sync, KeySyncStrategy, KeyTableSync};
