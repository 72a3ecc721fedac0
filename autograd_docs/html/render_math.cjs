// Render TeX to SVG with MathJax at build time, so pages need no script, font or
// network to show an equation.
//
// Reads JSON from stdin: [{"tex": "...", "display": true}, ...]
// Writes JSON to stdout: {"css": "...", "html": ["<mjx-container ...>", ...]}
// An equation MathJax cannot parse comes back as {"error": "..."} in its slot.
"use strict";

const { mathjax } = require("mathjax-full/js/mathjax.js");
const { TeX } = require("mathjax-full/js/input/tex.js");
const { SVG } = require("mathjax-full/js/output/svg.js");
const { liteAdaptor } = require("mathjax-full/js/adaptors/liteAdaptor.js");
const { RegisterHTMLHandler } = require("mathjax-full/js/handlers/html.js");
const { AssistiveMmlHandler } = require("mathjax-full/js/a11y/assistive-mml.js");
const { AllPackages } = require("mathjax-full/js/input/tex/AllPackages.js");

const adaptor = liteAdaptor();
// Hidden MathML beside each SVG: screen readers read the equation, not a picture.
AssistiveMmlHandler(RegisterHTMLHandler(adaptor));

const tex = new TeX({
  packages: AllPackages.filter((name) => !["bussproofs", "autoload", "require"].includes(name)),
  formatError: (jax, err) => { throw err; },
});
// fontCache "local": each SVG carries the glyphs it uses once (a matrix of zeros
// holds one zero), so equations stay independent of each other and of the page.
// Each carries the number it is given ("id", its place on its page) in its glyph
// ids, so ids are unique on a page and do not depend on what else was rendered.
const svg = new SVG({ fontCache: "local" });
const doc = mathjax.document("", { InputJax: tex, OutputJax: svg });

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const html = JSON.parse(input).map(({ tex: source, display, id }) => {
    try {
      svg.options.localID = id ?? null;  // null: MathJax counts up itself
      const node = doc.convert(source, { display, em: 16, ex: 8, containerWidth: 1280 });
      return adaptor.outerHTML(node);
    } catch (err) {
      return { error: String(err.message || err) };
    }
  });
  const css = adaptor.textContent(svg.styleSheet(doc));
  process.stdout.write(JSON.stringify({ css, html }));
});
