//! The names of classes whose locks have none: the lock's kind, its protected type and its
//! construction site, shortened for reading (`Mutex<Vec<Notified>>@tokio-1.54.1/src/x.rs:12`).
//!
//! A class's name is built once, when the class is created, and freed with it; a lock map
//! itself only holds `&'static` pieces (its kind, a pointer to `type_name`, its site).

use std::borrow::Cow;
use std::panic::Location;

use super::KeyRef;

/// The name of the class created by a lock map whose name (or, for an unnamed map, kind) is
/// `label`, of key `key`. A named map names its class; an unnamed one with a construction site
/// reads as `kind<type>@file:line`.
///
/// A map with neither a name nor a site gets its key's identity rather than an empty name, so
/// that reports tell such classes apart: `key@0x…` for a static key, `instance#n` for a
/// per-instance class, `novalidate`. (A dynamic key's unnamed class is named after the key
/// where the key's name is at hand.)
pub(crate) fn class_name(label: &'static str, named: bool, key: KeyRef) -> Cow<'static, str> {
    if named {
        return Cow::Borrowed(label);
    }
    match key {
        KeyRef::SiteType { site, ty } => Cow::Owned(unnamed(label, Some(ty.get()), site)),
        KeyRef::Site(site) => Cow::Owned(unnamed(label, None, site)),
        _ if !label.is_empty() => Cow::Borrowed(label),
        KeyRef::Static(k) => Cow::Owned(format!("key@{:p}", k.0)),
        KeyRef::Instance(serial) => Cow::Owned(format!("instance#{serial}")),
        KeyRef::NoValidate => Cow::Borrowed("novalidate"),
        KeyRef::Dynamic { .. } => Cow::Borrowed(label),
    }
}

/// `kind<type>@file:line`, with the type and the file shortened; without a type,
/// `kind@file:line`.
pub(crate) fn unnamed(kind: &str, ty: Option<&str>, site: &Location<'_>) -> String {
    let file = short_path(site.file());
    match ty {
        Some(ty) => format!("{kind}<{}>@{file}:{}", short_type(ty), site.line()),
        None => format!("{kind}@{file}:{}", site.line()),
    }
}

/// A type name with every path cut down to its last segment:
/// `alloc::vec::Vec<tokio::runtime::task::Notified>` becomes `Vec<Notified>`,
/// `<alloc::vec::Vec<u8> as core::iter::IntoIterator>::IntoIter` becomes
/// `<Vec<u8> as IntoIterator>::IntoIter`.
pub(crate) fn short_type(full: &str) -> String {
    let mut out = String::with_capacity(full.len());
    // Where the identifier being written started in `out`.
    let mut ident_start = 0;
    let mut chars = full.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ':' && chars.peek() == Some(&':') {
            chars.next();
            if ident_start < out.len() {
                // `a::b`: drop the path segment `a`.
                out.truncate(ident_start);
            } else {
                // `<T as Trait>::Assoc`: the separator follows no identifier; keep it.
                out.push_str("::");
                ident_start = out.len();
            }
            continue;
        }
        out.push(c);
        if !(c.is_alphanumeric() || c == '_') {
            ident_start = out.len();
        }
    }
    out
}

/// A source path without the machine-specific part before a dependency's own directory:
/// `/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/tokio-1.54.1/src/x.rs`
/// becomes `tokio-1.54.1/src/x.rs`; git checkouts keep `repo-hash/rev/...`, the standard
/// library `library/...`. Other paths (the workspace's own, relative) are unchanged.
pub(crate) fn short_path(file: &str) -> &str {
    for sep in ['/', '\\'] {
        let registry = format!("{sep}registry{sep}src{sep}");
        if let Some(at) = file.find(&registry) {
            let rest = &file[at + registry.len()..];
            // Skip the registry index directory.
            return rest.find(sep).map_or(rest, |i| &rest[i + 1..]);
        }
        let git = format!("{sep}git{sep}checkouts{sep}");
        if let Some(at) = file.find(&git) {
            return &file[at + git.len()..];
        }
        let rustc = format!("{sep}rustc{sep}");
        if let Some(rest) = file.strip_prefix(&rustc) {
            // `/rustc/<commit>/library/...`
            return rest.find(sep).map_or(rest, |i| &rest[i + 1..]);
        }
    }
    file
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_paths_are_cut_to_their_last_segment() {
        let cases = [
            ("u64", "u64"),
            (
                "alloc::vec::Vec<tokio::runtime::task::Notified>",
                "Vec<Notified>",
            ),
            (
                "core::option::Option<alloc::sync::Arc<dyn core::any::Any + core::marker::Send>>",
                "Option<Arc<dyn Any + Send>>",
            ),
            (
                "<alloc::vec::Vec<u8> as core::iter::traits::collect::IntoIterator>::IntoIter",
                "<Vec<u8> as IntoIterator>::IntoIter",
            ),
            (
                "(u8, &'static str, [my_crate::T; 4])",
                "(u8, &'static str, [T; 4])",
            ),
            ("my_crate::f::{{closure}}", "{{closure}}"),
            (
                "std::collections::hash::map::HashMap<u32, bank::Account>",
                "HashMap<u32, Account>",
            ),
        ];
        for (full, short) in cases {
            assert_eq!(short_type(full), short, "{full}");
        }
    }

    #[test]
    fn registry_and_toolchain_paths_are_shortened() {
        let cases = [
            (
                "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/tokio-1.54.1/src/x.rs",
                "tokio-1.54.1/src/x.rs",
            ),
            (
                "C:\\Users\\u\\.cargo\\registry\\src\\index.crates.io-6f17d22bba15001f\\r2d2-0.8.10\\src\\lib.rs",
                "r2d2-0.8.10\\src\\lib.rs",
            ),
            (
                "/home/u/.cargo/git/checkouts/tokio-0123abcd/89ef012/tokio/src/lib.rs",
                "tokio-0123abcd/89ef012/tokio/src/lib.rs",
            ),
            (
                "/rustc/59807616e1b5ba5e52d3e6c3d6b7b5f3e3a2c1d0/library/std/src/sync/mod.rs",
                "library/std/src/sync/mod.rs",
            ),
            ("src/bank.rs", "src/bank.rs"),
            ("/work/app/src/bank.rs", "/work/app/src/bank.rs"),
        ];
        for (full, short) in cases {
            assert_eq!(short_path(full), short, "{full}");
        }
    }

    #[test]
    fn unnamed_classes_read_as_kind_type_and_site() {
        let site = Location::caller();
        let name = unnamed("Mutex", Some("u64"), site);
        assert_eq!(name, format!("Mutex<u64>@{}:{}", site.file(), site.line()));
        let name = unnamed("Condvar", None, site);
        assert_eq!(name, format!("Condvar@{}:{}", site.file(), site.line()));
    }
}
