"""Pictures read back by Graphviz itself: ``dot -Tjson`` parses the dot text the
pictures write and lays it out, giving every node and arc with its attributes and
the lines of text Graphviz draws for it.  Importing this module skips the test
module where Graphviz is missing (and fails under CI, which installs it)."""

import json
import subprocess
from dataclasses import dataclass

from needs import program_or_skip

DOT = program_or_skip("dot", "graphviz")


@dataclass
class Drawn:
    """A node or an arc as Graphviz read it: its attributes and the text it draws."""

    attributes: dict
    text: list[str]


@dataclass
class Picture:
    nodes: dict[str, Drawn]  # by node name
    clusters: dict[str, Drawn]  # the subgraphs named cluster_..., by name
    arcs: list[tuple[str, str, Drawn]]  # (tail name, head name, arc), in Graphviz's order
    title: list[str]  # the lines of the graph's caption


def drawn_text(entry: dict, key: str = "_ldraw_") -> list[str]:
    """The lines of text Graphviz draws for a graph, node or arc (its text operations)."""
    return [operation["text"] for operation in entry.get(key, []) if operation.get("op") == "T"]


def read_picture(dot_text: str) -> Picture:
    """``dot_text`` as Graphviz parses and lays it out (CalledProcessError if it cannot)."""
    result = subprocess.run([DOT, "-Tjson"], input=dot_text.encode("utf-8"), capture_output=True, check=True)
    graph = json.loads(result.stdout)
    objects = {entry["_gvid"]: entry for entry in graph.get("objects", []) if "nodes" not in entry}
    nodes = {entry["name"]: Drawn(entry, drawn_text(entry)) for entry in objects.values()}
    clusters = {
        entry["name"]: Drawn(entry, drawn_text(entry))
        for entry in graph.get("objects", [])
        if entry["name"].startswith("cluster")
    }
    arcs = [
        (objects[arc["tail"]]["name"], objects[arc["head"]]["name"], Drawn(arc, drawn_text(arc)))
        for arc in graph.get("edges", [])
    ]
    return Picture(nodes, clusters, arcs, drawn_text(graph))
