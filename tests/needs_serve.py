"""Imported first by a test module that needs the web stack of ``fstcrf serve``: the
module is skipped, with the reason, where the extra ``serve`` (or httpx, which the
tests talk to servers with) is not installed, except under CI's main leg (CI=true
without FSTCRF_WITHOUT_PYNINI=1), which installs it and fails without it."""

from fstcrf.extras import install_hint

from needs import import_or_skip

REASON = f"needs the web stack of fstcrf serve: {install_hint('starlette')}"

for _module in ("starlette", "uvicorn", "prometheus_client", "httpx"):
    import_or_skip(_module, REASON)
