"""Structural checks of a scenario graph, each problem naming its node or edge."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

__all__ = ["graph_problems"]


def _cycle_from(
    start: str, outbound: dict[str, list[str]], state: dict[str, int], stack: list[str]
) -> list[str] | None:
    """A cycle reachable from ``start`` as the list of its nodes (depth-first,
    iterative so a long chain cannot exhaust Python's recursion limit)."""
    work: list[tuple[str, int]] = [(start, 0)]
    while work:
        node, index = work.pop()
        if index == 0:
            state[node] = 1  # on the current path
            stack.append(node)
        targets = outbound.get(node, [])
        if index < len(targets):
            work.append((node, index + 1))
            nxt = targets[index]
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :]
            if state.get(nxt, 0) == 0:
                work.append((nxt, 0))
        else:
            state[node] = 2
            stack.pop()
    return None


def graph_problems(
    node_ids: Sequence[str],
    edges: Sequence[tuple[str, str, str]],
    entry: str,
    *,
    has_turn_limit: bool,
    end: str,
) -> list[str]:
    """Every structural problem of a graph, as messages naming the node or edge.

    Args:
        node_ids: Node ids in definition order.
        edges: ``(source, target, label)`` per edge.
        entry: The entry node id.
        has_turn_limit: Whether the scenario bounds its turns (cycles allowed).
        end: The id of the terminal pseudo-node.
    """
    problems: list[str] = []
    known = set(node_ids)
    for node_id, count in Counter(node_ids).items():
        if count > 1:
            problems.append(f"node id {node_id!r} is used by {count} nodes")
    if end in known:
        problems.append(f"node id {end!r} is reserved for the end of a run")
    if entry not in known:
        problems.append(f"entry node {entry!r} is not a node (nodes: {sorted(known)})")
    outbound: dict[str, list[str]] = defaultdict(list)
    for source, target, label in edges:
        if source not in known:
            problems.append(f"edge {label}: source {source!r} is not a node")
        if target != end and target not in known:
            problems.append(f"edge {label}: target {target!r} is not a node or END")
        if source in known and target in known:
            outbound[source].append(target)
    if entry in known:
        reachable = {entry}
        todo = [entry]
        while todo:
            for target in outbound.get(todo.pop(), []):
                if target not in reachable:
                    reachable.add(target)
                    todo.append(target)
        for node_id in node_ids:
            if node_id not in reachable:
                problems.append(f"node {node_id!r} is unreachable from the entry node {entry!r}")
    if not has_turn_limit:
        state: dict[str, int] = {}
        for node_id in node_ids:
            if state.get(node_id, 0) == 0:
                cycle = _cycle_from(node_id, outbound, state, [])
                if cycle is not None:
                    loop = " -> ".join([*cycle, cycle[0]])
                    problems.append(f"cycle {loop} needs a turn limit (set max_turns)")
                    break
    return problems
