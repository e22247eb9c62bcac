//! From a command line to the simple commands bash will run, with bash's own grammar.
//!
//! The line is parsed by the tree-sitter bash grammar; this module walks the tree and
//! returns every simple command it finds (also inside substitutions, groups, loops and
//! function bodies), each word either known exactly (after quote removal) or only known at
//! run time, and the list of reasons the line is not *plain*. Plain means: simple commands
//! of words and quoted strings, joined by `|`, `&&`, `||`, `;` and newlines, with file
//! redirections; the only expansions are `$NAME`, `${NAME}`, globs and a leading `~`.
//! Everything else (substitutions, arithmetic, other parameter expansions, heredocs,
//! groups, loops, functions, background jobs, control characters, anything the grammar
//! could not parse) is reported, never guessed: the policy asks for it every time.
//!
//! The grammar is an approximation of bash too, so words are not taken from the tree as
//! they are: each word's source text is lexed again here with bash's quoting rules, and
//! text the tree skipped over must be blank. Where the two could disagree, the line is
//! not plain. Pure: it runs nothing and reads no file.

use std::cell::RefCell;
use std::collections::HashSet;

use tree_sitter::{Node, Parser};

use super::lex::lex_word;

/// How deep substitutions, groups and `bash -c` scripts are followed before giving up.
pub(super) const MAX_NESTING: usize = 64;

/// A word of a command.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Word {
    /// Known exactly: the value after quote removal.
    Literal(String),
    /// Only known when the command runs (`$HOME`, `*.rs`, `~/x`, `$(date)`); `text` is the
    /// source text. `splits`: may become any number of words (unquoted expansions and globs).
    Runtime { text: String, splits: bool },
}

impl Word {
    /// The value if known, else the source text.
    pub fn shown(&self) -> &str {
        match self {
            Word::Literal(v) => v,
            Word::Runtime { text, .. } => text,
        }
    }

    pub fn literal(&self) -> Option<&str> {
        match self {
            Word::Literal(v) => Some(v),
            Word::Runtime { .. } => None,
        }
    }

    pub fn is_runtime(&self) -> bool {
        matches!(self, Word::Runtime { .. })
    }
}

/// One simple command found in the line, or one file redirection.
#[derive(Debug, Clone)]
pub(super) struct RawCommand {
    /// Its source text.
    pub text: String,
    /// Leading assignments (`NAME=value`), the program and its arguments. For a
    /// redirection: the operator and the target (none for a close, `2>&-`).
    pub words: Vec<Word>,
    /// For a redirection: the descriptor written before its operator.
    pub redirect: Option<Descriptor>,
    /// How many substitutions (`$(..)`, backticks, `<(..)`) it sits in.
    pub depth: usize,
    /// The pipelines it is a stage of: (pipeline id, stage index).
    pub pipes: Vec<(usize, usize)>,
    /// How many scripts or spawning commands (`bash -c`, `sudo`, `xargs`) it sits in.
    pub nesting: usize,
}

/// The descriptor written before a redirection's operator (`2>`, `3<`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Descriptor {
    /// None written: the operator's own (0 for `<`, 1 for `>`).
    Default,
    Number(u32),
    /// Written, but not a number the checker reads.
    Unknown,
}

/// What the walk found.
#[derive(Debug, Default)]
pub(super) struct Script {
    pub commands: Vec<RawCommand>,
    /// Why the line is not plain, in the order found (empty: plain).
    pub unclear: Vec<String>,
    /// The grammar could not parse (part of) the line.
    pub parse_error: bool,
    /// A function that calls itself in a pipeline or in the background.
    pub fork_bomb: bool,
    /// Pipeline ids handed out so far (unique across the scripts of one line).
    next_pipeline: usize,
    /// The reasons in `unclear`, to keep them distinct without a scan per reason (a line
    /// can hold thousands of distinct ones).
    seen: HashSet<String>,
}

