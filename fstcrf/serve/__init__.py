"""``fstcrf serve``: models behind an HTTP JSON API and a page, with dynamic batching
(needs the extra ``serve``: Starlette, uvicorn and prometheus-client, which only this
package imports).  Its modules: :mod:`~fstcrf.serve.settings` (limits and defaults),
:mod:`~fstcrf.serve.registry` (the models by name, reloaded when their files change),
:mod:`~fstcrf.serve.tokenizer` (text to sentences), :mod:`~fstcrf.serve.parsing` (a
request's body checked), :mod:`~fstcrf.serve.answers` (a batch of requests decoded),
:mod:`~fstcrf.serve.batching` (the dynamic batcher), :mod:`~fstcrf.serve.metrics`,
:mod:`~fstcrf.serve.page`, :mod:`~fstcrf.serve.app` (routes, errors) and
:mod:`~fstcrf.serve.server` (the process and its signals)."""
