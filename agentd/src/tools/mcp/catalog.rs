//! The catalog: every MCP tool of every enabled server under the name the model sees,
//! rebuilt whenever a server's tool list or spec changes.
//!
//! Exposed names match `^[a-zA-Z0-9_-]{1,64}$` (what every provider accepts) and are unique
//! across servers and builtins; they depend only on the servers' names and tool lists, so
//! they are the same after a restart. Each maps back to exactly one `(server, tool)`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, PoisonError};

use super::convert::ToolDef;
use super::{McpManager, Server};

/// Longest exposed name.
const MAX_NAME: usize = 64;

/// One tool of the catalog: what agents can be offered.
#[derive(Debug, Clone)]
pub struct CatalogTool {
    pub server: String,
    pub def: ToolDef,
    /// The name the model sees.
    pub exposed: String,
    pub validator: Arc<jsonschema::Validator>,
    /// Runs without a prompt (the server's `autoApprove`).
    pub auto_approved: bool,
    /// Only these agents may use it (the server's `agents`); empty: every agent.
    pub agents: Arc<[String]>,
}

/// Every MCP tool there is, with exposed names worked out across servers (in order:
/// servers by name, each server's tools in its order).
#[derive(Debug, Default)]
pub struct Catalog {
    pub tools: Vec<CatalogTool>,
    by_exposed: HashMap<String, usize>,
    /// By server, then the server's name for the tool.
    by_original: HashMap<String, HashMap<String, usize>>,
}

impl Catalog {
    pub fn get(&self, exposed: &str) -> Option<&CatalogTool> {
        self.by_exposed.get(exposed).map(|&i| &self.tools[i])
    }

    /// The exposed name of a server's tool.
    pub fn exposed_of(&self, server: &str, tool: &str) -> Option<&str> {
        let i = *self.by_original.get(server)?.get(tool)?;
        Some(self.tools[i].exposed.as_str())
    }
}

impl McpManager {
    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(super) fn rebuild_catalog(&self) {
        let servers: Vec<Arc<Server>> = self
            .servers()
            .values()
            .filter(|s| s.spec.enabled)
            .cloned()
            .collect();
        let mut entries: Vec<(String, ToolDef, bool, Arc<jsonschema::Validator>)> = Vec::new();
        for server in &servers {
            let approve = &server.spec.auto_approve;
            for def in server.lock().tools.clone() {
                // Listings are checked when they arrive; a cached list from an older
                // daemon may hold a schema that is not.
                let validator = match jsonschema::validator_for(&def.schema) {
                    Ok(v) => Arc::new(v),
                    Err(e) => {
                        tracing::warn!(
                            server = server.spec.name,
                            tool = def.name,
                            "left out: the tool's input schema is not usable: {e}"
                        );
                        continue;
                    }
                };
                let approved = approve.iter().any(|a| a == "*" || *a == def.name);
                entries.push((server.spec.name.clone(), def, approved, validator));
            }
        }
        let pairs: Vec<(&str, &str)> = entries
            .iter()
            .map(|(s, d, _, _)| (s.as_str(), d.name.as_str()))
            .collect();
        let exposed = exposed_names(&self.reserved, &pairs);
        let scopes: HashMap<&str, Arc<[String]>> = servers
            .iter()
            .map(|s| (s.spec.name.as_str(), Arc::from(s.spec.agents.as_slice())))
            .collect();
        let tools: Vec<CatalogTool> = entries
            .into_iter()
            .zip(exposed)
            .map(
                |((server, def, auto_approved, validator), exposed)| CatalogTool {
                    agents: scopes.get(server.as_str()).cloned().unwrap_or_default(),
                    server,
                    def,
                    exposed,
                    validator,
                    auto_approved,
                },
            )
            .collect();
        let mut by_exposed = HashMap::new();
        let mut by_original: HashMap<String, HashMap<String, usize>> = HashMap::new();
        for (i, tool) in tools.iter().enumerate() {
            by_exposed.insert(tool.exposed.clone(), i);
            by_original
                .entry(tool.server.clone())
                .or_default()
                .insert(tool.def.name.clone(), i);
        }
        *self.catalog.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(Catalog {
            tools,
            by_exposed,
            by_original,
        });
    }
}

