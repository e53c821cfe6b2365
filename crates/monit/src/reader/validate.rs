//! What monit checks once the whole configuration is read: names unique, dependencies
//! defined and without loops, accounts known; and what tend-monit adds: a check's name
//! becomes a service directory's name, so one that a file name cannot hold is refused.

use crate::reader::model::*;
use std::collections::HashMap;
use std::ffi::OsStr;

/// Whether `name` can be one path component of a service directory: not empty, not `.`
/// or `..`, not starting with a dot (a scan directory skips those), no `/`, no control
/// characters, at most 255 bytes.
pub fn name_is_file_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && !name.starts_with('.')
        && !name.contains(|c: char| c == '/' || c.is_control())
}

/// Warnings monit gives and goes on: a program that does not exist or cannot be run
/// (it may be installed later). Errors stop a run; these do not.
pub fn warnings(c: &Control) -> Vec<Error> {
    let mut out = Vec::new();
    for ch in &c.checks {
        let rules = ch.rules.iter().filter_map(|r| match &r.action {
            Action::Exec(p) => Some(p),
            _ => None,
        });
        for p in [&ch.start, &ch.stop, &ch.restart]
            .into_iter()
            .flatten()
            .chain(rules)
        {
            let Some(exe) = p.argv.first() else { continue };
            let msg = match std::fs::metadata(exe) {
                Err(_) => format!("Program does not exist: '{exe}'"),
                Ok(m) if std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 == 0 => {
                    format!("Program is not executable: '{exe}'")
                }
                Ok(_) => continue,
            };
            out.push(Error {
                loc: p.loc.clone(),
                msg,
            });
        }
    }
    out
}

/// What `-t` says of `set httpd`: an `allow` file that cannot be read, and a
/// unix socket (tend-monit serves TCP only).
fn httpd(c: &Control, errors: &mut Vec<Error>) {
    let Some(h) = &c.httpd else { return };
    // The first `allow` file that cannot be read, as the server's reading of
    // its rules names it.
    let unreadable = h.allow.iter().find_map(|a| match a {
        Allow::File { path, digest, .. } => htpasswd(path, *digest).err(),
        _ => None,
    });
    if let Some(msg) = unreadable {
        errors.push(Error {
            loc: h.loc.clone(),
            msg,
        });
    }
    if let Some(s) = &h.unixsocket {
        errors.push(Error {
            loc: h.loc.clone(),
            msg: format!(
                "set httpd unixsocket {s}: tend-monit serves HTTP over TCP only (set httpd port N)"
            ),
        });
    }
}

/// The most bytes of an `allow` file: more is refused, as a file that is not
/// a password list.
pub const MAX_HTPASSWD: usize = 64 * 1024;

/// The `user:password` lines of an htpasswd file (BOSH's monit.user), read the safe way:
/// non-blocking, a regular file only, bounded. As monit reads them: a line ends at its
/// first `#` and loses its trailing blanks; a hashed password ends at the next `:` (an
/// /etc/shadow-style line), a cleartext one keeps it. A user with an empty password is
/// kept (the file then has a user, and the server starts), though nobody logs in as them
/// (`passwd::Secret::admits`).
pub fn htpasswd(path: &str, digest: Digest) -> Result<Vec<(String, String)>, String> {
    let p = std::path::Path::new(path);
    let text = tend_sys::fd::read_regular(p, MAX_HTPASSWD + 1)
        .map_err(|e| format!("cannot read htpasswd {path}: {}", e.describe()))?;
    if text.len() > MAX_HTPASSWD {
        return Err(format!(
            "cannot read htpasswd {path}: longer than {MAX_HTPASSWD} bytes"
        ));
    }
    let text = String::from_utf8_lossy(&text);
    Ok(text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim_end())
        .filter_map(|l| l.split_once(':'))
        .map(|(u, p)| match digest {
            Digest::Cleartext => (u, p),
            _ => (u, p.split(':').next().unwrap_or("")),
        })
        .filter(|(u, _)| !u.is_empty())
        .map(|(u, p)| (u.to_string(), p.to_string()))
        .collect())
}

