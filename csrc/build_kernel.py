"""cffi build script (API mode) for the fstcrf C kernel.

Used by setuptools through ``cffi_modules`` in setup.py; it compiles the
dynamic programs -- csrc/fstcrf_chain.c (workspace sizing, one pass over a
sentence in each semiring), csrc/fstcrf_blocks.c (the scaled passes and edge
counts of graphs made of complete bipartite blocks, in register tiles),
csrc/fstcrf_marginals.c (forward-backward, log Z,
max-marginals), csrc/fstcrf_search.c (Viterbi, span Viterbi, k best),
csrc/fstcrf_sampling.c (exact sampling and its generator) and
csrc/fstcrf_joint.c (composed chains), which share the private header
csrc/fstcrf_internal.h, never given to cdef -- and csrc/fstcrf_features.c
(feature scoring loops), csrc/fstcrf_train.c (the training gradient, which
sequences the two), csrc/fstcrf_update.c (sparse steps of the online
learners), csrc/fstcrf_hashing.c (the hashed predicate dictionary and the
model file checksum), csrc/fstcrf_values.c (the hashed values of a batch's
template items, from the store of what each column value gives),
csrc/fstcrf_tagging.c (a batch's predicate rows, state scores and best paths in
one call), csrc/fstcrf_online.c (the rival of one sentence and its feature
difference), csrc/fstcrf_bandit.c (the bandit learner's
per-minibatch work, which sequences the others), csrc/fstcrf_conll.c (CoNLL
lines scanned into fields and written back) and csrc/fstcrf_logits.c (logits'
log-probabilities lifted to a topology's states, and their best paths, in one
call), csrc/fstcrf_chunks.c (a batch's entity probabilities and MBR candidate
chunks, each in one call) and csrc/fstcrf_mbr.c (the F1-optimal chunks among the
candidates: interval scheduling and Dinkelbach's search) into the extension module ``fstcrf._kernel``.  What
they ask of a compiler beyond C11 (SIMD pragmas, prefetching, restrict) goes
through the private header csrc/fstcrf_portable.h.
The compiler flags and libraries depend on the compiler (compiler_options,
which setup.py's build_ext asks with the compiler it uses: MSVC spells C11
/std:c11 and has no -fopenmp-simd).  Extra compiler and linker flags may be
given in FSTCRF_CFLAGS, e.g. ``-fsanitize=address`` for the sanitizer run
described in docs/development.md.
"""
import os
import pathlib
import re

import cffi

HERE = pathlib.Path(__file__).resolve().parent
# the public headers, in cdef order; fstcrf_internal.h and fstcrf_hashing_private.h are private to the C
# sources
HEADERS = tuple(HERE / name for name in ("fstcrf_kernel.h", "fstcrf_features.h", "fstcrf_train.h", "fstcrf_update.h",
                                         "fstcrf_hashing.h", "fstcrf_values.h", "fstcrf_tagging.h", "fstcrf_online.h",
                                         "fstcrf_bandit.h", "fstcrf_partner.h", "fstcrf_conll.h", "fstcrf_logits.h",
                                         "fstcrf_chunks.h", "fstcrf_mbr.h"))
SOURCES = ("fstcrf_chain.c", "fstcrf_blocks.c", "fstcrf_marginals.c", "fstcrf_search.c", "fstcrf_sampling.c",
           "fstcrf_joint.c", "fstcrf_features.c", "fstcrf_train.c", "fstcrf_update.c", "fstcrf_hashing.c",
           "fstcrf_values.c", "fstcrf_tagging.c", "fstcrf_online.c", "fstcrf_bandit.c", "fstcrf_partner.c",
           "fstcrf_conll.c", "fstcrf_logits.c", "fstcrf_chunks.c", "fstcrf_mbr.c")
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


def compiler_options(compiler_type: str) -> dict[str, list[str]]:
    """The kernel's compiler flags (C11 at full optimisation, then FSTCRF_CFLAGS)
    and libraries for a distutils compiler type ("unix", "msvc", "mingw32", ...)."""
    if compiler_type == "msvc":
        # C11 is /std:c11 (Visual Studio 2019 16.8 or later); no -fopenmp-simd, so the loops are plain
        # loops (csrc/fstcrf_portable.h); the maths functions are in the C runtime, with no libm
        return {"extra_compile_args": ["/std:c11", *EXTRA_FLAGS], "libraries": []}
    # gcc and clang, also as mingw-w64: -fopenmp-simd honours "#pragma omp simd" (vectorised reductions)
    # without OpenMP threads, and FC_OPENMP_SIMD has csrc/fstcrf_portable.h write the pragmas;
    # -fno-math-errno lets a loop with sqrt vectorise (the kernel never reads errno; results are the same)
    # mingw-w64 links WaitOnAddress, the partner thread's wait (csrc/fstcrf_portable.h), from
    # libsynchronization, where MSVC takes Synchronization.lib from a pragma
    windows = ["synchronization"] if compiler_type == "mingw32" else []
    return {"extra_compile_args": ["-O3", "-std=c11", "-fopenmp-simd", "-fno-math-errno", "-DFC_OPENMP_SIMD",
                                   *EXTRA_FLAGS],
            "libraries": ["m", *windows]}


ffibuilder = cffi.FFI()
ffibuilder.cdef("".join(_declarations(header) for header in HEADERS))
ffibuilder.set_source(
    "fstcrf._kernel",
    "\n".join(f'#include "{header.name}"' for header in HEADERS),
    sources=[str((HERE / name).relative_to(HERE.parent)) for name in SOURCES],
    include_dirs=[str(HERE.relative_to(HERE.parent))],
    extra_link_args=EXTRA_FLAGS,
    # for the platform's default compiler; setup.py's build_ext gives those of the compiler it uses
    **compiler_options("msvc" if os.name == "nt" else "unix"),
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
