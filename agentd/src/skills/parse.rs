//! `SKILL.md` as text: the YAML front matter between `---` lines and the Markdown body
//! after it. Only `name` and `description` are read, as plain, quoted or block scalars;
//! every other key (and whatever is nested under it) is skipped. What is not one of those
//! shapes is refused with a reason, never guessed at. Pure: no file system.

/// A name: 1 to 64 of `a-z`, `0-9` and `-`.
pub const MAX_NAME: usize = 64;
/// Characters of a description (after its whitespace is collapsed).
pub const MAX_DESCRIPTION: usize = 1024;

/// A `SKILL.md` read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed<'a> {
    pub name: String,
    /// One line: its whitespace runs collapsed to single spaces.
    pub description: String,
    /// The Markdown after the front matter, leading blank lines left out.
    pub body: &'a str,
}

/// How a key's value is written, while its lines are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `key:` with nothing after it yet: indented lines may make it a plain scalar.
    Empty,
    /// A plain scalar: indented lines continue it.
    Plain,
    /// `|` or `>`: the indented lines are the value.
    Block,
    /// A quoted scalar, closed on its line: nothing may continue it.
    Quoted,
    /// An indented line that is not text (a list or a map) came under an empty key.
    Nested,
}

/// The value of `name` or `description` being read.
struct Field {
    shape: Shape,
    text: String,
}

/// Reads a `SKILL.md`; `Err` is the reason it cannot be used (for `listSkills`).
pub fn parse(text: &str) -> Result<Parsed<'_>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let opening = lines.next().unwrap_or_default();
    if opening.trim_end() != "---" {
        return Err(
            "no front matter: SKILL.md must begin with a line \"---\", then \
                    name: and description:, then a line \"---\""
                .into(),
        );
    }
    let mut offset = opening.len();
    let mut front: Vec<&str> = Vec::new();
    let mut closed = false;
    for line in lines {
        offset += line.len();
        let bare = line.trim_end();
        if bare == "---" || bare == "..." {
            closed = true;
            break;
        }
        front.push(line.trim_end_matches(['\n', '\r']));
    }
    if !closed {
        return Err("no front matter: the line \"---\" that ends it is missing".into());
    }
    let body = text[offset..].trim_start_matches(['\n', '\r']);
    let (name, description) = read_fields(&front)?;
    let name = name.ok_or("missing name")?;
    let description = description.ok_or("missing description")?;
    check_name(&name)?;
    let count = description.chars().count();
    if count > MAX_DESCRIPTION {
        return Err(format!(
            "description too long: {count} characters, at most {MAX_DESCRIPTION}"
        ));
    }
    Ok(Parsed {
        name,
        description,
        body,
    })
}

/// Checks a skill name: `[a-z0-9-]{1,64}`.
pub fn check_name(name: &str) -> Result<(), String> {
    let fits = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if fits {
        Ok(())
    } else {
        Err(format!(
            "invalid name {name:?}: a name is 1 to {MAX_NAME} lowercase letters, digits and \
             hyphens"
        ))
    }
}

/// `name` and `description` of the front matter's lines (`None`: absent or empty).
fn read_fields(lines: &[&str]) -> Result<(Option<String>, Option<String>), String> {
    let mut name: Option<Field> = None;
    let mut description: Option<Field> = None;
    // The field the lines being read belong to (`None`: another key's, skipped).
    let mut current: Option<&'static str> = None;
    for (index, line) in lines.iter().enumerate() {
        let number = index + 2;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            let field = match current {
                Some("name") => name.as_mut(),
                Some(_) => description.as_mut(),
                None => None,
            };
            if let (Some(key), Some(field)) = (current, field) {
                continue_field(key, field, trimmed)?;
            }
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!(
                "front matter line {number} is not \"key: value\": {}",
                excerpt(line)
            ));
        };
        let key = key.trim().trim_matches(['"', '\'']);
        if !value.is_empty() && !value.starts_with([' ', '\t']) {
            return Err(format!(
                "front matter line {number} is not \"key: value\" (a space must follow the \
                 colon): {}",
                excerpt(line)
            ));
        }
        let slot = match key {
            "name" => &mut name,
            "description" => &mut description,
            _ => {
                current = None;
                continue;
            }
        };
        if slot.is_some() {
            return Err(format!("{key} is given twice"));
        }
        current = Some(if key == "name" { "name" } else { "description" });
        *slot = Some(start_field(key, value.trim())?);
    }
    let done = |field: Option<Field>, key: &str| -> Result<Option<String>, String> {
        let Some(field) = field else {
            return Ok(None);
        };
        if field.shape == Shape::Nested {
            return Err(format!("{key} is not a string (a list or a map)"));
        }
        let text = field.text.split_whitespace().collect::<Vec<_>>().join(" ");
        Ok((!text.is_empty()).then_some(text))
    };
    Ok((done(name, "name")?, done(description, "description")?))
}