impl Script {
    pub(super) fn unclear(&mut self, reason: impl Into<String>) {
        let reason = reason.into();
        if self.seen.insert(reason.clone()) {
            self.unclear.push(reason);
        }
    }
}

thread_local! {
    /// A tree-sitter parser is not `Sync`; one per thread, made on first use.
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// Parses `source` with the bash grammar; `None` if the parser could not be made or gave up.
fn parse_tree(source: &str) -> Option<tree_sitter::Tree> {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .ok()?;
            *slot = Some(parser);
        }
        slot.as_mut()?.parse(source, None)
    })
}

/// Walks `source` into `script`, one substitution level `depth` deep and `nesting` levels
/// of scripts (`bash -c`) in.
pub(super) fn parse_into(script: &mut Script, source: &str, depth: usize, nesting: usize) {
    if let Some(c) = source.chars().find(|c| is_control(*c)) {
        script.unclear(format!(
            "contains the control character {}",
            super::display::escape_char(c)
        ));
    }
    let Some(tree) = parse_tree(source) else {
        script.parse_error = true;
        script.unclear("could not parse the command");
        return;
    };
    let root = tree.root_node();
    if root.has_error() {
        script.parse_error = true;
        script.unclear("could not parse the command as bash");
    }
    check_gaps(script, root, source);
    let mut walk = Walk {
        src: source,
        script,
        depth,
        nesting: 0,
        script_nesting: nesting,
    };
    walk.statement(root);
}

/// A character bash and the grammar may read differently, or a display may hide.
pub(super) fn is_control(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || super::display::is_invisible(c)
}

/// The text between the tree's tokens must be blank: what the grammar skipped, bash may
/// not. A backslash-newline (line continuation) is blank only after a blank, where
/// removing it cannot join two words.
fn check_gaps(script: &mut Script, root: Node, src: &str) {
    let mut leaves = Vec::new();
    collect_leaves(root, &mut leaves);
    check_glued_redirections(script, &leaves, src);
    let mut at = 0;
    let mut ok = true;
    for (start, end, _) in leaves
        .iter()
        .copied()
        .chain([(src.len(), src.len(), false)])
    {
        if start > at {
            ok &= blank_gap(src, at, start);
        }
        at = at.max(end);
    }
    if !ok {
        script.unclear("has text the parser skipped (e.g. a line continuation inside a word)");
    }
}

/// The byte ranges of the tree's leaves, in order, each with whether it is a redirection's
/// descriptor (iteratively: trees may be deep).
fn collect_leaves(root: Node, out: &mut Vec<(usize, usize, bool)>) {
    for node in preorder(root) {
        if node.child_count() == 0 {
            let descriptor = node.kind() == "file_descriptor";
            out.push((node.start_byte(), node.end_byte(), descriptor));
        }
    }
}

/// A redirection operator glued to the token before it, where bash reads more than the
/// grammar may: `{NAME}>FILE` and `{NAME[SUBSCRIPT]}>FILE` are named descriptors to bash
/// (it opens one into NAME, and evaluates SUBSCRIPT as arithmetic, which can run commands
/// through `$_` or a substitution), and `N>FILE` with N a number is descriptor N even where
/// the grammar takes N for an argument (`ls 1<f`). Looked at on the tokens, whatever tree
/// the grammar built around them: any token ending in `}`, and any number the grammar did
/// not read as a descriptor, right before `<` or `>`.
fn check_glued_redirections(script: &mut Script, leaves: &[(usize, usize, bool)], src: &str) {
    for pair in leaves.windows(2) {
        let [(start, end, descriptor), (next_start, next_end, _)] = *pair else {
            continue;
        };
        let next = src.get(next_start..next_end).unwrap_or("");
        if next_start != end || !next.starts_with(['<', '>']) {
            continue;
        }
        let token = src.get(start..end).unwrap_or("");
        let separated = src
            .get(..start)
            .is_none_or(|before| before.is_empty() || before.ends_with(is_separator));
        if token.ends_with('}') {
            script.unclear(
                "has a word ending in } right before a redirection, which bash may read as a \
                 named descriptor {NAME}> (its subscript can run commands)",
            );
        } else if !descriptor
            && separated
            && !token.is_empty()
            && token.bytes().all(|b| b.is_ascii_digit())
        {
            script.unclear(format!(
                "has a descriptor number the parser did not read as one ({token}{next})"
            ));
        }
    }
}

