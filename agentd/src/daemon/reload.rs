//! SIGHUP: the config file read again and what can change live applied, without touching
//! a run. Live: `[[providers]]` (and `[defaults] provider` and `model`), `[permissions]`,
//! `[[profiles]]` and `[[mcp_servers]]`; a run keeps the provider its step resolved and a
//! call the decision it got, the next ones take the new config. Every other section is
//! read once at start: a change there is logged by name as needing a restart. A file that
//! does not load or check leaves everything as it was (the error is logged).

use std::path::PathBuf;
use std::sync::Arc;

use crate::config::{ConfigFile, Credentials};
use crate::provider::ProviderRegistry;
use crate::tools::center::ToolCenter;
use crate::tools::mcp::McpManager;

/// The sections a reload applies (the rest need a restart).
const LIVE_SECTIONS: &[&str] = &["providers", "permissions", "profiles", "mcp_servers"];
/// The keys of `[defaults]` a reload applies (through the providers).
const LIVE_DEFAULTS: &[&str] = &["provider", "model"];

/// What a reload needs: where the config is, what is in force, and the parts it changes.
pub(super) struct Reloader {
    /// The config file the daemon read at start (`None`: none, nothing to reload).
    pub(super) file: Option<PathBuf>,
    /// Whether it was named explicitly (then a missing file is an error, not defaults).
    pub(super) required: bool,
    /// The file's sections as last applied, to tell what changed.
    pub(super) in_force: toml::Table,
    pub(super) providers: Arc<ProviderRegistry>,
    pub(super) tools: Arc<ToolCenter>,
    pub(super) mcp: Arc<McpManager>,
    /// What the new providers observe their requests in.
    pub(super) metrics: crate::metrics::Metrics,
}

impl Reloader {
    /// Reads the config file again and applies what can change live; logs what it did.
    pub(super) async fn reload(&mut self) {
        let Some(file) = self.file.clone() else {
            tracing::info!("SIGHUP: no config file to read again");
            return;
        };
        match self.apply(&file).await {
            Ok(()) => {}
            Err(e) => tracing::error!(
                config = %file.display(),
                "SIGHUP: the config file was not reloaded, everything stays as it was: {e}"
            ),
        }
    }

    async fn apply(&mut self, file: &std::path::Path) -> anyhow::Result<()> {
        let config = ConfigFile::load(file, self.required)?;
        super::check_config(&config)?;
        // Everything is built and checked before anything changes.
        let credentials = Credentials::from_env(|k| std::env::var(k).ok());
        let providers = ProviderRegistry::from_config(
            &config,
            credentials.lookup(|k| std::env::var(k).ok()),
            &self.metrics,
        )?;
        let profiles = Arc::new(super::profiles_of(&config)?);
        McpManager::check_config_servers(&config.mcp_servers)?;
        let next = read_table(file, self.required)?;

        self.providers.replace(providers);
        self.tools.reload_rules(&config.permissions, profiles);
        let mcp = self.mcp.reload_config(&config.mcp_servers).await?;
        let restart = needs_restart(&self.in_force, &next);
        self.in_force = next;
        tracing::info!(
            providers = self.providers.list_providers().len(),
            mcp_added = ?mcp.added,
            mcp_changed = ?mcp.changed,
            mcp_removed = ?mcp.removed,
            "SIGHUP: config reloaded (providers, permissions, profiles, MCP servers); runs \
             under way go on"
        );
        if !restart.is_empty() {
            tracing::warn!(
                sections = restart.join(", "),
                "SIGHUP: these sections changed in the config file but are read only at \
                 start: restart the daemon to apply them"
            );
        }
        Ok(())
    }
}

/// The config file's sections as TOML (an empty table for a missing optional file).
pub(super) fn read_table(file: &std::path::Path, required: bool) -> anyhow::Result<toml::Table> {
    match std::fs::read_to_string(file) {
        Ok(text) => Ok(text.parse::<toml::Table>()?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => Ok(toml::Table::new()),
        Err(e) => Err(anyhow::anyhow!("cannot read {}: {e}", file.display())),
    }
}

/// The sections (and `defaults.KEY`s) that differ between `before` and `after` and that
/// a reload does not apply.
fn needs_restart(before: &toml::Table, after: &toml::Table) -> Vec<String> {
    let mut sections: Vec<&String> = before.keys().chain(after.keys()).collect();
    sections.sort();
    sections.dedup();
    let mut out = Vec::new();
    for section in sections {
        if LIVE_SECTIONS.contains(&section.as_str()) {
            continue;
        }
        let (old, new) = (before.get(section), after.get(section));
        if section == "defaults" {
            let empty = toml::Table::new();
            let old = old.and_then(toml::Value::as_table).unwrap_or(&empty);
            let new = new.and_then(toml::Value::as_table).unwrap_or(&empty);
            let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                if !LIVE_DEFAULTS.contains(&key.as_str()) && old.get(key) != new.get(key) {
                    out.push(format!("defaults.{key}"));
                }
            }
        } else if old != new {
            out.push(section.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn only_what_a_reload_does_not_apply_is_named() {
        let before = table(
            "[defaults]\nprovider = \"a\"\nmax_steps = 5\n[limits]\nmax_connections = 8\n\
             [permissions]\nbash = \"ask\"\n[[providers]]\nid = \"a\"\n",
        );
        let after = table(
            "[defaults]\nprovider = \"b\"\nmax_steps = 6\n[limits]\nmax_connections = 8\n\
             [permissions]\nbash = \"allow\"\n[[providers]]\nid = \"b\"\n[sandbox]\nmode = \"off\"\n",
        );
        assert_eq!(
            needs_restart(&before, &after),
            ["defaults.max_steps", "sandbox"]
        );
        assert!(needs_restart(&before, &before).is_empty());
    }
}
