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
Extra compiler and linker flags may be given in FSTCRF_CFLAGS, e.g.
``-fsanitize=address`` for the sanitizer run described in docs/development.md.
"""
import os
import pathlib
import re

import cffi

HERE = pathlib.Path(__file__).resolve().parent
HEADER = HERE / "fstcrf_kernel.h"
FEATURES_HEADER = HERE / "fstcrf_features.h"
TRAIN_HEADER = HERE / "fstcrf_train.h"
UPDATE_HEADER = HERE / "fstcrf_update.h"
HASHING_HEADER = HERE / "fstcrf_hashing.h"
ONLINE_HEADER = HERE / "fstcrf_online.h"
SOURCES = ("fstcrf_chain.c", "fstcrf_marginals.c", "fstcrf_search.c", "fstcrf_sampling.c", "fstcrf_joint.c",
           "fstcrf_features.c", "fstcrf_train.c", "fstcrf_update.c", "fstcrf_hashing.c", "fstcrf_online.c")


def _declarations(header: pathlib.Path = HEADER) -> str:
    """The header without preprocessor lines, which cdef does not accept."""
    text = header.read_text(encoding="utf-8")
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    return "\n".join(lines) + "\n"


EXTRA_FLAGS = os.environ.get("FSTCRF_CFLAGS", "").split()

ffibuilder = cffi.FFI()
ffibuilder.cdef(_declarations() + "#define FC_OK 0\n#define FC_INFEASIBLE 1\n#define FC_BAD_ARGUMENT 2\n"
                + _declarations(FEATURES_HEADER) + _declarations(TRAIN_HEADER)
                + _declarations(UPDATE_HEADER)
                + "#define FU_CONSTANT 0\n#define FU_ADAGRAD 1\n#define FU_ADAM 2\n"
                + _declarations(HASHING_HEADER) + "#define FH_DUPLICATE 3\n#define FH_BLOCK 64\n"
                + _declarations(ONLINE_HEADER))
ffibuilder.set_source(
    "fstcrf._kernel",
    '#include "fstcrf_kernel.h"\n#include "fstcrf_features.h"\n#include "fstcrf_train.h"\n#include "fstcrf_update.h"\n#include "fstcrf_hashing.h"\n#include "fstcrf_online.h"',
    sources=[str((HERE / name).relative_to(HERE.parent)) for name in SOURCES],
    include_dirs=[str(HERE.relative_to(HERE.parent))],
    # -fopenmp-simd: honour "#pragma omp simd" (vectorised reductions) without OpenMP threads
    extra_compile_args=["-O3", "-std=c99", "-fopenmp-simd", *EXTRA_FLAGS],
    extra_link_args=EXTRA_FLAGS,
    libraries=["m"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
