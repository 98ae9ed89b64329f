//! Links liburcu's memb flavour when the `rcu` feature is on.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_RCU").is_some() {
        println!("cargo:rustc-link-lib=urcu-memb");
    }
}