/// Characters after which bash starts a new token.
fn is_separator(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>'
    )
}

/// Every node under `root` (itself included), in document order, without recursion.
fn preorder(root: Node) -> impl Iterator<Item = Node> {
    let mut cursor = root.walk();
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let node = cursor.node();
        if !cursor.goto_first_child() {
            while !cursor.goto_next_sibling() {
                if !cursor.goto_parent() || cursor.node() == root {
                    done = true;
                    break;
                }
            }
        }
        Some(node)
    })
}

fn blank_gap(src: &str, start: usize, end: usize) -> bool {
    let Some(gap) = src.get(start..end) else {
        return false;
    };
    let bytes = gap.as_bytes();
    let mut k = 0;
    while k < bytes.len() {
        match bytes[k] {
            b' ' | b'\t' | b'\n' => k += 1,
            b'\\' if bytes.get(k + 1) == Some(&b'\n') => {
                let before = if k == 0 {
                    src.as_bytes().get(start.wrapping_sub(1)).copied()
                } else {
                    Some(bytes[k - 1])
                };
                if !matches!(before, Some(b' ' | b'\t') | None) || start + k == 0 {
                    return false;
                }
                k += 2;
            }
            _ => return false,
        }
    }
    true
}

struct Walk<'s, 'a> {
    src: &'s str,
    script: &'a mut Script,
    depth: usize,
    nesting: usize,
    /// The `nesting` the script started at (given to its commands).
    script_nesting: usize,
}

/// Node kinds that hold words (arguments, values, targets).
const WORD_KINDS: &[&str] = &[
    "word",
    "string",
    "raw_string",
    "concatenation",
    "simple_expansion",
    "expansion",
    "number",
    "command_substitution",
    "process_substitution",
    "arithmetic_expansion",
    "ansi_c_string",
    "translated_string",
    "brace_expression",
];

impl Walk<'_, '_> {
    fn text(&self, node: Node) -> &str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    /// Runs `f` one level deeper, or reports the line as too deep.
    fn deeper(&mut self, f: impl FnOnce(&mut Self)) {
        if self.nesting >= MAX_NESTING {
            self.script.unclear("is nested too deeply");
            return;
        }
        self.nesting += 1;
        f(self);
        self.nesting -= 1;
    }

    fn statement(&mut self, node: Node) {
        self.deeper(|w| w.statement_here(node));
    }

