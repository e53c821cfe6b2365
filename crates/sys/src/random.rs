//! Bytes that need to differ, not to be secret (a listener FIFO's name), taken without
//! ever waiting for the kernel's entropy pool.
//!
//! Early in a VM's boot the pool is not yet initialized, and a read of `/dev/urandom`
//! (like `getrandom` without flags) blocks until it is: about a second in a small guest
//! (issue 38: tend-init's first service subscription held its services back that long).
//! `GRND_INSECURE` (Linux 5.6) never blocks; older kernels refuse it (EINVAL) and get
//! `GRND_NONBLOCK`, which fails (EAGAIN) rather than wait. Whatever could not be filled
//! stays as the caller left it: callers mix in the clock and the pid.

/// Fill as much of `buf` as the kernel gives without blocking; how many bytes it gave.
#[allow(unsafe_code)]
pub fn fill_nonblocking(buf: &mut [u8]) -> usize {
    for flags in [libc::GRND_INSECURE, libc::GRND_NONBLOCK] {
        let mut done = 0;
        while done < buf.len() {
            let rest = &mut buf[done..];
            // The system call, not libc's wrapper: the release link left musl's
            // `getrandom` unresolved (a call to address 0 in the guest).
            // SAFETY: the pointer and length describe `rest`, writable and owned by us.
            let n = unsafe {
                libc::syscall(
                    libc::SYS_getrandom,
                    rest.as_mut_ptr(),
                    rest.len(),
                    flags as libc::c_long,
                )
            };
            if n > 0 {
                done += n as usize;
                continue;
            }
            match nix::errno::Errno::last() {
                nix::errno::Errno::EINTR => continue,
                // GRND_INSECURE unknown to this kernel: try the next flag.
                nix::errno::Errno::EINVAL if done == 0 => break,
                _ => return done,
            }
        }
        if done == buf.len() {
            return done;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_the_buffer_on_a_booted_kernel() {
        let mut a = [0u8; 32];
        let mut b = [0u8; 32];
        assert_eq!(fill_nonblocking(&mut a), 32);
        assert_eq!(fill_nonblocking(&mut b), 32);
        assert_ne!(a, b);
    }
}
