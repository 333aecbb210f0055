"""The baseline of ``fstcrf bench serve``: the tagging service a python-crfsuite user
writes today, in the web framework ``fstcrf serve`` runs on (a Starlette application
run by uvicorn): ``POST /tag`` with ``{"sentences": [{"word": [...], "pos": [...]},
...]}`` builds each token's attribute strings from the same template as the fstcrf
model's predicates (:func:`fstcrf.bench.crfsuite.token_attributes`) and calls
``Tagger.tag`` once per sentence, answering ``{"results": [{"labels": [...]}, ...]}``.
Run as ``python -m fstcrf.bench.crfsuite_service SPEC MODEL [PORT]``; without a port
(or 0) it takes a free one, and it prints its URL once it listens.  It imports
neither numpy nor fstcrf's model, as such a service would not."""

from __future__ import annotations

import json
import socket
import sys

from fstcrf.bench.crfsuite import token_attributes


def make_app(spec: dict, tagger):
    """The service's application: ``spec`` as :mod:`fstcrf.bench.process` writes it, a
    pycrfsuite Tagger with its model open."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    predicates = spec["predicates"]

    async def tag(request: Request) -> JSONResponse:
        body = await request.json()
        results = [{"labels": tagger.tag(token_attributes(predicates, sentence))} for sentence in body["sentences"]]
        return JSONResponse({"results": results})

    async def live(request: Request) -> JSONResponse:
        return JSONResponse({"status": "live"})

    return Starlette(routes=[Route("/tag", tag, methods=["POST"]), Route("/live", live)])


def main(argv: list[str] | None = None) -> int:
    """Serve a CRFsuite model on 127.0.0.1:PORT (a free port when it is 0 or not given)
    until SIGTERM, after printing its URL."""
    import pycrfsuite
    import uvicorn

    spec_path, model_path, *port = argv if argv is not None else sys.argv[1:]
    with open(spec_path, encoding="utf-8") as stream:
        spec = json.load(stream)
    tagger = pycrfsuite.Tagger()
    tagger.open(model_path)
    listener = socket.create_server(("127.0.0.1", int(port[0]) if port else 0))
    print(f"crfsuite service on http://127.0.0.1:{listener.getsockname()[1]}/ (POST /tag)", flush=True)
    config = uvicorn.Config(make_app(spec, tagger), log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[listener])
    return 0


if __name__ == "__main__":
    sys.exit(main())