    fn statement_here(&mut self, node: Node) {
        match node.kind() {
            "program" => self.sequence(node),
            "list" => {
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    match child.kind() {
                        "&&" | "||" | "comment" => {}
                        _ if child.is_named() => self.statement(child),
                        other => self.script.unclear(format!("uses `{other}`")),
                    }
                }
            }
            "pipeline" => self.pipeline(node),
            "command" => self.command(node),
            "redirected_statement" => {
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    match child.kind() {
                        "file_redirect" | "heredoc_redirect" | "herestring_redirect" => {
                            self.redirect(child);
                        }
                        _ if child.is_named() => self.statement(child),
                        _ => {}
                    }
                }
            }
            "variable_assignment" => {
                let first = self.script.commands.len();
                let word = self.assignment(node);
                self.insert_command(first, node, vec![word]);
            }
            "comment" => {}
            "function_definition" => {
                self.script.unclear("defines a function");
                self.function(node);
            }
            "test_command" if node.child(0).is_some_and(|c| c.kind() == "[") => {
                self.bracket_test(node);
            }
            kind if WORD_KINDS.contains(&kind) => {
                // A bare word where a statement was expected (inside loops and tests).
                let _ = self.word(node);
            }
            kind => {
                self.script.unclear(construct_reason(kind));
                let mut cursor = node.walk();
                let children: Vec<Node> = node.named_children(&mut cursor).collect();
                for child in children {
                    self.statement(child);
                }
            }
        }
    }

    /// Statements separated by `;`, `&` or newlines.
    fn sequence(&mut self, node: Node) {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            match child.kind() {
                ";" | "\n" | "comment" => {}
                "&" => self.script.unclear("runs a command in the background (&)"),
                _ if child.is_named() => self.statement(child),
                other => self.script.unclear(format!("uses `{other}`")),
            }
        }
    }

    fn pipeline(&mut self, node: Node) {
        let id = self.script.next_pipeline;
        self.script.next_pipeline += 1;
        let mut stage = 0;
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            match child.kind() {
                "|" | "|&" => stage += 1,
                _ if child.is_named() => {
                    let first = self.script.commands.len();
                    self.statement(child);
                    for command in &mut self.script.commands[first..] {
                        command.pipes.push((id, stage));
                    }
                }
                other => self.script.unclear(format!("uses `{other}`")),
            }
        }
    }

    fn command(&mut self, node: Node) {
        let first = self.script.commands.len();
        let mut words = Vec::new();
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            match child.kind() {
                "variable_assignment" => words.push(self.assignment(child)),
                "command_name" => {
                    let mut inner = child.walk();
                    let named: Vec<Node> = child.named_children(&mut inner).collect();
                    match named.as_slice() {
                        [only] => words.push(self.word(*only)),
                        _ => {
                            self.script.unclear("has a command name the parser split");
                            words.push(self.word(child));
                        }
                    }
                }
                "file_redirect" | "heredoc_redirect" | "herestring_redirect" => {
                    self.redirect(child);
                }
                "comment" => {}
                kind if WORD_KINDS.contains(&kind) => words.push(self.word(child)),
                kind if child.is_named() => {
                    self.script.unclear(construct_reason(kind));
                    words.push(self.word(child));
                }
                "$" => self.script.unclear(construct_reason("translated_string")),
                other => self.script.unclear(format!("uses `{other}`")),
            }
        }
        if !words.is_empty() {
            self.insert_command(first, node, words);
        }
    }

    /// Adds a command before the commands found inside it (its substitutions), so parts
    /// read in the order a person reads the line.
    fn insert_command(&mut self, at: usize, node: Node, words: Vec<Word>) {
        let command = self.raw_command(node, words, None);
        let at = at.min(self.script.commands.len());
        self.script.commands.insert(at, command);
    }

    fn push_command(&mut self, node: Node, words: Vec<Word>, redirect: Option<Descriptor>) {
        let command = self.raw_command(node, words, redirect);
        self.script.commands.push(command);
    }

    fn raw_command(
        &self,
        node: Node,
        words: Vec<Word>,
        redirect: Option<Descriptor>,
    ) -> RawCommand {
        RawCommand {
            text: self.text(node).trim().to_owned(),
            words,
            redirect,
            depth: self.depth,
            pipes: Vec::new(),
            nesting: self.script_nesting,
        }
    }

    /// `NAME=value`: known when the value is known. Bash neither splits nor globs an
    /// assignment's value, so a runtime value is one word.
    fn assignment(&mut self, node: Node) -> Word {
        let text = self.text(node).to_owned();
        let Some(name) = node.child_by_field_name("name") else {
            self.script
                .unclear("has an assignment the parser could not read");
            return Word::Runtime {
                text,
                splits: false,
            };
        };
        if name.kind() != "variable_name" {
            self.script
                .unclear("assigns to an array element or a computed name");
            self.nested_in(node);
            return Word::Runtime {
                text,
                splits: false,
            };
        }
        let after_name = name.end_byte().saturating_sub(node.start_byte());
        let operator = if text
            .get(after_name..)
            .is_some_and(|rest| rest.starts_with("+="))
        {
            "+="
        } else {
            "="
        };
        let value = node.child_by_field_name("value");
        match value.map(|v| (v.kind(), v)) {
            None => Word::Literal(format!("{}{operator}", self.text(name))),
            Some(("array", v)) => {
                self.script.unclear("assigns an array");
                self.nested_in(v);
                Word::Runtime {
                    text,
                    splits: false,
                }
            }
            Some((_, v)) => match self.word(v) {
                Word::Literal(value) => {
                    Word::Literal(format!("{}{operator}{value}", self.text(name)))
                }
                Word::Runtime { .. } => Word::Runtime {
                    text,
                    splits: false,
                },
            },
        }
    }

    /// A word node: lexed from its source text (a substitution, arithmetic or special
    /// quoting is a word only known at run time), nested substitutions walked.
    fn word(&mut self, node: Node) -> Word {
        let text = self.text(node).to_owned();
        let word = match node.kind() {
            kind @ ("command_substitution"
            | "process_substitution"
            | "arithmetic_expansion"
            | "ansi_c_string"
            | "translated_string"
            | "brace_expression") => {
                self.script.unclear(construct_reason(kind));
                Word::Runtime { text, splits: true }
            }
            _ => {
                let (word, reason) = lex_word(&text);
                if let Some(reason) = reason {
                    self.script.unclear(reason);
                }
                word
            }
        };
        self.substitutions(node);
        word
    }

    /// Walks the commands of `node` if it is a substitution, else of every substitution
    /// inside it.
    fn substitutions(&mut self, node: Node) {
        match node.kind() {
            kind @ ("command_substitution" | "process_substitution") => {
                self.script.unclear(construct_reason(kind));
                let mut inner = node.walk();
                let statements: Vec<Node> = node.named_children(&mut inner).collect();
                self.depth += 1;
                for statement in statements {
                    self.statement(statement);
                }
                self.depth -= 1;
            }
            _ => self.nested_in(node),
        }
    }

    /// Walks the commands of every substitution inside `node`.
    fn nested_in(&mut self, node: Node) {
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        self.deeper(|w| {
            for child in children {
                w.substitutions(child);
            }
        });
    }

    /// `[ EXPR ]`: the `[` builtin with the expression's words.
    fn bracket_test(&mut self, node: Node) {
        let first = self.script.commands.len();
        let mut words = vec![Word::Literal("[".into())];
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        for child in children.iter().skip(1) {
            self.test_words(*child, &mut words);
        }
        if words.last().and_then(Word::literal) != Some("]") {
            self.script
                .unclear("has a [ test the parser could not read");
        }
        self.insert_command(first, node, words);
    }

    fn test_words(&mut self, node: Node, words: &mut Vec<Word>) {
        if WORD_KINDS.contains(&node.kind()) || node.kind() == "test_operator" || !node.is_named() {
            if node.kind() == "test_operator" || !node.is_named() {
                words.push(Word::Literal(self.text(node).to_owned()));
            } else {
                let word = self.word(node);
                words.push(word);
            }
            return;
        }
        match node.kind() {
            "unary_expression" | "binary_expression" | "parenthesized_expression" => {
                let mut cursor = node.walk();
                let children: Vec<Node> = node.children(&mut cursor).collect();
                self.deeper(|w| {
                    for child in children {
                        w.test_words(child, words);
                    }
                });
            }
            kind => {
                self.script.unclear(construct_reason(kind));
                self.nested_in(node);
            }
        }
    }

    fn redirect(&mut self, node: Node) {
        match node.kind() {
            "heredoc_redirect" => {
                self.script.unclear("uses a heredoc");
                self.nested_in(node);
                return;
            }
            "herestring_redirect" => {
                self.script.unclear("uses a here-string (<<<)");
                self.nested_in(node);
                return;
            }
            _ => {}
        }
        let mut operator = String::new();
        let mut descriptor = Descriptor::Default;
        let mut targets = Vec::new();
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            match child.kind() {
                "file_descriptor" => {
                    descriptor = self
                        .text(child)
                        .parse()
                        .map_or(Descriptor::Unknown, Descriptor::Number);
                }
                kind if WORD_KINDS.contains(&kind) => targets.push(self.word(child)),
                kind if !child.is_named() => operator.push_str(kind),
                // The grammar does not know `<>` (open for reading and writing).
                "ERROR" if operator == "<" && self.text(child) == ">" => operator.push('>'),
                kind => {
                    self.script.unclear(construct_reason(kind));
                    targets.push(self.word(child));
                }
            }
        }
        let closes = matches!(operator.as_str(), "<&-" | ">&-");
        if targets.len() > 1 || (targets.is_empty() && !closes) {
            // The grammar took an argument for a second target, or found none: the
            // first target is still shown and checked.
            self.script
                .unclear("has a redirection the parser could not read");
        }
        if !matches!(
            operator.as_str(),
            "<" | ">" | ">>" | ">|" | "&>" | "&>>" | "<>" | "<&" | ">&" | "<&-" | ">&-"
        ) {
            self.script
                .unclear(format!("uses the redirection `{operator}`"));
        }
        let mut words = vec![Word::Literal(operator)];
        words.extend(targets.into_iter().take(1));
        self.push_command(node, words, Some(descriptor));
    }

    /// A function definition: its body's commands are parts; a body that calls the
    /// function in a pipeline or in the background is a fork bomb.
    fn function(&mut self, node: Node) {
        let name = node
            .child_by_field_name("name")
            .map(|n| self.text(n).to_owned())
            .unwrap_or_default();
        let first = self.script.commands.len();
        let Some(body) = node.child_by_field_name("body") else {
            return;
        };
        let background = contains_token(body, "&");
        self.deeper(|w| w.statement(body));
        let calls_itself = self.script.commands[first..].iter().any(|c| {
            c.redirect.is_none()
                && c.words.first().and_then(Word::literal) == Some(name.as_str())
                && (!c.pipes.is_empty() || background)
        });
        if !name.is_empty() && calls_itself {
            self.script.fork_bomb = true;
        }
    }
}