/// A name cut to what providers accept: letters, digits, `_` and `-` (anything else
/// becomes `_`), at most 64 characters, never empty.
fn sanitize(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_NAME)
        .collect();
    if clean.is_empty() {
        "tool".to_owned()
    } else {
        clean
    }
}

/// `name` cut so that `_` and 8 hex digits of a stable hash of `(server, tool)` fit.
fn with_hash(name: &str, server: &str, tool: &str) -> String {
    // FNV-1a: the same value on every build and every run.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in server.bytes().chain([0]).chain(tool.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    // Mixed (murmur3's finalizer), so names alike get hashes unlike.
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    hash ^= hash >> 33;
    let cut: String = name.chars().take(MAX_NAME - 9).collect();
    format!("{cut}_{:08x}", hash as u32)
}

/// The names the model sees, for `(server, tool name)` pairs in catalog order, given the
/// builtin names (`reserved`).
///
/// A tool keeps its name, cut to what providers accept, when no other MCP tool ends up
/// with the same one; a builtin name is kept only by a tool named exactly like it (the MCP
/// tool then replaces the builtin). The others become `server__tool`, and if that is
/// taken too (by another name, a builtin, or after cutting to 64), a hash of the server
/// and the tool's real name is appended.
pub(super) fn exposed_names(reserved: &[&str], tools: &[(&str, &str)]) -> Vec<String> {
    let bases: Vec<String> = tools.iter().map(|(_, name)| sanitize(name)).collect();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for base in &bases {
        *counts.entry(base.as_str()).or_default() += 1;
    }
    let plain: Vec<bool> = tools
        .iter()
        .zip(&bases)
        .map(|((_, name), base)| {
            counts[base.as_str()] == 1 && (!reserved.contains(&base.as_str()) || base == name)
        })
        .collect();
    let mut taken: HashSet<String> = reserved.iter().map(|r| (*r).to_owned()).collect();
    taken.extend(
        bases
            .iter()
            .zip(&plain)
            .filter(|(_, p)| **p)
            .map(|(b, _)| b.clone()),
    );
    let prefixed: Vec<Option<String>> = tools
        .iter()
        .zip(&bases)
        .zip(&plain)
        .map(|(((server, _), base), plain)| {
            (!plain).then(|| format!("{server}__{base}").chars().take(MAX_NAME).collect())
        })
        .collect();
    let mut prefixed_counts: HashMap<&str, usize> = HashMap::new();
    for name in prefixed.iter().flatten() {
        *prefixed_counts.entry(name.as_str()).or_default() += 1;
    }
    let mut out: Vec<String> = Vec::with_capacity(tools.len());
    let mut used: HashSet<String> = HashSet::new();
    for (i, (server, name)) in tools.iter().enumerate() {
        let mut exposed = match &prefixed[i] {
            None => bases[i].clone(),
            Some(p) if prefixed_counts[p.as_str()] == 1 && !taken.contains(p) => p.clone(),
            Some(p) => with_hash(p, server, name),
        };
        // Two hashes alike: astronomically rare, but the names must stay unique.
        let mut n = 2;
        while used.contains(&exposed) || (prefixed[i].is_some() && taken.contains(&exposed)) {
            let suffix = format!("_{n}");
            let cut: String = exposed.chars().take(MAX_NAME - suffix.len()).collect();
            exposed = format!("{cut}{suffix}");
            n += 1;
        }
        used.insert(exposed.clone());
        out.push(exposed);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUILTINS: &[&str] = &["bash", "read_file"];

    fn names(tools: &[(&str, &str)]) -> Vec<String> {
        exposed_names(BUILTINS, tools)
    }

    fn valid(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn names_the_model_sees() {
        let long = "x".repeat(70);
        let long2 = format!("{}y", "x".repeat(69));
        let long_server = "s".repeat(64);
        type Case<'a> = (Vec<(&'a str, &'a str)>, Vec<&'a str>);
        let cases: Vec<Case> = vec![
            // clean names stay; a clash between servers prefixes both
            (
                vec![("a", "echo"), ("b", "echo"), ("a", "only"), ("b", "x")],
                vec!["a__echo", "b__echo", "only", "x"],
            ),
            // what providers refuse is replaced
            (
                vec![
                    ("a", "get.weather"),
                    ("a", "with space"),
                    ("a", "a/b"),
                    ("a", "météo"),
                ],
                vec!["get_weather", "with_space", "a_b", "m_t_o"],
            ),
            // empty, and over 64
            (vec![("a", ""), ("a", &long)], vec!["tool", &long[..64]]),
            // two long names alike in their first 64: prefixed, then hashed
            (
                vec![("a", &long), ("a", &long2)],
                vec![
                    "a__xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_9ac95411",
                    "a__xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_cdd9ba30",
                ],
            ),
            // a sanitized name never takes a real name: both prefixed
            (
                vec![("a", "get_weather"), ("b", "get.weather")],
                vec!["a__get_weather", "b__get_weather"],
            ),
            // exactly a builtin's name replaces it; made one by sanitizing does not
            (
                vec![("a", "read_file"), ("b", "bash!")],
                vec!["read_file", "bash_"],
            ),
            (vec![("a", "read.file")], vec!["a__read_file"]),
            // a prefixed name that a real tool already has gets the hash
            (
                vec![("a", "echo"), ("a", "b__echo"), ("b", "echo")],
                vec!["a__echo", "b__echo", "b__echo_dd1bd75c"],
            ),
            // the server name counts toward the 64
            (
                vec![(&long_server, "t"), ("b", "t")],
                vec![
                    "ssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss",
                    "b__t",
                ],
            ),
        ];
        for (tools, expected) in cases {
            let got = names(&tools);
            assert_eq!(got, expected, "{tools:?}");
            let unique: HashSet<&String> = got.iter().collect();
            assert_eq!(unique.len(), got.len(), "{got:?}");
            for name in &got {
                assert!(valid(name), "{name:?}");
            }
        }
    }

    #[test]
    fn names_are_valid_unique_and_stable_whatever_the_servers_send() {
        // A seeded mess: names made of a few troublesome pieces, across three servers.
        let pieces = [
            "echo",
            ".",
            " ",
            "é",
            "read_file",
            "bash",
            "__",
            "x",
            "/",
            "",
        ];
        let mut rng = 7u64;
        let mut next = move || {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (rng >> 33) as usize
        };
        let mut tools: Vec<(String, String)> = Vec::new();
        for _ in 0..500 {
            let server = ["a", "b", "a__echo"][next() % 3].to_owned();
            let name: String = (0..next() % 6)
                .map(|_| pieces[next() % pieces.len()])
                .collect();
            let name = if next() % 10 == 0 {
                name.repeat(20)
            } else {
                name
            };
            tools.push((server, name));
        }
        // One server lists a name once (duplicates are skipped before this).
        let mut seen = HashSet::new();
        tools.retain(|t| seen.insert(t.clone()));
        let pairs: Vec<(&str, &str)> = tools
            .iter()
            .map(|(s, n)| (s.as_str(), n.as_str()))
            .collect();
        let got = names(&pairs);
        let unique: HashSet<&String> = got.iter().collect();
        assert_eq!(unique.len(), got.len());
        for (name, (_, original)) in got.iter().zip(&pairs) {
            assert!(valid(name), "{name:?}");
            assert!(
                !BUILTINS.contains(&name.as_str()) || name == original,
                "{original:?} took the builtin {name:?}"
            );
        }
        assert_eq!(names(&pairs), got, "the same input gives the same names");
    }
}
