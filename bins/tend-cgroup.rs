//! tend-cgroup — not written yet.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("tend-cgroup: fatal: not implemented");
    std::process::exit(111);
}
