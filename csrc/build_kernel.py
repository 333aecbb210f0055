"""cffi build script (API mode) for the fstcrf C kernel.

Used by setuptools through ``cffi_modules`` in setup.py; it compiles the
dynamic programs -- csrc/fstcrf_chain.c (workspace sizing, one pass over a
sentence in each semiring), csrc/fstcrf_marginals.c (forward-backward, log Z,
max-marginals), csrc/fstcrf_search.c (Viterbi, span Viterbi, k best),
csrc/fstcrf_sampling.c (exact sampling and its generator) and
csrc/fstcrf_joint.c (composed chains), which share the private header
csrc/fstcrf_internal.h, never given to cdef -- and csrc/fstcrf_features.c
(feature scoring loops), csrc/fstcrf_train.c (the training gradient, which
sequences the two), csrc/fstcrf_update.c (sparse steps of the online
learners), csrc/fstcrf_hashing.c (the hashed predicate dictionary and the
model file checksum) and csrc/fstcrf_online.c (the rival of one sentence and
its feature difference) into the extension module ``fstcrf._kernel``.
csrc/fstcrf_portable.h, also private, spells what MSVC (the compiler of the
Windows wheel) spells differently.
Extra compiler and linker flags may be given in FSTCRF_CFLAGS, e.g.
``-fsanitize=address`` for the sanitizer run described in docs/development.md.
"""
import os
import pathlib
import re
import sys

import cffi

HERE = pathlib.Path(__file__).resolve().parent
# the public headers, in cdef order; fstcrf_internal.h is private to the C sources
HEADERS = tuple(HERE / name for name in ("fstcrf_kernel.h", "fstcrf_features.h", "fstcrf_train.h", "fstcrf_update.h",
                                         "fstcrf_hashing.h", "fstcrf_online.h"))
SOURCES = ("fstcrf_chain.c", "fstcrf_marginals.c", "fstcrf_search.c", "fstcrf_sampling.c", "fstcrf_joint.c",
           "fstcrf_features.c", "fstcrf_train.c", "fstcrf_update.c", "fstcrf_hashing.c", "fstcrf_online.c")
# "#define NAME <integer>", a constant the Python side may read (FC_OK, FU_ADAM, FH_BLOCK, ...)
INTEGER_DEFINE = re.compile(r"#\s*define\s+([A-Za-z_]\w*)\s+-?\d+\s*")


def _declarations(header: pathlib.Path) -> str:
    """The header as cdef takes it: each integer #define as "#define NAME ...",
    whose value cffi reads from the compiled header, so that it is written
    only there; every other preprocessor line dropped, which cdef does not
    accept."""
    text = header.read_text(encoding="utf-8")
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    lines = []
    for line in text.splitlines():
        if not line.lstrip().startswith("#"):
            lines.append(line)
        elif match := INTEGER_DEFINE.fullmatch(line.strip()):
            lines.append(f"#define {match.group(1)} ...")
    return "\n".join(lines) + "\n"


EXTRA_FLAGS = os.environ.get("FSTCRF_CFLAGS", "").split()
if sys.platform == "win32":
    # MSVC, as setuptools calls it on Windows: its own optimisation flag, no -std (its C takes these sources
    # as they are, see fstcrf_portable.h), "#pragma omp simd" left unvectorised, and the maths in the C
    # runtime rather than a libm
    COMPILE_FLAGS, LIBRARIES = ["/O2"], []
else:
    # -fopenmp-simd: honour "#pragma omp simd" (vectorised reductions) without OpenMP threads
    COMPILE_FLAGS, LIBRARIES = ["-O3", "-std=c99", "-fopenmp-simd"], ["m"]

ffibuilder = cffi.FFI()
ffibuilder.cdef("".join(_declarations(header) for header in HEADERS))
ffibuilder.set_source(
    "fstcrf._kernel",
    "\n".join(f'#include "{header.name}"' for header in HEADERS),
    sources=[str((HERE / name).relative_to(HERE.parent)) for name in SOURCES],
    include_dirs=[str(HERE.relative_to(HERE.parent))],
    extra_compile_args=[*COMPILE_FLAGS, *EXTRA_FLAGS],
    extra_link_args=EXTRA_FLAGS,
    libraries=LIBRARIES,
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