/// The value written after `key:` on its own line.
fn start_field(key: &str, value: &str) -> Result<Field, String> {
    let field = |shape, text: String| Ok(Field { shape, text });
    match value.chars().next() {
        None => field(Shape::Empty, String::new()),
        Some('"') => field(Shape::Quoted, double_quoted(key, &value[1..])?),
        Some('\'') => field(Shape::Quoted, single_quoted(key, &value[1..])?),
        Some('|' | '>') => {
            let indicator = value[1..].trim_start_matches(['-', '+', '1', '2', '3', '4', '5']);
            if !indicator.trim().is_empty() && !indicator.trim_start().starts_with('#') {
                return Err(format!(
                    "{key} is not a plain, quoted or block string: {}",
                    excerpt(value)
                ));
            }
            field(Shape::Block, String::new())
        }
        Some('[' | '{') => Err(format!("{key} is not a string (a list or a map)")),
        Some('&' | '*' | '!' | '@' | '`' | '%') => Err(format!(
            "{key} is not a plain or quoted string (anchors, aliases and tags are not read): {}",
            excerpt(value)
        )),
        Some(_) => field(Shape::Plain, strip_comment(value).to_owned()),
    }
}

/// An indented line under `key`.
fn continue_field(key: &str, field: &mut Field, line: &str) -> Result<(), String> {
    match field.shape {
        Shape::Empty if line.starts_with("- ") || line == "-" || looks_like_key(line) => {
            field.shape = Shape::Nested;
        }
        Shape::Empty | Shape::Plain => {
            field.shape = Shape::Plain;
            field.text.push(' ');
            field.text.push_str(strip_comment(line));
        }
        Shape::Block => {
            field.text.push(' ');
            field.text.push_str(line);
        }
        Shape::Quoted => {
            return Err(format!(
                "{key}: an indented line follows its quoted value (a quoted value must end \
                 on its line)"
            ));
        }
        Shape::Nested => {}
    }
    Ok(())
}

/// Whether an indented line is a `key: value` of a nested map.
fn looks_like_key(line: &str) -> bool {
    line.split_once(':').is_some_and(|(key, rest)| {
        !key.contains(' ') && (rest.is_empty() || rest.starts_with([' ', '\t']))
    })
}

/// A plain scalar without its trailing ` # comment`.
fn strip_comment(value: &str) -> &str {
    match value.find(" #").or_else(|| value.find("\t#")) {
        Some(at) => value[..at].trim_end(),
        None => value.trim_end(),
    }
}

/// The rest of a line that must hold nothing after a closing quote but a comment.
fn after_quote(key: &str, rest: &str) -> Result<(), String> {
    let rest = rest.trim_start();
    if rest.is_empty() || rest.starts_with('#') {
        Ok(())
    } else {
        Err(format!(
            "{key}: text after the closing quote: {}",
            excerpt(rest)
        ))
    }
}

/// A double-quoted scalar's text, from after its opening quote.
fn double_quoted(key: &str, rest: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = rest.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => {
                after_quote(key, &rest[at + 1..])?;
                return Ok(out);
            }
            '\\' => match chars.next().map(|(_, e)| e) {
                Some('"') => out.push('"'),
                Some('\\') => out.push('\\'),
                Some('/') => out.push('/'),
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some(other) => {
                    return Err(format!(
                        "{key}: the escape \\{other} is not read (use \\\" \\\\ \\n \\t, or \
                         single quotes)"
                    ));
                }
                None => break,
            },
            c => out.push(c),
        }
    }
    Err(format!(
        "{key}: the closing \" is missing (a quoted value must end on its line)"
    ))
}

/// A single-quoted scalar's text (`''` is a quote), from after its opening quote.
fn single_quoted(key: &str, rest: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = rest.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c != '\'' {
            out.push(c);
            continue;
        }
        if chars.peek().is_some_and(|(_, next)| *next == '\'') {
            chars.next();
            out.push('\'');
            continue;
        }
        after_quote(key, &rest[at + 1..])?;
        return Ok(out);
    }
    Err(format!(
        "{key}: the closing ' is missing (a quoted value must end on its line)"
    ))
}

