// A small, safe Markdown renderer for model text.
//
// Safety comes first and from one rule: every character of the input is HTML-escaped
// before any markup is produced, and the only markup produced is the fixed set of tags
// below. Links are made only for http(s) URLs. The result is therefore safe to assign to
// innerHTML. What it understands: paragraphs, ``` code fences, `inline code`, **bold**,
// *italic* / _italic_, [links](https://...), bare https:// URLs, - / * / 1. lists,
// # headings, > quotes. Anything else stays as (escaped) text.

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Escapes the five characters that matter in HTML text and attribute values. */
export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/** Renders Markdown `source` as an HTML string (escaped; see the module comment). */
export function renderMarkdown(source) {
  const lines = String(source).replace(/\r\n?/g, "\n").split("\n");
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = /^\s*(```|~~~)(.*)$/.exec(line);
    if (fence) {
      const body = [];
      i += 1;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i += 1; // the closing fence (or the end of an unfinished, still streaming one)
      const name = fence[2].trim();
      const lang = /^[\w+#.-]+$/.test(name) ? ` data-lang="${name}"` : "";
      out.push(`<pre><code${lang}>${escapeHtml(body.join("\n"))}</code></pre>`);
      continue;
    }
    if (line.trim() === "") {
      i += 1;
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      const level = heading[1].length;
      out.push(`<h${level}>${inline(heading[2].replace(/\s+#+\s*$/, ""))}</h${level}>`);
      i += 1;
      continue;
    }
    if (/^\s*>/.test(line)) {
      const quoted = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) quoted.push(lines[i++].replace(/^\s*>\s?/, ""));
      out.push(`<blockquote>${renderMarkdown(quoted.join("\n"))}</blockquote>`);
      continue;
    }
    const item = listItem(line);
    if (item) {
      const items = [];
      while (i < lines.length && listItem(lines[i])?.ordered === item.ordered) {
        let text = listItem(lines[i]).text;
        i += 1;
        // Continuation lines: indented, not a new item, not blank.
        while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !listItem(lines[i])) text += " " + lines[i++].trim();
        items.push(`<li>${inline(text)}</li>`);
      }
      const tag = item.ordered ? "ol" : "ul";
      out.push(`<${tag}>${items.join("")}</${tag}>`);
      continue;
    }
    const para = [];
    while (i < lines.length && lines[i].trim() !== "" && !startsBlock(lines[i])) para.push(lines[i++]);
    if (para.length === 0) para.push(lines[i++]); // a line startsBlock claims but no rule took
    out.push(`<p>${para.map(inline).join("<br>")}</p>`);
  }
  return out.join("\n");
}

function listItem(line) {
  const m = /^\s*(?:([-*+])|(\d{1,9})[.)])\s+(.*)$/.exec(line);
  return m ? { ordered: m[2] !== undefined, text: m[3] } : null;
}

function startsBlock(line) {
  return /^\s*(```|~~~)/.test(line) || /^#{1,6}\s/.test(line) || /^\s*>/.test(line) || listItem(line) !== null;
}

/** Inline markup of one line: code spans first (their content is never formatted). */
function inline(text) {
  const parts = String(text).split(/(`+[^`]*?`+)/);
  return parts
    .map((part, index) => {
      if (index % 2 === 1) {
        const code = part.replace(/^`+|`+$/g, "");
        return `<code>${escapeHtml(code)}</code>`;
      }
      return emphasis(links(escapeHtml(part)));
    })
    .join("");
}

// Works on escaped text: a URL can hold no quote or angle bracket any more, so it is safe
// inside a double-quoted attribute; only http(s) URLs become links.
function links(escaped) {
  return escaped.replace(
    /\[([^\]]+)\]\((https?:\/\/[^\s)]+)\)|(^|[\s(])(https?:\/\/[^\s<)]+[^\s<).,;:!?])/g,
    (whole, label, url, lead, bare) => {
      if (label !== undefined) return anchor(url, label);
      return `${lead}${anchor(bare, bare)}`;
    },
  );
}

function anchor(url, label) {
  return `<a href="${url}" target="_blank" rel="noopener noreferrer">${label}</a>`;
}

function emphasis(html) {
  // Leave the inside of tags made by links() alone: split on them.
  return html
    .split(/(<[^>]+>)/)
    .map((piece, index) =>
      index % 2 === 1
        ? piece
        : piece
            .replace(/\*\*(?=\S)([^*]+?)\*\*/g, "<strong>$1</strong>")
            .replace(/__(?=\S)([^_]+?)__/g, "<strong>$1</strong>")
            .replace(/(^|[^\w*])\*(?=\S)([^*]+?)\*(?!\w)/g, "$1<em>$2</em>")
            .replace(/(^|[^\w_])_(?=\S)([^_]+?)_(?!\w)/g, "$1<em>$2</em>"),
    )
    .join("");
}
