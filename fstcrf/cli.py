"""The ``fstcrf`` command line."""
from __future__ import annotations

import argparse
import sys

from .errors import FstcrfError


def _bench(args: argparse.Namespace) -> int:
    from . import bench
    if args.what == "kernel":
        print(bench.format_kernel(bench.bench_kernel(tokens=args.tokens, repeats=args.repeats, seed=args.seed)))
    elif args.what == "compose":
        print(bench.format_compose(bench.bench_compose(tokens=args.tokens, repeats=args.repeats, seed=args.seed)))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fstcrf", description="Conditional random fields as weighted FSTs.")
    commands = parser.add_subparsers(dest="command", required=True)
    bench = commands.add_parser("bench", help="measure speed against reference implementations")
    bench.add_argument("what", choices=["kernel", "compose"],
                       help="kernel: forward-backward and Viterbi throughput against numpy and pynini; "
                            "compose: factorised joint inference against the dense cross product")
    bench.add_argument("--tokens", type=int, default=100_000, help="tokens per lattice size (default 100000)")
    bench.add_argument("--repeats", type=int, default=3, help="timings are the best of this many runs")
    bench.add_argument("--seed", type=int, default=0)
    bench.set_defaults(run=_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except FstcrfError as error:
        print(f"fstcrf: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fstcrf: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
