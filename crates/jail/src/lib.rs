//! tend-jail: bpm's isolation for one process, without runc. See man/man8/tend-jail.8.
//!
//! bpm writes an OCI spec and hands it to runc; the walls it asks for are few and fixed:
//! three or four namespaces, a root built from read-only binds of the host's system
//! directories and the job's own directories, fresh proc/dev/sys, masked and read-only
//! paths, the `vcap` user with an empty (or listed) capability set, no_new_privs,
//! rlimits, a cgroup, and a seccomp allowlist. This crate builds exactly those walls
//! in the process itself, then execs the program, so a run script can say
//! `tend-jail -j JOB prog` where bpm would start a container.
//!
//! [`plan`] is what to build (pure, checked before the machine is touched); [`run`]
//! builds it, one named step after another, each failure naming its step and path;
//! [`seccomp`] and [`caps`] hold bpm's lists. The program is never started half-walled:
//! every step comes before the exec, and any failure ends the process instead.
//!
//! Not here: a user or network namespace (bpm uses neither), devices cgroups, AppArmor,
//! runc's state directory and `bpm list/shell` (nothing outside the jail keeps state).

pub mod caps;
pub mod plan;
mod run;
pub mod seccomp;

pub use plan::{Plan, Volume};
pub use run::{Failure, run};

/// bpm's filter as build.rs compiled it (None in a cross build).
mod built {
    include!(concat!(env!("OUT_DIR"), "/filter.rs"));
}

/// The seccomp program to load (seccomp::compile's): built at build time where the
/// target is the build machine's architecture (build.rs), else compiled now.
pub fn seccomp_program() -> Result<Vec<seccompiler::sock_filter>, seccomp::CompileError> {
    match built::PRECOMPILED {
        Some(p) => Ok(p.to_vec()),
        None => seccomp::compile(),
    }
}

#[cfg(test)]
mod tests {
    /// What build.rs wrote is what seccomp::compile gives now.
    #[test]
    fn built_filter_is_the_compiled_one() {
        assert!(super::built::PRECOMPILED.is_some());
        let built = super::seccomp_program().unwrap();
        assert_eq!(built, super::seccomp::compile().unwrap());
    }
}
