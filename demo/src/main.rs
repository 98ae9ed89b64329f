//! `demo`: the qdisc-like churn workload. Not built yet: see the project's demo issue.

fn main() {
    eprintln!("demo: the qdisc-churn workload is not built yet (see the demo issue)");
    std::process::exit(2);
}
