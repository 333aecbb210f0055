"""MkDocs hooks of the documentation site (mkdocs.yml ``hooks``).

- The home page is README.md and the changelog page CHANGELOG.md, read from the
  repository's root: their links into docs/ are made relative to the site.
- Docstrings name objects in Sphinx's roles (``:func:`main```); the reference shows
  them as code."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Site pages whose text is a file of the repository's root.
INCLUDED = {"index.md": "README.md", "changelog.md": "CHANGELOG.md"}
_ROLE = re.compile(r":(?:func|mod|class|meth|attr|data|exc|obj):(<code>)~?")


def on_page_markdown(markdown: str, page, **kwargs) -> str:
    source = INCLUDED.get(page.file.src_uri)
    if source is None:
        return markdown
    return (ROOT / source).read_text(encoding="utf-8").replace("](docs/", "](")


def on_page_content(html: str, page, **kwargs) -> str:
    if not page.file.src_uri.startswith("reference/"):
        return html
    return _ROLE.sub(r"\1", html)