fn contains_token(node: Node, token: &str) -> bool {
    preorder(node).any(|n| !n.is_named() && n.kind() == token)
}

/// Why a construct makes a line not plain, in words a person reads in a prompt.
fn construct_reason(kind: &str) -> String {
    let what = match kind {
        "subshell" => "a subshell ( .. )",
        "compound_statement" => "a group { .. } or an arithmetic command (( .. ))",
        "if_statement" | "elif_clause" | "else_clause" => "if",
        "while_statement" => "a while/until loop",
        "for_statement" | "c_style_for_statement" => "a for loop",
        "case_statement" | "case_item" => "case",
        "do_group" => "a loop body",
        "negated_command" => "a negated command (!)",
        "test_command" => "a [[ .. ]] test",
        "declaration_command" => "a declaration (export, declare, local, readonly)",
        "unset_command" => "unset",
        "arithmetic_expansion" => "arithmetic $(( .. ))",
        "command_substitution" => "a command substitution $(..)",
        "process_substitution" => "a process substitution <(..)",
        "ansi_c_string" => "ANSI-C quoting $'..'",
        "translated_string" => "locale quoting $\"..\"",
        "brace_expression" => "a brace expansion",
        "array" => "an array",
        "ERROR" => return "could not parse the command as bash".to_owned(),
        other => return format!("uses a shell construct the checker does not follow ({other})"),
    };
    format!("uses {what}")
}
