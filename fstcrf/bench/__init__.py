"""The benchmarks behind ``fstcrf bench``, one module per benchmark, over a
shared :mod:`~fstcrf.bench.harness`; :mod:`~fstcrf.bench.crfsuite` is the
python-crfsuite script the whole-process benchmarks (:mod:`~fstcrf.bench.process`)
run against fstcrf.

Every comparison is measured in one run on the same data, and reported as a
ratio: the machine is shared and noisy, so absolute seconds mean little.

``from fstcrf.bench import bench_kernel`` still gives the names of the former
module ``fstcrf.bench``; each is imported on first use, so that importing a
benchmark's module (some run as fresh processes) stays light."""

from fstcrf.moved import lazy_names

#: The former module's names, with the submodule that defines each.
_NAMES = {
    **dict.fromkeys(("best_time", "tokens_per_second"), "harness"),
    **dict.fromkeys(("random_potentials", "as_dense", "KernelRow", "bench_kernel", "format_kernel"), "kernel"),
    **dict.fromkeys(
        (
            "ComposeRow",
            "COMPOSE_CASES",
            "bench_compose",
            "format_compose",
            "bench_compose_model",
            "format_compose_model",
        ),
        "compose",
    ),
    **dict.fromkeys(("hide_labels", "sentences_with_budget", "bench_partial", "format_partial"), "partial"),
    **dict.fromkeys(("bench_train", "format_train"), "in_memory"),
    **dict.fromkeys(("bench_grammar", "format_grammar"), "grammar"),
}

__all__ = sorted(_NAMES)

__getattr__, __dir__ = lazy_names(__name__, _NAMES)
