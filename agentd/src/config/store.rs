//! `[store]`: where the sessions are kept. Without a URL, the embedded SQLite file in the
//! data directory (the default); `url = "postgres://..."` (or `--store`, `AGENTD_STORE`) puts
//! them on PostgreSQL. Checked by [`StoreConfig::validate`], opened by the daemon.

use serde::Deserialize;

/// The `[store]` section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// `postgres://user[:password]@host[:port]/database[?options]` (a Unix socket: `host=`
    /// a folder). None: SQLite in the data directory. `--store` replaces it.
    #[serde(default)]
    pub url: Option<String>,
    /// The machine this daemon's folders are on, for agents with a workspace: with several
    /// daemons on one database only daemons of an agent's label run it. Default: the
    /// hostname. At most 100 characters, no control characters.
    #[serde(default)]
    pub host_label: Option<String>,
}

/// Where the store is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// The SQLite file in the data directory.
    Embedded,
    /// A PostgreSQL database at this URL.
    Postgres(String),
}

impl StoreConfig {
    /// Where the store is: `flag` (`--store`) over `[store] url`; a URL of any other kind is
    /// refused with what is accepted.
    pub fn resolve(&self, flag: Option<&str>) -> Result<StoreUrl, String> {
        let Some(url) = flag.or(self.url.as_deref()) else {
            return Ok(StoreUrl::Embedded);
        };
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(StoreUrl::Postgres(url.to_owned()));
        }
        let shown = url
            .split_once("://")
            .map_or("(no scheme)", |(scheme, _)| scheme);
        Err(format!(
            "[store] url (or --store / AGENTD_STORE): a scheme of {shown:?} is not a store; \
             give postgres://user@host/database, or leave it unset for the SQLite file in the \
             data directory"
        ))
    }

    pub fn validate(&self) -> Result<(), String> {
        self.resolve(None)?;
        if let Some(label) = &self.host_label
            && (label.trim().is_empty()
                || label.chars().count() > 100
                || label.chars().any(char::is_control))
        {
            return Err(format!(
                "[store] host_label {label:?}: give 1 to 100 characters, no control characters"
            ));
        }
        Ok(())
    }

    /// The host label: `[store] host_label`, else `hostname`.
    pub fn label(&self, hostname: &str) -> String {
        self.host_label
            .clone()
            .unwrap_or_else(|| hostname.to_owned())
    }
}

/// `url` with its password (if any) replaced by `***`, for logs and errors.
pub fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, tail) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _password)) => format!("{scheme}://{name}:***@{host}{tail}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_picks_the_backend_and_the_flag_wins() {
        let none = StoreConfig::default();
        assert_eq!(none.resolve(None), Ok(StoreUrl::Embedded));
        let pg = StoreConfig {
            url: Some("postgres://a@h/db".into()),
            host_label: None,
        };
        assert_eq!(
            pg.resolve(None),
            Ok(StoreUrl::Postgres("postgres://a@h/db".into()))
        );
        assert_eq!(
            pg.resolve(Some("postgresql://b@h/other")),
            Ok(StoreUrl::Postgres("postgresql://b@h/other".into()))
        );
        for bad in ["mysql://h/db", "sqlite:///tmp/x.db", "/tmp/x.db"] {
            let error = none.resolve(Some(bad)).unwrap_err();
            assert!(error.contains("postgres://"), "{error}");
        }
        assert!(
            StoreConfig {
                url: Some("redis://x".into()),
                host_label: None,
            }
            .validate()
            .is_err()
        );
        for bad in ["", "  ", "a\nb", &"x".repeat(101)] {
            let config = StoreConfig {
                url: None,
                host_label: Some(bad.to_owned()),
            };
            assert!(config.validate().is_err(), "{bad:?}");
        }
        let labelled = StoreConfig {
            url: None,
            host_label: Some("build-box".into()),
        };
        labelled.validate().unwrap();
        assert_eq!(labelled.label("ignored"), "build-box");
        assert_eq!(none.label("this-host"), "this-host");
    }

    #[test]
    fn a_password_is_never_shown() {
        assert_eq!(
            redacted("postgres://me:s3cret@db.example:5432/agents?sslmode=require"),
            "postgres://me:***@db.example:5432/agents?sslmode=require"
        );
        assert_eq!(
            redacted("postgres://me@/agents?host=/run/pg"),
            "postgres://me@/agents?host=/run/pg"
        );
        assert_eq!(redacted("postgres:///agents"), "postgres:///agents");
    }
}
