//! Host names to addresses without NSS (tend's executables are static, and a static glibc
//! must not load NSS modules): IP literals, then `/etc/hosts`, then one DNS query per
//! address family to the first nameserver of `/etc/resolv.conf` over UDP.

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::socket::{
    AddressFamily, MsgFlags, SockFlag, SockType, SockaddrIn, SockaddrIn6, connect, recv, send,
    socket,
};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd};

/// Addresses for `host`, in the order to try.
pub fn lookup(host: &str) -> Result<Vec<IpAddr>, String> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![ip]);
    }
    if let Ok(text) = std::fs::read_to_string("/etc/hosts") {
        let found = hosts_lookup(&text, host);
        if !found.is_empty() {
            return Ok(found);
        }
    }
    let text = std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default();
    let server = nameserver(&text).unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
    let mut out = Vec::new();
    let mut last = String::from("not found");
    for qtype in [1u16, 28] {
        match dns_query(server, host, qtype) {
            Ok(mut v) => out.append(&mut v),
            Err(e) => last = e,
        }
    }
    if out.is_empty() { Err(last) } else { Ok(out) }
}

/// The addresses `/etc/hosts` gives `host` (case-insensitive), in file order.
pub fn hosts_lookup(text: &str, host: &str) -> Vec<IpAddr> {
    let mut v = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut words = line.split_ascii_whitespace();
        let Some(Ok(ip)) = words.next().map(str::parse::<IpAddr>) else {
            continue;
        };
        if words.any(|w| w.eq_ignore_ascii_case(host)) && !v.contains(&ip) {
            v.push(ip);
        }
    }
    v
}

/// The first `nameserver` line of resolv.conf.
pub fn nameserver(text: &str) -> Option<IpAddr> {
    text.lines().find_map(|l| {
        let mut w = l.split_ascii_whitespace();
        (w.next() == Some("nameserver"))
            .then(|| w.next()?.split('%').next()?.parse().ok())
            .flatten()
    })
}

/// A DNS query packet for `name`, type `qtype`, class IN, id `id`, recursion desired.
pub fn dns_packet(id: u16, name: &str, qtype: u16) -> Option<Vec<u8>> {
    let mut p = Vec::with_capacity(name.len() + 18);
    p.extend_from_slice(&id.to_be_bytes());
    p.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.trim_end_matches('.').split('.') {
        if label.is_empty() || label.len() > 63 {
            return None;
        }
        p.push(label.len() as u8);
        p.extend_from_slice(label.as_bytes());
    }
    p.push(0);
    p.extend_from_slice(&qtype.to_be_bytes());
    p.extend_from_slice(&1u16.to_be_bytes());
    Some(p)
}

/// Skip a (possibly compressed) name at `i`; the index after it.
fn skip_name(m: &[u8], mut i: usize) -> Option<usize> {
    loop {
        let l = *m.get(i)?;
        if l == 0 {
            return Some(i + 1);
        }
        if l & 0xc0 == 0xc0 {
            return Some(i + 2);
        }
        i += 1 + l as usize;
    }
}

/// The A / AAAA records of an answer to query `id`.
pub fn dns_answers(m: &[u8], id: u16) -> Result<Vec<IpAddr>, String> {
    if m.len() < 12 || m[..2] != id.to_be_bytes() || m[2] & 0x80 == 0 {
        return Err("bad DNS answer".into());
    }
    match m[3] & 0x0f {
        0 => {}
        3 => return Err("no such host".into()),
        r => return Err(format!("DNS error {r}")),
    }
    let qd = u16::from_be_bytes([m[4], m[5]]) as usize;
    let an = u16::from_be_bytes([m[6], m[7]]) as usize;
    let mut i = 12;
    for _ in 0..qd {
        i = skip_name(m, i).ok_or("bad DNS answer")? + 4;
    }
    let mut v = Vec::new();
    for _ in 0..an {
        i = skip_name(m, i).ok_or("bad DNS answer")?;
        let h = m.get(i..i + 10).ok_or("bad DNS answer")?;
        let (ty, len) = (
            u16::from_be_bytes([h[0], h[1]]),
            u16::from_be_bytes([h[8], h[9]]) as usize,
        );
        let data = m.get(i + 10..i + 10 + len).ok_or("bad DNS answer")?;
        match (ty, len) {
            (1, 4) => v.push(IpAddr::V4(Ipv4Addr::new(
                data[0], data[1], data[2], data[3],
            ))),
            (28, 16) => {
                let mut b = [0u8; 16];
                b.copy_from_slice(data);
                v.push(IpAddr::V6(Ipv6Addr::from(b)));
            }
            _ => {}
        }
        i += 10 + len;
    }
    Ok(v)
}

fn dns_query(server: IpAddr, name: &str, qtype: u16) -> Result<Vec<IpAddr>, String> {
    let id = (std::process::id() as u16) ^ qtype;
    let q = dns_packet(id, name, qtype).ok_or("bad host name")?;
    let family = if server.is_ipv4() {
        AddressFamily::Inet
    } else {
        AddressFamily::Inet6
    };
    let e = |e: Errno| e.desc().to_string();
    let fd = socket(family, SockType::Datagram, SockFlag::SOCK_CLOEXEC, None).map_err(e)?;
    match SocketAddr::new(server, 53) {
        SocketAddr::V4(a) => connect(fd.as_raw_fd(), &SockaddrIn::from(a)),
        SocketAddr::V6(a) => connect(fd.as_raw_fd(), &SockaddrIn6::from(a)),
    }
    .map_err(e)?;
    send(fd.as_raw_fd(), &q, MsgFlags::empty()).map_err(e)?;
    let mut buf = [0u8; 1500];
    let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
    if poll(&mut fds, PollTimeout::from(2000u16)).map_err(e)? == 0 {
        return Err("DNS timed out".into());
    }
    let n = recv(fd.as_raw_fd(), &mut buf, MsgFlags::empty()).map_err(e)?;
    dns_answers(&buf[..n], id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_file() {
        let t = "127.0.0.1 localhost\n::1 localhost ip6-localhost # c\n10.0.0.2 Web web.lan\n#10.0.0.9 web\n";
        assert_eq!(
            hosts_lookup(t, "localhost"),
            vec![
                IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(Ipv6Addr::LOCALHOST)
            ]
        );
        assert_eq!(hosts_lookup(t, "web").len(), 1);
        assert!(hosts_lookup(t, "nope").is_empty());
        assert_eq!(
            nameserver("search x\nnameserver 10.1.2.3\nnameserver 8.8.8.8\n"),
            Some("10.1.2.3".parse().unwrap())
        );
    }

    #[test]
    fn dns_codec() {
        let q = dns_packet(7, "a.bc", 1).unwrap();
        assert_eq!(
            q,
            b"\x00\x07\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x01a\x02bc\x00\x00\x01\x00\x01"
        );
        // The answer: header, the question again, one A record with a compressed name.
        let mut a = q.clone();
        a[2] = 0x81;
        a[3] = 0x80;
        a[7] = 1;
        a.extend_from_slice(b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04\x0a\x00\x00\x05");
        assert_eq!(
            dns_answers(&a, 7).unwrap(),
            vec![IpAddr::V4(Ipv4Addr::new(10, 0, 0, 5))]
        );
        assert!(dns_answers(&a, 8).is_err());
        a[3] = 0x83;
        assert_eq!(dns_answers(&a, 7).unwrap_err(), "no such host");
        assert!(dns_answers(&a[..20], 7).is_err());
        assert!(dns_packet(1, "a..b", 1).is_none());
    }
}
