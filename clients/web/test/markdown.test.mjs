// The markdown renderer (public/markdown.js) as a table: input, the HTML it must give.
// What matters most: nothing of the input ever becomes markup but what the rules make.

import assert from "node:assert/strict";
import { test } from "node:test";

import { escapeHtml, renderMarkdown } from "../public/markdown.js";

const CASES = [
  ["plain", "Hello", "<p>Hello</p>"],
  ["html is text", "<img src=x onerror=alert(1)>", "<p>&lt;img src=x onerror=alert(1)&gt;</p>"],
  ["two paragraphs, a line break", "a\nb\n\nc", "<p>a<br>b</p>\n<p>c</p>"],
  ["bold and italic", "**b** *i* _j_ __k__", "<p><strong>b</strong> <em>i</em> <em>j</em> <strong>k</strong></p>"],
  ["no italic inside words", "snake_case_name a*b*c", "<p>snake_case_name a*b*c</p>"],
  ["inline code is not formatted", "`**x** <y>`", "<p><code>**x** &lt;y&gt;</code></p>"],
  ["a fence keeps its text", "```js\nif (a < b) { **no** }\n```", '<pre><code data-lang="js">if (a &lt; b) { **no** }</code></pre>'],
  ["an unfinished fence (still streaming)", "```\nline", "<pre><code>line</code></pre>"],
  ["a hostile fence language", '```"><script>\nx\n```', "<pre><code>x</code></pre>"],
  ["headings", "# One\n### Three ###", "<h1>One</h1>\n<h3>Three</h3>"],
  ["lists", "- a\n- b\n\n1. x\n2. y", "<ul><li>a</li><li>b</li></ul>\n<ol><li>x</li><li>y</li></ol>"],
  ["a quote", "> said\n> more", "<blockquote><p>said<br>more</p></blockquote>"],
  [
    "an https link",
    "[docs](https://example.com/a?b=1&c=2)",
    '<p><a href="https://example.com/a?b=1&amp;c=2" target="_blank" rel="noopener noreferrer">docs</a></p>',
  ],
  ["no javascript: link", "[x](javascript:alert(1))", "<p>[x](javascript:alert(1))</p>"],
  ["no data: link", "[x](data:text/html,hi)", "<p>[x](data:text/html,hi)</p>"],
  [
    "a quote cannot leave the href",
    '[x](https://e.com/"onmouseover="alert(1))',
    '<p><a href="https://e.com/&quot;onmouseover=&quot;alert(1" target="_blank" rel="noopener noreferrer">x</a>)</p>',
  ],
  [
    "a bare URL, its full stop left out",
    "see https://example.com/x_y.",
    '<p>see <a href="https://example.com/x_y" target="_blank" rel="noopener noreferrer">https://example.com/x_y</a>.</p>',
  ],
];

for (const [name, input, html] of CASES) {
  test(`markdown: ${name}`, () => {
    assert.equal(renderMarkdown(input), html);
  });
}

test("escapeHtml escapes the five characters", () => {
  assert.equal(escapeHtml(`<a href="x" title='y'>&</a>`), "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;");
});

test("no input makes a tag the rules do not make", () => {
  const allowed = new Set(["p", "br", "strong", "em", "code", "pre", "a", "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote"]);
  const nasty = ["<script>alert(1)</script>", "<<b>>", "`<i>`", "[<b>](https://x.y)", "**<u>**", "# <h1>", "- <li>", "> <q>", '"><svg onload=1>'];
  for (const input of nasty) {
    for (const [, tag] of renderMarkdown(input).matchAll(/<\/?([a-z0-9]+)/g)) {
      assert.ok(allowed.has(tag), `${JSON.stringify(input)} made a <${tag}>`);
    }
  }
});
