//! An environment as an ordered list of `NAME=value` pairs, edited without touching the
//! process's own (which `execve` receives instead).

use std::ffi::{OsStr, OsString};

/// The environment handed to `execve`.
pub type Env = Vec<(OsString, OsString)>;

/// Set `name` to `value`, replacing an existing entry in place.
pub fn set(env: &mut Env, name: &OsStr, value: &OsStr) {
    if let Some(e) = env.iter_mut().find(|(k, _)| k == name) {
        e.1 = value.to_os_string();
    } else {
        env.push((name.to_os_string(), value.to_os_string()));
    }
}

/// Remove every entry named `name`.
pub fn unset(env: &mut Env, name: &OsStr) {
    env.retain(|(k, _)| k != name);
}

/// The value of `name`, if set.
pub fn get<'a>(env: &'a Env, name: &str) -> Option<&'a OsStr> {
    env.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_os_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_replaces_and_unset_removes() {
        let mut e: Env = vec![("A".into(), "1".into()), ("B".into(), "2".into())];
        set(&mut e, OsStr::new("A"), OsStr::new("3"));
        set(&mut e, OsStr::new("C"), OsStr::new(""));
        unset(&mut e, OsStr::new("B"));
        assert_eq!(
            e,
            vec![("A".into(), "3".into()), ("C".into(), "".into())] as Env
        );
        assert_eq!(get(&e, "C"), Some(OsStr::new("")));
        assert_eq!(get(&e, "B"), None);
    }
}
