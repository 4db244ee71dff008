// Parses Mermaid gantt charts with Mermaid itself (tests/render/test_render_burst.py): a JSON list of chart texts on
// stdin, a JSON list on stdout, per chart the tasks Mermaid read ({section, task, id, start, end}) or its error.
// Usage: node mermaid_gantt.mjs NODE_MODULES (the folder holding mermaid and jsdom; .ci/oracle installs both).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const modules = process.argv[2];
const require = createRequire(join(modules, 'noop.js'));
const { JSDOM } = require('jsdom');
const dom = new JSDOM('<!DOCTYPE html><body></body>');
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import(pathToFileURL(join(modules, 'mermaid', 'dist', 'mermaid.core.mjs')).href);

const pad = (n) => String(n).padStart(2, '0');
const local = (d) =>
  `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;

const results = [];
for (const text of JSON.parse(readFileSync(0, 'utf8'))) {
  try {
    await mermaid.parse(text);
    const diagram = await mermaid.mermaidAPI.getDiagramFromText(text);
    const tasks = diagram.db.getTasks().map((t) => ({
      section: t.section, task: t.task, id: t.id, start: local(t.startTime), end: local(t.endTime),
    }));
    results.push({ tasks });
  } catch (err) {
    results.push({ error: String(err.message || err).split('\n').slice(0, 3).join(' | ') });
  }
}
process.stdout.write(JSON.stringify(results));
