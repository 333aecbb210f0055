"""The page at ``/``: a form that sends text or CoNLL lines to the JSON API and shows
the document view of the answer (the view ``fstcrf view`` writes, rendered by the
server into the answer's ``html``), on which a person corrects chunks, has them
decoded again under the corrections and downloads the corrected sentences.  Its files
are static, in the package's ``static`` folder: ``index.html``, ``page.css`` and the
JavaScript modules (``page.js`` imports the others), and ``view.css``, the view's own
style (:data:`fstcrf.pictures.html.STYLE`)."""

from __future__ import annotations

from importlib import resources

from fstcrf.pictures.html import STYLE

#: The content type of each static file, by suffix.
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}

#: The page's files in the package's static folder.
STATIC_FILES = ("index.html", "page.css", "page.js", "api.js", "corrections.js", "editor.js", "download.js")


def page_files() -> dict[str, tuple[bytes, str]]:
    """Each file of the page by name: (its bytes, its content type)."""
    folder = resources.files("fstcrf.serve") / "static"
    files = {name: (folder.joinpath(name).read_bytes(), _content_type(name)) for name in STATIC_FILES}
    files["view.css"] = (STYLE.encode("utf-8"), _content_type("view.css"))
    return files


def _content_type(name: str) -> str:
    return CONTENT_TYPES[name[name.rindex(".") :]]