/// The start of a line, for a reason.
fn excerpt(line: &str) -> String {
    let line = line.trim();
    let cut: String = line.chars().take(60).collect();
    if cut.len() < line.len() {
        format!("{cut:?}...")
    } else {
        format!("{cut:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_is_read_or_refused_with_a_reason() {
        // (SKILL.md, Ok((name, description, body)) or Err(start of the reason))
        type Case = (
            &'static str,
            Result<(&'static str, &'static str, &'static str), &'static str>,
        );
        let cases: Vec<Case> = vec![
            (
                "---\nname: pdf\ndescription: Fill PDF forms.\n---\n# PDF\nStep 1.\n",
                Ok(("pdf", "Fill PDF forms.", "# PDF\nStep 1.\n")),
            ),
            // CRLF, a BOM, blank lines before the body, `...` closing, comments.
            (
                "\u{feff}---\r\n# a comment\r\nname: a-1\r\ndescription: x # note\r\n...\r\n\r\nbody",
                Ok(("a-1", "x", "body")),
            ),
            // Quoted values, other keys (nested ones too) skipped.
            (
                "---\nlicense: MIT\nmetadata:\n  name: nested\n  tags: [a, b]\nname: \"q\"\nallowed-tools:\n  - bash\ndescription: 'It''s \"here\": yes'\n---\n",
                Ok(("q", "It's \"here\": yes", "")),
            ),
            (
                "---\nname: e\ndescription: \"tab\\tand \\\"quote\\\" and \\\\\"\n---\nb",
                Ok(("e", "tab and \"quote\" and \\", "b")),
            ),
            // A plain value continued on indented lines, and one on the next line.
            (
                "---\nname: m\ndescription: Use this\n  when the user\n  asks.\n---\n",
                Ok(("m", "Use this when the user asks.", "")),
            ),
            (
                "---\nname:\n  late\ndescription:\n  on the next line\n---\n",
                Ok(("late", "on the next line", "")),
            ),
            // Block scalars become one line.
            (
                "---\nname: b\ndescription: >-\n  Folded\n  text.\n---\n",
                Ok(("b", "Folded text.", "")),
            ),
            (
                "---\nname: b\ndescription: |\n  Line one\n  line two\n---\n",
                Ok(("b", "Line one line two", "")),
            ),
            // A colon inside a plain value is text.
            (
                "---\nname: c\ndescription: Use when: the user asks\n---\n",
                Ok(("c", "Use when: the user asks", "")),
            ),
            (
                "# Title\nname: x\n",
                Err("no front matter: SKILL.md must begin"),
            ),
            ("", Err("no front matter: SKILL.md must begin")),
            (
                "---\nname: x\ndescription: y\n",
                Err("no front matter: the line"),
            ),
            ("---\ndescription: y\n---\n", Err("missing name")),
            ("---\nname: x\n---\n", Err("missing description")),
            (
                "---\nname: x\ndescription: \"\"\n---\n",
                Err("missing description"),
            ),
            (
                "---\nname: x\ndescription:\n---\n",
                Err("missing description"),
            ),
            (
                "---\nname: Big_Name\ndescription: y\n---\n",
                Err("invalid name \"Big_Name\""),
            ),
            (
                "---\nname: \"\"\ndescription: y\n---\n",
                Err("missing name"),
            ),
            (
                "---\nname: a b\ndescription: y\n---\n",
                Err("invalid name \"a b\""),
            ),
            (
                "---\nname: x\nname: z\ndescription: y\n---\n",
                Err("name is given twice"),
            ),
            (
                "---\nname: x\ndescription: [a, b]\n---\n",
                Err("description is not a string"),
            ),
            (
                "---\nname: x\ndescription:\n  - a\n  - b\n---\n",
                Err("description is not a string"),
            ),
            (
                "---\nname: x\ndescription:\n  k: v\n---\n",
                Err("description is not a string"),
            ),
            (
                "---\nname: *alias\ndescription: y\n---\n",
                Err("name is not a plain or quoted"),
            ),
            (
                "---\nname: x\ndescription: \"open\n---\n",
                Err("description: the closing \" is missing"),
            ),
            (
                "---\nname: x\ndescription: 'open\n---\n",
                Err("description: the closing ' is missing"),
            ),
            (
                "---\nname: x\ndescription: \"a\" b\n---\n",
                Err("description: text after the closing"),
            ),
            (
                "---\nname: x\ndescription: \"a\\q\"\n---\n",
                Err("description: the escape \\q"),
            ),
            (
                "---\nname: x\ndescription: \"a\"\n  more\n---\n",
                Err("description: an indented line follows"),
            ),
            (
                "---\nname: x\njust words\n---\n",
                Err("front matter line 3 is not"),
            ),
            (
                "---\nname:x\ndescription: y\n---\n",
                Err("front matter line 2 is not"),
            ),
        ];
        for (text, expected) in cases {
            match (parse(text), expected) {
                (Ok(got), Ok((name, description, body))) => {
                    assert_eq!(
                        (got.name.as_str(), got.description.as_str(), got.body),
                        (name, description, body),
                        "{text:?}"
                    );
                }
                (Err(got), Err(start)) => assert!(got.starts_with(start), "{text:?}: {got}"),
                (got, expected) => panic!("{text:?}: got {got:?}, expected {expected:?}"),
            }
        }
    }

    #[test]
    fn names_and_descriptions_have_limits() {
        let name = "a".repeat(MAX_NAME);
        assert!(check_name(&name).is_ok());
        assert!(check_name(&format!("{name}a")).is_err());
        assert!(check_name("ok-2").is_ok());
        for bad in ["", "A", "a_b", "é", "a.b", "a/b"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        let long = format!("---\nname: x\ndescription: {}\n---\n", "d".repeat(1025));
        assert_eq!(
            parse(&long).unwrap_err(),
            "description too long: 1025 characters, at most 1024"
        );
        let fits = format!("---\nname: x\ndescription: {}\n---\n", "d".repeat(1024));
        assert!(parse(&fits).is_ok());
    }
}
