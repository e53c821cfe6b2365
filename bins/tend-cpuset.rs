//! tend-cpuset — not written yet.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("tend-cpuset: fatal: not implemented");
    std::process::exit(111);
}
