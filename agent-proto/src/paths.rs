//! Where the daemon's socket lives by default, shared by the daemon and its clients so
//! both find the same path without configuration.

use std::path::PathBuf;

/// Environment variable naming the socket path.
pub const SOCKET_ENV: &str = "AGENTD_SOCKET";

/// The socket path when none is given on the command line: `$AGENTD_SOCKET`, else
/// `$XDG_RUNTIME_DIR/agentd/agentd.sock`, else `$TMPDIR/agentd-$UID/agentd.sock`
/// (`/tmp` when `TMPDIR` is unset). `uid` is the caller's effective uid.
pub fn default_socket_path(uid: u32) -> PathBuf {
    default_socket_path_from(|k| std::env::var_os(k), uid)
}

/// [`default_socket_path`] with the environment given as a lookup function (for tests).
pub fn default_socket_path_from(
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
    uid: u32,
) -> PathBuf {
    let non_empty = |k: &str| env(k).filter(|v| !v.is_empty());
    if let Some(path) = non_empty(SOCKET_ENV) {
        return PathBuf::from(path);
    }
    if let Some(dir) = non_empty("XDG_RUNTIME_DIR") {
        return PathBuf::from(dir).join("agentd").join("agentd.sock");
    }
    let tmp = non_empty("TMPDIR").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    tmp.join(format!("agentd-{uid}")).join("agentd.sock")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn precedence_of_socket_locations() {
        let cases: [(&[(&str, &str)], &str); 5] = [
            (
                &[
                    ("AGENTD_SOCKET", "/s/x.sock"),
                    ("XDG_RUNTIME_DIR", "/run/user/7"),
                ],
                "/s/x.sock",
            ),
            (
                &[("XDG_RUNTIME_DIR", "/run/user/7")],
                "/run/user/7/agentd/agentd.sock",
            ),
            (&[("TMPDIR", "/var/tmp")], "/var/tmp/agentd-7/agentd.sock"),
            (&[], "/tmp/agentd-7/agentd.sock"),
            (
                &[("AGENTD_SOCKET", ""), ("XDG_RUNTIME_DIR", "")],
                "/tmp/agentd-7/agentd.sock",
            ),
        ];
        for (env, expected) in cases {
            let env: HashMap<&str, &str> = env.iter().copied().collect();
            let got = default_socket_path_from(|k| env.get(k).map(Into::into), 7);
            assert_eq!(got, PathBuf::from(expected), "env {env:?}");
        }
    }
}