pub fn all(c: &mut Control, errors: &mut Vec<Error>) {
    httpd(c, errors);
    // monit checks dependencies only once the files parsed cleanly (and so names only
    // its first error); tend-monit names these too.
    let mut seen: HashMap<&str, &Check> = HashMap::new();
    for ch in &c.checks {
        if !name_is_file_name(&ch.name) {
            errors.push(Error {
                loc: Some(ch.loc.clone()),
                msg: format!(
                    "check name '{}' cannot be a file name (tend-monit makes one service directory per check)",
                    ch.name.escape_debug()
                ),
            });
        }
        if let Some(first) = seen.get(ch.name.as_str()) {
            errors.push(Error {
                loc: Some(ch.loc.clone()),
                msg: format!(
                    "Service name conflict, {} already defined at {}",
                    ch.name, first.loc
                ),
            });
        } else {
            seen.insert(&ch.name, ch);
        }
    }
    for ch in &c.checks {
        for (d, loc) in &ch.depends {
            if !seen.contains_key(d.as_str()) {
                errors.push(Error {
                    loc: Some(loc.clone()),
                    msg: format!("Depending service '{d}' is not defined in the control file"),
                });
            }
        }
        for p in [&ch.start, &ch.stop, &ch.restart].into_iter().flatten() {
            accounts(p, errors);
        }
        for r in &ch.rules {
            if let Action::Exec(p) = &r.action {
                accounts(p, errors);
            }
        }
    }
    if let Some(n) = crate::reader::order::find_loop(&c.checks) {
        errors.push(Error {
            loc: c
                .checks
                .iter()
                .find(|ch| ch.name == n)
                .map(|ch| ch.loc.clone()),
            msg: format!("Found a depend loop in the control file involving the service '{n}'"),
        });
    }
}

/// `as uid U and gid G`: names must be known accounts (numbers are taken as they are).
fn accounts(p: &Program, errors: &mut Vec<Error>) {
    let loc = p.loc.clone();
    if let Some(u) = p.uid.as_deref().filter(|u| u.parse::<u32>().is_err()) {
        match tend_env::account::user(OsStr::new(u)) {
            Ok(Some(_)) => {}
            Ok(None) => errors.push(Error {
                loc: loc.clone(),
                msg: format!("Requested user not found on the system '{u}'"),
            }),
            Err(e) => errors.push(Error {
                loc: loc.clone(),
                msg: e.to_string(),
            }),
        }
    }
    if let Some(g) = p.gid.as_deref().filter(|g| g.parse::<u32>().is_err()) {
        match tend_env::account::group(OsStr::new(g)) {
            Ok(Some(_)) => {}
            Ok(None) => errors.push(Error {
                loc,
                msg: format!("Requested group not found on the system '{g}'"),
            }),
            Err(e) => errors.push(Error {
                loc,
                msg: e.to_string(),
            }),
        }
    }
}

/// A connection test as tend-check's probe arguments, or why tend-monit cannot run it.
pub fn probe_of(t: &Test) -> Result<Vec<String>, String> {
    match t {
        Test::Connection {
            unixsocket: Some(_),
            ..
        } => Err("tend-monit does not test unix sockets yet".into()),
        Test::Connection {
            host,
            port: Some(port),
            protocol,
            request,
            ..
        } => {
            // monit's default host is localhost.
            let host = host.as_deref().unwrap_or("127.0.0.1");
            let host = if host == "localhost" {
                "127.0.0.1"
            } else {
                host
            };
            match protocol.as_deref() {
                Some("http") => Ok(vec![
                    "-u".into(),
                    format!("http://{host}:{port}{}", request.as_deref().unwrap_or("/")),
                ]),
                None | Some("default") | Some("tcp") => {
                    Ok(vec!["-p".into(), format!("{host}:{port}")])
                }
                Some(p) => Err(format!(
                    "tend-monit does not speak protocol {p} (it could test a TCP connection only)"
                )),
            }
        }
        Test::Url(u) if u.starts_with("http://") => Ok(vec!["-u".into(), u.clone()]),
        Test::Url(_) => Err("tend-monit tests http:// URLs only".into()),
        _ => Err("not a connection test".into()),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    fn errors(src: &str) -> Vec<String> {
        let (_, errors) = crate::read_source(Path::new("monitrc"), src.as_bytes());
        errors.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn httpd_rules_checked_when_read() {
        let rows: &[(&str, &str)] = &[
            (
                "set httpd port 2812 allow cleartext /nonexistent/monit.user\n",
                "monitrc:1: cannot read htpasswd /nonexistent/monit.user: ",
            ),
            (
                "set httpd unixsocket /run/monit.sock allow admin:pw\n",
                "monitrc:1: set httpd unixsocket /run/monit.sock: tend-monit serves HTTP over TCP only (set httpd port N)",
            ),
        ];
        for (src, error) in rows {
            let e = errors(src);
            assert!(e.len() == 1 && e[0].starts_with(error), "{src}: {e:?}");
        }
        assert_eq!(
            errors("set httpd port 2812 allow admin:pw\n"),
            Vec::<String>::new()
        );
    }
}
